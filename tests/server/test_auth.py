"""Every route needs the bearer token: none or a wrong one is 401 with a one-line JSON error."""

from __future__ import annotations

import httpx
import pytest

from caldera.server import create_app
from caldera.testing.fake_cluster import FakeCluster

from .helpers import HTTP_TIMEOUT, JOBS, QUEUES, TOKEN, LiveServer, job_manifest

ROUTES = [
    pytest.param("GET", "/openapi.json", id="openapi"),
    pytest.param("GET", "/info", id="info"),
    pytest.param("POST", "/shutdown", id="shutdown"),
    pytest.param("GET", f"{JOBS}/jobs", id="jobs-all"),
    pytest.param("GET", f"{JOBS}/namespaces/default/jobs", id="jobs-list"),
    pytest.param("POST", f"{JOBS}/namespaces/default/jobs", id="jobs-create"),
    pytest.param("GET", f"{JOBS}/namespaces/default/jobs/train", id="job-get"),
    pytest.param("GET", f"{JOBS}/namespaces/default/jobs/train/describe", id="job-describe"),
    pytest.param("DELETE", f"{JOBS}/namespaces/default/jobs/train", id="job-delete"),
    pytest.param("POST", f"{JOBS}/namespaces/default/jobs/train/commands", id="job-command"),
    pytest.param("POST", f"{JOBS}/namespaces/default/jobs/train/scale", id="job-scale"),
    pytest.param("GET", f"{JOBS}/watch/jobs", id="watch-jobs"),
    pytest.param("GET", "/api/v1/watch/namespaces/default/pods", id="watch-pods"),
    pytest.param("GET", "/api/v1/watch", id="watch"),
    pytest.param("GET", QUEUES, id="queues-list"),
    pytest.param("POST", QUEUES, id="queues-create"),
    pytest.param("GET", f"{QUEUES}/default", id="queue-get"),
    pytest.param("PUT", f"{QUEUES}/default/state", id="queue-state"),
    pytest.param("DELETE", f"{QUEUES}/default", id="queue-delete"),
    pytest.param("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", id="priorityclass"),
    pytest.param("GET", "/api/v1/nodes", id="nodes"),
    pytest.param("GET", "/api/v1/events", id="events-all"),
    pytest.param("GET", "/api/v1/namespaces/default/events", id="events"),
    pytest.param("GET", "/api/v1/namespaces/default/pods/train-master-0/log", id="pod-log"),
    pytest.param("GET", "/api/v1/namespaces/default/pods/train-master-0/logfile", id="pod-logfile"),
    pytest.param("GET", "/no/such/route", id="unknown-route"),
]

BAD_HEADERS = [
    pytest.param({}, id="no-header"),
    pytest.param({"Authorization": "Bearer wrong"}, id="wrong-token"),
    pytest.param({"Authorization": f"Bearer {TOKEN}x"}, id="token-prefix"),
    pytest.param({"Authorization": TOKEN}, id="no-bearer-scheme"),
    pytest.param({"Authorization": f"Basic {TOKEN}"}, id="basic-scheme"),
]


@pytest.mark.parametrize("headers", BAD_HEADERS)
@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_refused_without_the_right_token(
    anonymous: httpx.Client, fake: FakeCluster, method: str, path: str, headers: dict[str, str]
) -> None:
    fake.apply(job_manifest())
    r = anonymous.request(method, path, headers=headers, json={})
    assert r.status_code == 401
    assert r.json() == {"error": "not authorised: wrong or missing token", "reason": "Unauthorized"}
    assert r.headers["www-authenticate"] == "Bearer"
    # nothing was done on the refused request's behalf
    assert fake.shutdowns == [] and fake.commands == [] and ("default", "train") in fake.jobs


def test_refused_over_real_http(live: LiveServer) -> None:
    for headers in ({}, {"Authorization": "Bearer nope"}):
        r = httpx.get(f"{live.url}/openapi.json", headers=headers, timeout=HTTP_TIMEOUT)
        assert r.status_code == 401 and r.json()["error"] == "not authorised: wrong or missing token"
    ok = httpx.get(f"{live.url}/openapi.json", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=HTTP_TIMEOUT)
    assert ok.status_code == 200 and f"{JOBS}/namespaces/{{namespace}}/jobs" in ok.json()["paths"]


def test_an_empty_token_is_refused_at_construction(fake: FakeCluster) -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        create_app(fake, "")
