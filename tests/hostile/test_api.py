"""Hostile requests to a real daemon over real HTTP: each refused with one clear error, the daemon up, its state unchanged.

(The `api` fixture checks the last two after every test: /info still answers and the store's
version has not moved.)
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterable
from typing import Any

import httpx
import pytest

from caldera.server.limits import MAX_BODY
from caldera.system.admission import MAX_PODS_PER_JOB
from server.helpers import TOKEN, LiveServer

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"


def job(name: str = "ok", *, replicas: int = 1, cpu: str = "100m", **extra: Any) -> dict[str, Any]:
    container = {"name": "main", "command": ["true"], "resources": {"requests": {"cpu": cpu}}}
    task = {"name": "worker", "replicas": replicas, "template": {"spec": {"containers": [container]}}}
    spec = {"tasks": [task], **extra}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name}, "spec": spec}


def refused(r: httpx.Response, status: int, *words: str) -> None:
    assert r.status_code == status, r.text
    body = r.json()
    assert "\n" not in body["error"] and "Traceback" not in body["error"], body
    for word in words:
        assert word in body["error"], body


@pytest.mark.parametrize(
    "name",
    ["a/b", "..", "a\0b", "x" * 300, "UPPER", "-lead"],
    ids=["slash", "dotdot", "nul", "300-chars", "upper", "dash"],
)
def test_a_bad_name_is_refused(api: httpx.Client, name: str) -> None:
    refused(api.post(JOBS, json=job(name)), 422, "metadata.name")


def raw_post(api: httpx.Client, headers: dict[str, str], body: Iterable[bytes]) -> tuple[int, dict[str, str], bytes]:
    """POST to the jobs endpoint over a plain socket, sending only `body`'s parts (and never more), then read
    the answer until the server closes the connection (a deadline, not a sleep: the socket's timeout).

    httpx would send a whole oversized body whatever the server said: a server that refuses it unread and
    closes its connection then makes TCP reset the connection while the client still sends, which can drop
    the answer before the client reads it (what a client sending everything regardless gets, and once made
    this test fail). Sending only what it takes to be refused tests what the server promises."""
    url = httpx.URL(str(api.base_url))
    head = [f"POST {JOBS} HTTP/1.1", f"Host: {url.host}:{url.port}", f"Authorization: {api.headers['authorization']}"]
    head += [f"{k}: {v}" for k, v in {"Content-Type": "application/json", **headers}.items()]
    with socket.create_connection((url.host, url.port or 80), timeout=30) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        for part in body:
            sock.sendall(part)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    raw_headers, _, payload = rest.partition(b"\r\n\r\n")
    fields = dict(line.decode().split(": ", 1) for line in raw_headers.split(b"\r\n") if line)
    return int(status_line.split()[1]), {k.lower(): v for k, v in fields.items()}, payload


def test_a_body_over_the_limit_is_refused_unread(api: httpx.Client) -> None:
    """The length is over the limit: the answer comes with no byte of the body sent (it would wait otherwise)."""
    status, headers, payload = raw_post(api, {"Content-Length": str(MAX_BODY + 2)}, [])
    assert status == 413, payload
    assert headers["connection"] == "close"
    assert "over the limit" in json.loads(payload)["error"]


def test_a_chunked_body_over_the_limit_is_cut_off(api: httpx.Client) -> None:
    """No length: the server reads until the body passes the limit, then answers. The client stops there: the
    opening 9 bytes and MAX_BODY in 64 KiB chunks pass it by 9 bytes, and nothing is left unread."""
    parts = [b'{"pad": "'] + [b"x" * 65536] * (MAX_BODY // 65536)
    chunked = [b"%x\r\n%s\r\n" % (len(p), p) for p in parts]  # never the last chunk: the body does not end
    status, headers, payload = raw_post(api, {"Transfer-Encoding": "chunked"}, chunked)
    assert status == 413, payload
    assert headers["connection"] == "close"
    assert "over the limit" in json.loads(payload)["error"]


def test_nesting_ten_thousand_deep_is_refused(api: httpx.Client) -> None:
    deep = "[" * 10_000 + "]" * 10_000
    r = api.post(JOBS, content=deep, headers={"content-type": "application/json"})
    assert r.status_code in (400, 422), r.text


def test_a_million_replicas_are_refused(api: httpx.Client) -> None:
    refused(api.post(JOBS, json=job("big", replicas=1_000_000)), 422, "spec.tasks[0].replicas", str(MAX_PODS_PER_JOB))


@pytest.mark.parametrize("cpu", ["-1", "-100m", "abc", "1e400"], ids=["negative", "negative-milli", "word", "huge"])
def test_a_bad_resource_is_refused(api: httpx.Client, cpu: str) -> None:
    refused(api.post(JOBS, json=job("res", cpu=cpu)), 422, "resources.requests.cpu")


def test_an_unknown_field_is_refused(api: httpx.Client) -> None:
    refused(api.post(JOBS, json=job("unk", bogus=1)), 422, "spec.bogus", "unknown field")


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}],
    ids=["none", "wrong", "not-bearer"],
)
def test_without_the_token_nothing_is_answered(live: LiveServer, api: httpx.Client, headers: dict[str, str]) -> None:
    r = httpx.post(live.url + JOBS, json=job("anon"), headers=headers, timeout=30)
    refused(r, 401, "not authorised")


def test_a_token_in_the_query_string_is_refused(live: LiveServer, api: httpx.Client) -> None:
    r = httpx.post(f"{live.url}{JOBS}?token={TOKEN}", json=job("query"), timeout=30)
    refused(r, 401, "not authorised")


@pytest.mark.parametrize(
    "path",
    [
        "/apis/batch.volcano.sh/v1alpha1/namespaces/..%2Fother/jobs/x",
        "/apis/batch.volcano.sh/v1alpha1/namespaces/default%2F..%2Fother/jobs/x",
        "/api/v1/namespaces/../other/pods/x/log",
        "/api/v1/namespaces/other/pods/..%2F..%2Fdefault%2Fx/log",
    ],
    ids=["encoded-dotdot", "encoded-slash", "dotdot", "pod-dotdot"],
)
def test_a_crafted_path_reaches_no_other_namespace(api: httpx.Client, path: str) -> None:
    r = api.get(path)
    assert r.status_code in (404, 422), r.text
    assert r.json()["reason"] in ("NotFound", "Invalid"), r.text
