"""caldera itself on the test control plane: `caldera controller` as its own process, like any peer.

`start_caldera(plane)` runs the real command (`caldera controller --kubeconfig ...`) and returns
once it holds its Lease (it then lists every kind and acts); `lease_holder(plane)` says who holds
it. Several replicas can run side by side under different names (`name`, also their Lease identity).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from caldera.backends.kube.client import NotFound, resource_path
from caldera.system.kubernetes import LEASE_NAME
from caldera.testing.kube.controlplane import START_TIMEOUT, ControlPlane
from caldera.testing.kube.process import Process, ProcessError
from caldera.testing.waiting import wait_until

LEASE_NAMESPACE = "default"


def caldera_command() -> list[str]:
    return [str(Path(sys.executable).parent / "caldera")]


def lease_holder(plane: ControlPlane) -> str:
    try:
        lease = plane.kube.get(
            resource_path("coordination.k8s.io/v1", "leases", namespace=LEASE_NAMESPACE, name=LEASE_NAME)
        )
    except NotFound:
        return ""
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def start_caldera(
    plane: ControlPlane,
    *,
    name: str = "caldera-controller",
    args: Sequence[str] = (),
    wait_for_lease: bool = True,
    timeout: float = START_TIMEOUT,
) -> Process:
    """`caldera controller` against this control plane, returned once it holds the Lease (if `wait_for_lease`)."""
    process = plane.start_process(
        name,
        [
            *caldera_command(),
            "controller",
            f"--kubeconfig={plane.kubeconfig}",
            f"--lease-namespace={LEASE_NAMESPACE}",
            f"--id={name}",
            "-v",
            *args,
        ],
    )
    if not wait_for_lease:
        return process

    def held() -> bool:
        if not process.running:
            raise ProcessError(f"{name} exited before it held the lease:\n{process.log_tail()}")
        return lease_holder(plane) == name

    try:
        wait_until(held, timeout, f"{name} to hold the lease", interval=0.1)
    except AssertionError:
        raise ProcessError(f"{name} did not hold the lease within {timeout:g}s:\n{process.log_tail()}") from None
    return process
