"""Leader election with a `coordination.k8s.io/v1` Lease, as client-go's leaderelection does it.

`Elector.acquire(stop)` returns once this identity holds the Lease: it takes a Lease nobody
holds, or one whose holder has not renewed it for `lease_duration` seconds (its renewTime
as the API server stored it, compared with this clock: the clocks of replicas must agree to
within a few seconds, as client-go assumes too). Every write is optimistic (the Lease's
resourceVersion), so two candidates never both win. The holder renews every `retry_period`;
`renew()` returns False when the Lease was lost (someone else holds it) or could not be
renewed for `renew_deadline` seconds: the holder must then stop acting at once.

Invariant: at most one identity holds the Lease at a time, as long as `renew_deadline` is
shorter than `lease_duration` (the old holder stops before anyone may take over).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from caldera.backends.kube.client import JSON, ApiError, Conflict, KubeClient, KubeError, NotFound, resource_path
from caldera.backends.kube.convert import from_time, to_micro_time
from caldera.utils.clock import Clock

log = logging.getLogger("caldera.kube.lease")


@dataclass(frozen=True, slots=True)
class LeaseTimes:
    lease_duration: float = 10.0  # a holder silent this long has lost the Lease (client-go: 15)
    renew_deadline: float = 7.0  # a holder that could not renew this long steps down (client-go: 10)
    retry_period: float = 2.0  # how often a holder renews and a candidate tries (client-go: 2)


class Elector:
    def __init__(
        self, kube: KubeClient, namespace: str, name: str, identity: str, clock: Clock, times: LeaseTimes = LeaseTimes()
    ) -> None:
        self.kube = kube
        self.path = resource_path("coordination.k8s.io/v1", "leases", namespace=namespace)
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.clock = clock
        self.times = times
        self._last_renewed = 0.0
        self.transitions = 0

    def acquire(self, stop: threading.Event) -> bool:
        """Block until this identity holds the Lease (True) or `stop` is set (False)."""
        while not stop.is_set():
            try:
                if self._try():
                    return True
            except KubeError as e:
                log.warning("lease %s/%s: %s", self.namespace, self.name, e)
            stop.wait(self.times.retry_period)
        return False

    def renew(self) -> bool:
        """Renew the Lease; False once it is lost or was not renewed for renew_deadline seconds."""
        try:
            return self._try()  # False: someone else holds it
        except KubeError as e:
            log.warning("lease %s/%s: renewing failed: %s", self.namespace, self.name, e)
            return self.clock.now() - self._last_renewed < self.times.renew_deadline

    def release(self) -> None:
        """Give the Lease up (a clean shutdown): a standby takes over at once instead of after lease_duration."""
        try:
            lease = self.kube.get(f"{self.path}/{self.name}")
            if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            lease["spec"]["holderIdentity"] = ""
            lease["spec"]["leaseDurationSeconds"] = 1
            self.kube.replace(f"{self.path}/{self.name}", lease)
        except KubeError as e:
            log.warning("lease %s/%s: releasing failed: %s", self.namespace, self.name, e)

    def holder(self) -> str:
        try:
            return str((self.kube.get(f"{self.path}/{self.name}").get("spec") or {}).get("holderIdentity") or "")
        except NotFound:
            return ""

    def _try(self) -> bool:
        now = self.clock.now()
        try:
            lease = self.kube.get(f"{self.path}/{self.name}")
        except NotFound:
            try:
                self.kube.create(self.path, self._lease(None, now, acquired=True))
            except Conflict:
                return False
            self._won(now)
            return True
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        renewed = from_time(spec.get("renewTime")) or 0.0
        duration = float(spec.get("leaseDurationSeconds") or self.times.lease_duration)
        if holder and holder != self.identity and now < renewed + duration:
            return False
        taking = holder != self.identity
        try:
            self.kube.replace(f"{self.path}/{self.name}", self._lease(lease, now, acquired=taking))
        except (Conflict, ApiError) as e:
            if isinstance(e, Conflict) or e.code == 409:
                return False
            raise
        if taking:
            self._won(now)
        self._last_renewed = now
        return True

    def _won(self, now: float) -> None:
        self._last_renewed = now
        self.transitions += 1
        log.info("lease %s/%s: %s is the leader", self.namespace, self.name, self.identity)

    def _lease(self, old: JSON | None, now: float, *, acquired: bool) -> JSON:
        spec = dict((old or {}).get("spec") or {})
        spec["holderIdentity"] = self.identity
        spec["leaseDurationSeconds"] = int(self.times.lease_duration)
        spec["renewTime"] = to_micro_time(now)
        if acquired:
            spec["acquireTime"] = to_micro_time(now)
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if old is not None else 0)
        meta: JSON = {"name": self.name, "namespace": self.namespace}
        if old is not None:
            meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta, "spec": spec}
