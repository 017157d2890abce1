"""The watch cache's logic, with a scripted client: the list, the watch, bookmarks, a relist on 410 Gone.

(The real thing against a real API server, a real 410 included, is in tests/kube.)"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from caldera.backends.kube.client import Gone, Unreachable
from caldera.backends.kube.informer import Informer
from caldera.testing.waiting import wait_until


def obj(name: str, version: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": version}}


class ScriptedClient:
    """Lists and watches played from a script; after the script, watches block until the test ends."""

    def __init__(self, lists: list[tuple[list[dict[str, object]], str]], watches: list[object]) -> None:
        self.lists = lists
        self.watches = watches
        self.watched_from: list[str | None] = []
        self.listed_at: list[str | None] = []  # the resourceVersion each list asked for
        self.done = threading.Event()

    def list_all(
        self, path: str, *, resource_version: str | None = None, **_: object
    ) -> tuple[list[dict[str, object]], str]:
        self.listed_at.append(resource_version)
        return self.lists.pop(0)

    def watch(
        self, path: str, *, resource_version: str | None = None, **_: object
    ) -> Iterator[tuple[str, dict[str, object]]]:
        self.watched_from.append(resource_version)
        step = self.watches.pop(0) if self.watches else None
        if step is None:
            self.done.wait(30)
            return
        if isinstance(step, Exception):
            raise step
        yield from step  # type: ignore[misc]


def run(client: ScriptedClient, until: int) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    cond = threading.Condition()

    def deliver(kind: str, o: dict[str, object]) -> None:
        with cond:
            seen.append((kind, f"{o['metadata']['name']}@{o['metadata']['resourceVersion']}"))  # type: ignore[index]
            cond.notify_all()

    informer = Informer(client, "/api/v1/pods", deliver, max_backoff=0.01).start()  # type: ignore[arg-type]
    try:
        wait_until(lambda: len(seen) >= until, 10, f"{until} deliveries", condition=cond)
    finally:
        informer.stop()
        client.done.set()
        informer.join(10)
    return seen


def test_list_then_watch_from_the_lists_version_bookmarks_only_move_it():
    bookmark = {"metadata": {"resourceVersion": "7"}}
    client = ScriptedClient(
        [([obj("a", "1")], "5")],
        [[("BOOKMARK", bookmark), ("MODIFIED", obj("a", "8"))], None],
    )
    assert run(client, 2) == [("ADDED", "a@1"), ("MODIFIED", "a@8")]
    assert client.watched_from[:2] == ["5", "8"]


def test_a_410_lists_again_and_hands_on_only_the_difference():
    client = ScriptedClient(
        [([obj("a", "1"), obj("b", "2")], "5"), ([obj("a", "1"), obj("c", "9")], "10")],
        [Gone(410, "Expired", "too old"), None],
    )
    seen = run(client, 4)
    assert seen == [("ADDED", "a@1"), ("ADDED", "b@2"), ("ADDED", "c@9"), ("DELETED", "b@2")]
    assert client.watched_from[-1] == "10"
    # The first list from the watch cache (any recent version); the relist a consistent read, never older.
    assert client.listed_at == ["0", None]


def test_a_broken_watch_is_opened_again_from_the_last_version():
    client = ScriptedClient(
        [([], "5")],
        [[("ADDED", obj("a", "6"))], Unreachable("silent for 90s"), [("MODIFIED", obj("a", "7"))], None],
    )
    assert run(client, 2) == [("ADDED", "a@6"), ("MODIFIED", "a@7")]
    assert client.watched_from[:3] == ["5", "6", "6"]


def test_a_list_only_informer_lists_and_ends_without_watching():
    client = ScriptedClient([([obj("a", "1"), obj("b", "2")], "5")], [])
    seen: list[str] = []
    synced = threading.Event()
    informer = Informer(
        client,  # type: ignore[arg-type]
        "/apis/scheduling.volcano.sh/v1beta1/podgroups",
        lambda kind, o: seen.append(f"{kind} {o['metadata']['name']}"),  # type: ignore[index]
        on_synced=synced.set,
        watch=False,
    ).start()
    informer.join(10)
    client.done.set()
    assert synced.is_set() and seen == ["ADDED a", "ADDED b"]
    assert client.watched_from == []  # never watched
    assert informer.objects.keys() == {"ns/a", "ns/b"}
