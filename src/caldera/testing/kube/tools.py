"""Where the Kubernetes binaries are: the directory `make kube-tools` built (`tools/kube/build.sh`).

`find_tools()` takes `$CALDERA_KUBE_TOOLS` if set (the Makefile sets it for pytest), else asks
the repository's `tools/kube/build.sh --print-dir` where the binaries of the pinned versions are
cached (`~/.cache/caldera/kube/<versions>/`). It never builds anything: a missing tool is one
`ToolsMissing` naming the file and the command that makes it. Volcano's scheduler and controller
manager are optional (`has_volcano()`, `volcano()`): `make volcano-tools` builds them, where the Go
module proxy serves their volcano.sh/apis module (docs/kubernetes-harness.md).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

KUBE_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok")
VOLCANO_BINARIES = ("vc-scheduler", "vc-controller-manager")
REPOSITORY = Path(__file__).resolve().parents[4]  # src/caldera/testing/kube/tools.py -> the checkout
BUILD_SCRIPT = REPOSITORY / "tools" / "kube" / "build.sh"


class ToolsMissing(Exception):
    """A Kubernetes binary the test or benchmark needs is not built."""


@dataclass(frozen=True, slots=True)
class KubeTools:
    """The directory of the built binaries (`bin/`) and Volcano's CRDs (`volcano-crds/`); Volcano's own
    binaries are in `volcano_directory` (`bin/`), when they could be built."""

    directory: Path
    volcano_directory: Path | None = None

    def binary(self, name: str) -> Path:
        path = self.directory / "bin" / name
        if not os.access(path, os.X_OK):
            raise ToolsMissing(f"{path}: not built; run `make kube-tools`")
        return path

    def volcano_crds(self) -> list[Path]:
        """Volcano's CRD manifests (batch Jobs, PodGroups, Queues, ...), as taken from its module."""
        crds = sorted((self.directory / "volcano-crds").glob("*.yaml"))
        if not crds:
            raise ToolsMissing(f"{self.directory / 'volcano-crds'}: no Volcano CRDs; run `make kube-tools`")
        return crds

    def has_volcano(self) -> bool:
        return self.volcano_directory is not None and all(
            os.access(self.volcano_directory / "bin" / name, os.X_OK) for name in VOLCANO_BINARIES
        )

    def volcano(self, name: str) -> Path:
        """vc-scheduler or vc-controller-manager; ToolsMissing saying why they may be absent."""
        if self.volcano_directory is None or not self.has_volcano():
            raise ToolsMissing(
                f"{name}: Volcano is not built: run `make volcano-tools` (it says why where it cannot build it); "
                "CALDERA_VOLCANO_TOOLS may name binaries built elsewhere (docs/kubernetes-harness.md)"
            )
        return self.volcano_directory / "bin" / name


def find_tools() -> KubeTools:
    """The tools: $CALDERA_KUBE_TOOLS (and $CALDERA_VOLCANO_TOOLS), else where tools/kube/build.sh caches
    the pinned versions. ToolsMissing if a Kubernetes binary is not built (Volcano's may be absent)."""
    kube, volcano = os.environ.get("CALDERA_KUBE_TOOLS"), os.environ.get("CALDERA_VOLCANO_TOOLS")
    if not kube or not volcano:
        if not BUILD_SCRIPT.is_file():
            raise ToolsMissing("no Kubernetes tools: set CALDERA_KUBE_TOOLS to a directory `make kube-tools` built")
        kube = kube or _build_script("--print-dir")
        volcano = volcano or _build_script("--print-volcano-dir")
    tools = KubeTools(Path(kube), Path(volcano))
    for name in KUBE_BINARIES:
        tools.binary(name)
    return tools


def _build_script(option: str) -> str:
    done = subprocess.run(["sh", str(BUILD_SCRIPT), option], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ToolsMissing(f"{BUILD_SCRIPT} {option} failed: {done.stderr.strip()[-300:]}")
    return done.stdout.strip()
