"""world(): the launcher's variables read into one value; a malformed one is an error naming it."""

from __future__ import annotations

import pytest

from caldera.elastic import ElasticEnvError, World, world


def test_no_variables_is_a_world_of_one() -> None:
    assert world({}) == World(
        rank=0, local_rank=0, world_size=1, local_world_size=1, restart_count=0, round=0, run_id=""
    )


def test_the_launchers_variables_are_read() -> None:
    env = {
        "RANK": "4",
        "LOCAL_RANK": "1",
        "WORLD_SIZE": "6",
        "LOCAL_WORLD_SIZE": "2",
        "TORCHELASTIC_RESTART_COUNT": "3",
        "TORCHELASTIC_RUN_ID": "job-7",
        "CALDERA_ELASTIC_ROUND": "5",
    }
    here = world(env)
    assert here == World(
        rank=4, local_rank=1, world_size=6, local_world_size=2, restart_count=3, round=5, run_id="job-7"
    )
    assert here.is_restart


def test_the_round_is_the_restart_count_when_the_launcher_does_not_say() -> None:
    here = world({"RANK": "0", "WORLD_SIZE": "2", "TORCHELASTIC_RESTART_COUNT": "2"})
    assert (here.restart_count, here.round, here.is_restart) == (2, 2, True)


def test_os_environ_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "3")
    assert (world().rank, world().world_size) == (1, 3)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"RANK": "one"}, "RANK='one' is not an integer"),
        ({"WORLD_SIZE": "-2"}, "WORLD_SIZE=-2 must not be negative"),
        ({"WORLD_SIZE": "0"}, "WORLD_SIZE=0 must be at least 1"),
        ({"RANK": "3", "WORLD_SIZE": "3"}, "RANK=3 is outside WORLD_SIZE=3 (ranks are 0..2)"),
        ({"WORLD_SIZE": "4", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "2"}, "LOCAL_RANK=2 is outside LOCAL_WORLD_SIZE=2"),
        ({"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "4"}, "LOCAL_WORLD_SIZE=4 is larger than WORLD_SIZE=2"),
        ({"TORCHELASTIC_RESTART_COUNT": "1.5"}, "TORCHELASTIC_RESTART_COUNT='1.5' is not an integer"),
    ],
    ids=[
        "rank-not-int",
        "negative-world",
        "zero-world",
        "rank-outside",
        "local-rank-outside",
        "local-too-big",
        "restart",
    ],
)
def test_a_malformed_variable_is_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(ElasticEnvError) as caught:
        world(env)
    assert str(caught.value) == message
