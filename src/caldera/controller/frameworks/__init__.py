"""The framework plugins: pure functions from (job, task, index, addresses) to a pod's environment and files.

`env`, `svc`, `ssh`, `pytorch`, `tensorflow`, `mpi` behave as Volcano's job plugins of
the same names; `paddle` is caldera's own. Addresses come from the executor
(`caldera.core.addresses`), so nothing here knows whether pods run on Kubernetes or on
this machine. This package imports only `caldera.core` and the standard library.
"""

from caldera.controller.frameworks.patch import PluginError, PodPatch
from caldera.controller.frameworks.pod import PodRef
from caldera.controller.frameworks.registry import (
    FRAMEWORKS,
    PLUGINS,
    Plugin,
    build_registry,
    job_ports,
    ports_of,
    render,
)

__all__ = [
    "FRAMEWORKS",
    "PLUGINS",
    "Plugin",
    "PluginError",
    "PodPatch",
    "PodRef",
    "build_registry",
    "job_ports",
    "ports_of",
    "render",
]
