"""schemathesis against the daemon's own OpenAPI schema, over real HTTP: no server error, answers as the schema says.

Every operation of /openapi.json gets examples generated from its schema (valid and not:
schemathesis' positive and negative modes) and sent to a real embedded cluster behind real
HTTP with the token. Each answer must be below 500, one JSON line when it is an error (no
traceback), and conform to the schema (status codes, content types, bodies); afterwards the
daemon still answers and its store agrees with its plane (`CALDERA_VERIFY_STORE`, on in the
tests, compared every write) and passes SQLite's integrity check.

Left out: POST /shutdown (it stops the daemon under test) and the watch streams (they hold a
request open for as long as the generated `timeout` asks). CALDERA_FUZZ_EXAMPLES sets the
examples per operation (default 10 in `make test`).
"""

from __future__ import annotations

import os
import sqlite3

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode, checks

from caldera.system.daemon import EmbeddedCluster
from server.helpers import AUTH, LiveServer

EXAMPLES = int(os.environ.get("CALDERA_FUZZ_EXAMPLES", "10"))
# Two checks judge the request schemas, not the answers. The schemas say "an object" where the daemon checks a
# whole Volcano manifest (admission): a body the schema allows may still be refused (422, naming the field). And a
# query parameter that takes a list (`?object=a&object=b`) takes one value as a list of one, which schemathesis
# counts as invalid data accepted.
LOOSER = [checks.positive_data_acceptance, checks.negative_data_rejection]
answered: dict[int, int] = {}  # status → how many, printed at the end


def operations(live: LiveServer) -> list[schemathesis.APIOperation]:
    schema = schemathesis.openapi.from_url(f"{live.url}/openapi.json", headers=AUTH)
    found = [result.ok() for result in schema.get_all_operations()]
    return [op for op in found if op.path != "/shutdown" and "/watch" not in op.path]


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"])
def test_every_operation_answers_as_its_schema_says_and_never_500(live: LiveServer, mode: GenerationMode) -> None:
    ops = operations(live)
    assert len(ops) >= 25, [op.label for op in ops]  # the whole API, not a schema that failed to load
    for op in ops:

        @given(case=op.as_strategy(generation_mode=mode))
        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def one(case: schemathesis.Case) -> None:
            response = case.call_and_validate(base_url=live.url, headers=AUTH, timeout=30, excluded_checks=LOOSER)
            answered[response.status_code] = answered.get(response.status_code, 0) + 1
            if response.status_code >= 400 and response.headers.get("content-type", [""])[0].startswith(
                "application/json"
            ):
                error = response.json().get("error", "")
                assert "\n" not in error and "Traceback" not in error, response.text

        try:
            one()
        except Unsatisfiable:  # nothing in the operation can be made invalid (no parameter, no body)
            assert mode is GenerationMode.NEGATIVE, op.label
        except Exception as e:
            raise AssertionError(f"{op.label} ({mode.value}): {e}") from e


def test_after_the_fuzzing_the_daemon_answers_and_its_state_is_whole(
    live: LiveServer, cluster: EmbeddedCluster
) -> None:
    print(f"\nschemathesis answers by status: {dict(sorted(answered.items()))}")
    with httpx.Client(base_url=live.url, headers=AUTH, timeout=30) as client:
        assert client.get("/info").status_code == 200
        assert client.get("/apis/batch.volcano.sh/v1alpha1/jobs").status_code == 200
    assert cluster.state.mismatches == []
    db = sqlite3.connect(f"file:{cluster.home / 'state.db'}?mode=ro", uri=True)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        db.close()
