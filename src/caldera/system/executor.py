"""Where pods run: the one interface the control plane drives (fake executor, local processes, Kubernetes)."""

from __future__ import annotations

from typing import Protocol

from caldera.core import objects as o


class Executor(Protocol):
    """Where pods run. It reports back through the control plane's `pod_*` methods
    (`pod_exited` when a process ends on its own, `pod_stopped` when a stopped one is gone)."""

    def start(self, pod: o.Pod, node: o.Node) -> None: ...

    def stop(self, pod: o.Pod) -> None:
        """Stop the pod's process (idempotent); call `pod_stopped` when it is gone."""
        ...
