"""Real framework launchers inside caldera's jobs: one embedded daemon per test module, each framework's venv.

The frameworks are the real ones from PyPI (`venvs.py` says which, and why those pins), each
in a venv of its own that `make frameworks` builds outside the work tree. A job names its
venv's Python explicitly: a pod finds caldera's Python first on PATH, which has none of them
(torchrun excepted: it is caldera's own torch). A test is skipped only where a framework has
no wheel for this Python; a venv that is simply missing fails the test, saying how to build it.

The daemon is the real one (`caldera up`, driven by the `caldera` command, as in tests/e2e),
brought down at the end of the module with a check that nothing of its home is left running.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.conftest import Caldera, bring_down

from .venvs import FRAMEWORKS

SCRIPTS = Path(__file__).parent / "scripts"


def framework_python(key: str) -> str:
    """The Python of framework `key`'s venv; skips when the framework has no wheel for this Python."""
    framework = FRAMEWORKS[key]
    if framework.complete():
        return str(framework.python)
    reason = framework.no_wheel()
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    if reason is not None:
        said = reason.strip().splitlines()[-1]
        pytest.skip(
            f"{framework.requirement} has no wheel for Python {version} here ({said}); "
            f"delete {framework.directory} to ask pip again"
        )
    pytest.fail(f"{framework.requirement} is not installed in {framework.directory}: run `make frameworks`")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Caldera]:
    """One embedded daemon for the whole module (`caldera up`), brought down and checked after its last test."""
    cal = Caldera(tmp_path_factory.mktemp("home"))
    try:
        cal.up()
        yield cal
    finally:
        bring_down(cal)


def finish(cal: Caldera, job: str, timeout: float) -> None:
    """`caldera wait JOB` (Completed), failing with every pod's log of the job when it does not come to that."""
    waited = cal.run("wait", job, "--timeout", str(timeout), timeout=timeout + 60)
    if waited.returncode != 0:
        pytest.fail(f"job {job}: {waited.stdout}{waited.stderr}\n{pod_logs(cal, job)}{cal.daemon_log()}")


def pod_logs(cal: Caldera, job: str) -> str:
    """Every pod's log of the job (each attempt), headed by the pod's name."""
    root = cal.home / "pods" / "default"
    return "".join(
        f"--- {d.name} ---\n{(d / 'log').read_text(errors='replace')}"
        for d in sorted(root.glob(f"{job}-*"))
        if (d / "log").is_file()
    )
