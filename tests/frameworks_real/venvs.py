"""The real frameworks that tests/frameworks_real runs inside caldera's jobs, each in a virtualenv of its own.

Their pins do not meet caldera's (Paddle 2.6 wants protobuf 4 and numpy 1, `etcd3` wants
protobuf 3.20, caldera wants protobuf ≥ 5), so each framework gets a venv of its own under
a cache outside the work tree, shared by every clone: `$CALDERA_FRAMEWORKS_CACHE`, else
`$XDG_CACHE_HOME/caldera/frameworks`, else `~/.cache/caldera/frameworks`, one directory per
framework, version and Python (`paddlepaddle-2.6.2-py3.11`). PyTorch is not here: torchrun is
the torch 2.13.0 of caldera's own venv (its `examples` extra).

`make frameworks` (which `make test` runs beside lint) runs this file with the Python caldera's
venv is made from: it builds the missing venvs in parallel and reuses the present ones.
Invariant: a venv directory holding `COMPLETE` has every pin installed (the file is written
last, under a lock per venv, so two builders never share a half-built venv and an interrupted
build is redone); one holding `NO-WHEEL` records pip's answer that the framework has no wheel
for this Python and platform, and its tests skip with that answer. Any other pip failure fails
the build. Standard library only: it runs before any venv exists.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

COMPLETE = "COMPLETE"
NO_WHEEL = "NO-WHEEL"
# pip's words when the index answered but no wheel of the framework matched this interpreter
# (the framework is never built from source); said with network trouble, they mean nothing.
_NO_MATCH = "No matching distribution found for"
_NETWORK_TROUBLE = ("Retrying (Retry(", "NewConnectionError", "Could not fetch URL", "ConnectionError", "timed out")


@dataclass(frozen=True, slots=True)
class Framework:
    """One framework's venv: the distribution and version the tests run, and the pins it needs beside it."""

    distribution: str
    version: str
    pins: tuple[str, ...] = ()
    why: str = ""

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"

    @property
    def directory(self) -> Path:
        tag = f"py{sys.version_info.major}.{sys.version_info.minor}"
        return cache_root() / f"{self.distribution}-{self.version}-{tag}"

    @property
    def python(self) -> Path:
        return self.directory / "bin" / "python"

    def complete(self) -> bool:
        return (self.directory / COMPLETE).is_file()

    def no_wheel(self) -> str | None:
        """pip's answer when there is no wheel for this Python, else None."""
        path = self.directory / NO_WHEEL
        return path.read_text() if path.is_file() else None


FRAMEWORKS = {
    "tensorflow": Framework(
        "tensorflow-cpu",
        "2.21.0",
        why="MultiWorkerMirroredStrategy from the TF_CONFIG caldera sets (the CPU wheel: 260 MB, not 620)",
    ),
    "paddle-ps": Framework(
        "paddlepaddle",
        "2.6.2",
        ("protobuf==4.21.12", "numpy<2"),
        why="fleet parameter-server mode: the 3.x CPU wheels have no DistFleetWrapper; "
        "2.6's DistributedStrategy breaks on protobuf ≥ 5 and its ops on numpy 2",
    ),
    "paddle": Framework(
        "paddlepaddle",
        "3.3.1",
        ("etcd3==0.12.0", "protobuf==3.20.3"),
        why="paddle.distributed.launch, collective and elastic on etcd; Paddle's etcd client `etcd3` "
        "imports only with protobuf ≤ 3.20 (Paddle 3.3.1 accepts ≥ 3.20.2)",
    ),
}


def cache_root() -> Path:
    explicit = os.environ.get("CALDERA_FRAMEWORKS_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "caldera" / "frameworks"


@contextmanager
def _locked(framework: Framework) -> Iterator[None]:
    framework.directory.parent.mkdir(parents=True, exist_ok=True)
    lock = framework.directory.parent / f".{framework.directory.name}.lock"
    with lock.open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # another `make` building the same venv: wait for it
        yield


def ensure(framework: Framework) -> str:
    """Build `framework`'s venv unless it is there; what was done, in a few words."""
    with _locked(framework):
        if framework.complete():
            return "present"
        if (reason := framework.no_wheel()) is not None:
            return f"no wheel for this Python ({reason.strip().splitlines()[-1]})"
        start = time.perf_counter()
        target = framework.directory
        shutil.rmtree(target, ignore_errors=True)  # what an interrupted build left
        subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
        pip = [str(framework.python), "-m", "pip", "install", "--disable-pip-version-check"]
        wheel_only = f"--only-binary={framework.distribution}"  # pins may be sdists (etcd3 is one)
        command = [*pip, wheel_only, framework.requirement, *framework.pins]
        done = subprocess.run(command, check=False, capture_output=True, text=True)
        if done.returncode != 0:
            said = done.stdout + done.stderr
            no_match = f"{_NO_MATCH} {framework.requirement}" in said
            if no_match and not any(t in said for t in _NETWORK_TROUBLE):
                shutil.rmtree(target)
                target.mkdir()
                (target / NO_WHEEL).write_text(said[-2000:])
                return f"no wheel for this Python ({said.strip().splitlines()[-1]})"
            raise SystemExit(f"pip could not install {framework.requirement} into {target}:\n{said[-4000:]}")
        freeze = subprocess.run([*pip[:3], "freeze"], capture_output=True, text=True, check=True).stdout
        (target / COMPLETE).write_text(freeze)
        return f"built in {time.perf_counter() - start:.0f} s"


def main() -> None:
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=len(FRAMEWORKS)) as pool:
        results = dict(zip(FRAMEWORKS, pool.map(ensure, FRAMEWORKS.values()), strict=True))
    for key, what in results.items():
        framework = FRAMEWORKS[key]
        print(f"frameworks: {framework.requirement} ({key}): {what}: {framework.directory}")
    print(f"frameworks: ready in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
