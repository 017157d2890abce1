"""caldera's own CRDs of Volcano's API on a test control plane (`caldera.backends.kube.crds`).

`install_caldera_crds(plane)` creates them (replacing any of the same name, Volcano's included) and
returns once the API server reports each Established, so the first request for a Job finds it.
"""

from __future__ import annotations

from caldera.backends.kube.client import JSON, Conflict, resource_path
from caldera.backends.kube.crds import crds
from caldera.testing.kube.controlplane import ControlPlane
from caldera.testing.kube.process import ProcessError
from caldera.utils.clock import SystemClock

CRDS = resource_path("apiextensions.k8s.io/v1", "customresourcedefinitions")


def install_caldera_crds(plane: ControlPlane, *, timeout: float = 120.0) -> list[str]:
    """Create (or replace) caldera's CRDs and wait until each is Established; their names."""
    names = []
    for crd in crds():
        name = crd["metadata"]["name"]
        names.append(name)
        try:
            plane.kube.create(CRDS, crd)
        except Conflict as e:
            if e.reason != "AlreadyExists":
                raise
            current = plane.kube.get(f"{CRDS}/{name}")
            crd = {**crd, "metadata": {**crd["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
            plane.kube.replace(f"{CRDS}/{name}", crd)
    clock = SystemClock()
    deadline = clock.monotonic() + timeout
    for name in names:
        while not established(plane.kube.get(f"{CRDS}/{name}")):
            if clock.monotonic() > deadline:
                raise ProcessError(f"the CRD {name} was not Established after {timeout:g}s")
            clock.sleep(0.1)
    return names


def established(crd: JSON) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)
