"""Core Events (`v1 Event`) written by one thread, so `kubectl describe` tells what caldera did.

`EventRecorder.record(...)` only queues: the controller's loop never waits for an event to be
written. Like client-go's broadcaster, events are best effort: when more than `capacity` wait
(a burst of thousands of bindings), new ones are dropped and counted, and a failed write is
logged and dropped, never retried in a loop.

Events come after the work they tell of: while `busy()` says the controller is writing pods (a burst), the
recorder writes at most one event every `busy_interval` seconds, and the rest once the burst is over, so the API
server's attention goes to bindings first (a burst of 1,000 single-pod jobs is 2,000 events: as many requests
as its pods and PodGroups). None is lost for it: they wait in the queue (bounded by `capacity`).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

from caldera.backends.kube.client import JSON, KubeClient, KubeError, resource_path
from caldera.backends.kube.convert import to_time
from caldera.utils.clock import SystemClock

log = logging.getLogger("caldera.kube.events")
POLL = 0.02  # seconds between two looks at whether the controller is still busy, while an event waits


@dataclass(frozen=True, slots=True)
class ObjectRef:
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""

    def to_dict(self) -> JSON:
        out: JSON = {"apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace, "name": self.name}
        if self.uid:
            out["uid"] = self.uid
        return out


class EventRecorder:
    def __init__(
        self,
        kube: KubeClient,
        component: str,
        host: str,
        *,
        capacity: int = 50_000,
        busy: Callable[[], bool] | None = None,
        busy_interval: float = 0.05,
    ) -> None:
        self.kube = kube
        self.component = component
        self.host = host
        self.dropped = 0
        self.written = 0
        self._queue: queue.Queue[JSON | None] = queue.Queue(maxsize=capacity)
        self._count = 0
        self._busy = busy
        self._busy_interval = busy_interval
        self._closing = threading.Event()
        self._clock = SystemClock()
        self._thread = threading.Thread(target=self._run, name="event recorder", daemon=True)
        self._thread.start()

    def record(self, ref: ObjectRef, reason: str, message: str, now: float, *, warning: bool = False) -> None:
        self._count += 1
        stamp = to_time(now)
        event: JSON = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{ref.name}.{int(now * 1e6):x}{self._count:x}", "namespace": ref.namespace},
            "involvedObject": ref.to_dict(),
            "reason": reason,
            "message": message,
            "type": "Warning" if warning else "Normal",
            "source": {"component": self.component, "host": self.host},
            "reportingComponent": self.component,
            "reportingInstance": self.host,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self.dropped += 1

    @property
    def idle(self) -> bool:
        """Every event recorded so far was written (or dropped)."""
        return self._queue.unfinished_tasks == 0

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued (for at most `timeout` seconds, not paced any more), then stop."""
        self._closing.set()
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            event = self._queue.get()
            if event is None:
                return
            self._pace()
            namespace = event["metadata"]["namespace"] or "default"
            try:
                self.kube.create(resource_path("v1", "events", namespace=namespace), event)
                self.written += 1
            except KubeError as e:
                log.debug("event %s/%s not written: %s", namespace, event["reason"], e)
            finally:
                self._queue.task_done()

    def _pace(self) -> None:
        """While the controller is busy, wait until `busy_interval` passed (or it is not busy any more)."""
        if self._busy is None:
            return
        deadline = self._clock.monotonic() + self._busy_interval
        while not self._closing.is_set() and self._busy():
            left = deadline - self._clock.monotonic()
            if left <= 0:
                return
            self._closing.wait(min(left, POLL))
