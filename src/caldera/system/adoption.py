"""What a restarted daemon does with the pods its store says run: each ends up watched, ended, or started.

The executor's `adopt` hands back every pod whose process it found (alive: watched again;
ended while nobody watched: its end). A pod the store says runs and `adopt` did not mention is
one of three, told apart by what its pod directory keeps of its current attempt:

- it ran and ended, and its end was handed out but the daemon died before saving it: that end
  (its recorded exit code) is recorded now;
- it was being stopped (deleted, preempted): it is recorded as stopped;
- the daemon died between the commit that decided its start and the start itself, so nothing
  of the user's ran: it is started now under the same attempt, as a kubelet starts a pod bound
  to it, and nothing is counted against the user's code (an event `Started` says why it is late).

A pod found alive that the plane was stopping (deleted, aborted, preempted) is asked to stop again: the
previous daemon's SIGTERM may have gone or not, and its SIGKILL timer died with it. Its grace counts from
its deletion, as the kubelet's: what is left of it, or none. A pod that had its SIGTERM gets a second
one (as from a restarted kubelet).
"""

from __future__ import annotations

from collections.abc import Callable

from caldera.backends.local import LocalExecutor, ProcessEvent
from caldera.system.control import ControlPlane
from caldera.system.effects import REFUSED
from caldera.system.runtime import LocalRuntime
from caldera.utils.clock import Clock

Notify = Callable[[str, str, str, str], None]  # (namespace, object, reason, message)


def adopt(
    executor: LocalExecutor,
    plane: ControlPlane,
    runtime: LocalRuntime,
    handle: Callable[[ProcessEvent], None],
    notify: Notify,
    clock: Clock,
) -> None:
    """Re-attach to the pods' processes; `handle` what happened to those that ended; start those never started."""
    seen: set[str] = set()
    for ev in executor.adopt():
        seen.add(ev.key)
        handle(ev)
        pod = plane.pods.get(ev.key)
        if ev.kind == "running" and pod is not None and pod.deletion_timestamp is not None:
            grace = pod.spec.termination_grace_period_seconds
            left = pod.deletion_timestamp + grace - clock.now()
            executor.stop(ev.key, grace=min(grace, max(0.0, left)))  # never more than its own (a clock set back)
    for pod in list(plane.pods.values()):
        if not pod.node_name or pod.finished or pod.key in seen:
            continue
        attempt = runtime.attempts.get(pod.key, 0)
        if (ended := executor.past(pod.key, attempt)) is not None:
            handle(ended)
        elif pod.deletion_timestamp is not None or plane.is_stopping(pod.key):
            handle(ProcessEvent(pod.key, "stopped", None, attempt, clock.now()))
        else:
            runtime.attempts[pod.key] = attempt - 1  # start() takes the next number: this one again
            try:
                runtime.start(pod, plane.nodes[pod.node_name])
            except (RuntimeError, KeyError) as e:  # as a start the executor refuses
                handle(ProcessEvent(pod.key, "exited", REFUSED, attempt, clock.now(), str(e)))
                continue
            why = f"the daemon stopped between saving its start and starting it: started now (attempt {attempt})"
            notify(pod.namespace, pod.name, "Started", why)
