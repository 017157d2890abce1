"""The restart back-off of pods restarted in place: the kubelet's CrashLoopBackOff.

The kubelet restarts a container that ended (restartPolicy Always, or OnFailure after a
failure) at once the first time; after that only once a back-off has passed since it
ended, 10 s doubling at each restart up to 5 min. A container that ended more than twice
the cap (10 min) after its last restart was stable: its back-off starts over. These are
client-go's `flowcontrol.Backoff` (`Next`, `IsInBackOffSince`, `hasExpired`) as kuberuntime's
`doBackOff` uses it, keyed per pod: a pod re-created under the same name starts afresh.

Invariants: a pod that keeps failing at once waits 0, 10, 20, 40, 80, 160, 300, 300, ...
seconds before each restart; a pod is waiting at most once, until it is restarted or
forgotten; time is only what the caller passes in (its clock). `RestartBackoff(initial=0)`
restarts at once, always (the simulator's executor).
"""

from __future__ import annotations

from dataclasses import dataclass

INITIAL = 10.0  # seconds
CAP = 300.0  # seconds; twice this without a restart resets the back-off


@dataclass(slots=True)
class _Entry:
    backoff: float
    last_restart: float


class RestartBackoff:
    __slots__ = ("_entries", "cap", "initial", "waiting")

    def __init__(self, initial: float = INITIAL, cap: float = CAP) -> None:
        self.initial = initial
        self.cap = cap
        self._entries: dict[str, _Entry] = {}
        self.waiting: dict[str, tuple[float, float]] = {}  # pod key → (when it restarts, when it ended)

    def delay(self, pod: str, ended: float) -> float:
        """Seconds after `ended` (when its process ended) before `pod` may start again (0: at once)."""
        entry = self._entries.get(pod)
        if entry is None or self._stable(entry, ended):
            return 0.0
        return entry.backoff

    def wait(self, pod: str, ended: float, delay: float) -> None:
        """`pod` waits `delay` seconds from `ended` before its restart (see `due`)."""
        self.waiting[pod] = (ended + delay, ended)

    def due(self, now: float) -> list[tuple[str, float]]:
        """The pods whose wait is over, earliest first, with when each ended; they wait no more."""
        done = sorted((due, pod, ended) for pod, (due, ended) in self.waiting.items() if due <= now)
        for _, pod, _ in done:
            del self.waiting[pod]
        return [(pod, ended) for _, pod, ended in done]

    def next_due(self) -> float | None:
        return min((due for due, _ in self.waiting.values()), default=None)

    def restarted(self, pod: str, ended: float, now: float) -> None:
        """`pod`, whose process ended at `ended`, starts again `now`: its next back-off doubles (up to the cap)."""
        if self.initial <= 0:
            return  # no back-off ever: nothing to remember
        entry = self._entries.get(pod)
        if entry is None or self._stable(entry, ended):
            self._entries[pod] = _Entry(self.initial, now)
        else:
            entry.backoff = min(entry.backoff * 2, self.cap)
            entry.last_restart = now

    def forget(self, pod: str) -> None:
        """The pod is gone: no restart is due, and a pod created again under its name starts afresh."""
        self._entries.pop(pod, None)
        self.waiting.pop(pod, None)

    def _stable(self, entry: _Entry, ended: float) -> bool:
        return ended - entry.last_restart > 2 * self.cap
