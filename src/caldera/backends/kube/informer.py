"""A list-then-watch cache of one kind of object, kept current by one thread.

`Informer(kube, path, deliver)` lists the collection (page by page), hands every object to
`deliver("ADDED", obj)`, then watches from the list's resourceVersion: each change is handed
on as it arrives (ADDED, MODIFIED, DELETED). Bookmarks only move the version on. A watch the
server ends (`timeoutSeconds`) is opened again from the last version; a 410 Gone (the version
was compacted away) lists again and hands on the difference with what was known (objects that
vanished meanwhile as DELETED, changed ones as MODIFIED), so a consumer sees every object's last
state exactly as if it had watched all along. A connection silent for longer than `read_timeout`
(no event, not even a bookmark) counts as broken: it is opened again after a back-off. With
`watch=False` it only lists (until a list succeeds) and ends: for a kind read once at start, whose
changes afterwards are only the consumer's own writes (not worth parsing again).

Invariants: `deliver` is called from this informer's thread only, in the API server's order for
each object; `objects` holds the last state of every object that was delivered and not deleted;
`synced` is set (and `on_synced` called) once a list has been delivered; a relist never goes back in time.
Errors never end the thread: they are
logged and retried with a back-off (at most `max_backoff` seconds) until `stop()`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from caldera.backends.kube.client import JSON, Gone, KubeClient, KubeError

log = logging.getLogger("caldera.kube.informer")
Deliver = Callable[[str, JSON], None]


def object_key(obj: JSON) -> str:
    """`namespace/name`, or `name` for a cluster-scoped object."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name', '')}" if ns else str(meta.get("name", ""))


class Informer:
    def __init__(
        self,
        kube: KubeClient,
        path: str,
        deliver: Deliver,
        *,
        name: str = "",
        timeout_seconds: int = 300,
        read_timeout: float = 90.0,
        max_backoff: float = 10.0,
        label_selector: str | None = None,
        on_synced: Callable[[], None] | None = None,
        watch: bool = True,
    ) -> None:
        self.kube = kube
        self.path = path
        self.name = name or path
        self._deliver = deliver
        self._timeout_seconds = timeout_seconds
        self._read_timeout = read_timeout
        self._max_backoff = max_backoff
        self._label_selector = label_selector
        self._on_synced = on_synced
        self._keep_watching = watch
        self.objects: dict[str, JSON] = {}
        self.version = ""
        self.synced = threading.Event()
        self.relists = 0  # lists after the first (a 410, or a failed watch that could not resume)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Informer:
        self._thread = threading.Thread(target=self._run, name=f"informer {self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    # ------------------------------------------------------------ the loop

    def _run(self) -> None:
        backoff = 0.0
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                if not self._keep_watching:
                    return
                self._watch()
                backoff = 0.0
            except Gone:
                log.info("%s: resourceVersion %s is gone; listing again", self.name, self.version)
                need_list = True
                self.relists += 1
            except KubeError as e:
                backoff = min(self._max_backoff, max(0.2, backoff * 2))
                log.warning("%s: %s; again in %.1fs", self.name, e, backoff)
                self._stop.wait(backoff)
            except Exception:  # a consumer's bug must not end the cache: say it, then go on
                log.exception("%s: delivering an event failed", self.name)
                backoff = min(self._max_backoff, max(0.2, backoff * 2))
                self._stop.wait(backoff)

    def _list(self) -> None:
        # The first list from the API server's watch cache (resourceVersion 0, as client-go's reflectors do): a
        # controller starting on thousands of objects costs the server a fifth of a read from etcd. What the
        # cache may lag behind comes through the watch from the list's version; a relist (after a 410) reads
        # from etcd, so that it is never older than what was already delivered.
        items, version = self.kube.list_all(
            self.path, label_selector=self._label_selector, resource_version=None if self.version else "0"
        )
        seen: set[str] = set()
        for obj in items:
            key = object_key(obj)
            seen.add(key)
            old = self.objects.get(key)
            if old is None:
                self._emit("ADDED", obj)
            elif _version(old) != _version(obj):
                self._emit("MODIFIED", obj)
        for key in [k for k in self.objects if k not in seen]:
            self._emit("DELETED", self.objects[key])
        self.version = version
        self.synced.set()
        if self._on_synced is not None:
            self._on_synced()

    def _watch(self) -> None:
        stream = self.kube.watch(
            self.path,
            resource_version=self.version,
            label_selector=self._label_selector,
            timeout_seconds=self._timeout_seconds,
            read_timeout=self._read_timeout,
        )
        try:
            for kind, obj in stream:
                version = (obj.get("metadata") or {}).get("resourceVersion")
                if kind != "BOOKMARK":
                    self._emit(kind, obj)
                if version:
                    self.version = str(version)
                if self._stop.is_set():
                    return
        finally:
            stream.close()  # type: ignore[attr-defined]

    def _emit(self, kind: str, obj: JSON) -> None:
        key = object_key(obj)
        if kind == "DELETED":
            self.objects.pop(key, None)
        else:
            self.objects[key] = obj
        self._deliver(kind, obj)


def _version(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion", ""))
