"""Builders, constants and a real HTTP server in a thread, shared by the API tests."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn
from fastapi import FastAPI

TOKEN = "s3cret-token"
# What a test waits for one answer: generous, for a loaded 2-core machine (httpx alone waits 5 s).
HTTP_TIMEOUT = 60.0
AUTH = {"Authorization": f"Bearer {TOKEN}"}
JOBS = "/apis/batch.volcano.sh/v1alpha1"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"


def job_manifest(name: str = "train", *, workers: int = 2, queue: str | None = None, **meta: str) -> dict[str, object]:
    def task(task_name: str, replicas: int, gpus: int = 0) -> dict[str, object]:
        resources = {"requests": {"cpu": "1", "memory": "1Gi", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}}
        container = {"name": "main", "image": "none", "command": ["python", "train.py"], "resources": resources}
        return {"name": task_name, "replicas": replicas, "template": {"spec": {"containers": [container]}}}

    spec: dict[str, object] = {"tasks": [task("master", 1, 1), task("worker", workers, 1)]}
    if queue:
        spec["queue"] = queue
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, **meta}, "spec": spec}


def queue_manifest(name: str, **spec: object) -> dict[str, object]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


@dataclass
class LiveServer:
    url: str
    server: uvicorn.Server
    thread: threading.Thread


@contextmanager
def serve(app: FastAPI) -> Iterator[LiveServer]:
    """`app` served by uvicorn on 127.0.0.1, a free port, in a thread (real HTTP).

    The socket listens before the thread starts, so requests wait in its backlog: no
    start-up race to poll for. On exit the server must really stop: a log stream left
    running after its client went away would keep it (and this check) waiting."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False, lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield LiveServer(f"http://127.0.0.1:{sock.getsockname()[1]}", server, thread)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        assert not thread.is_alive(), "the server did not stop"
