"""caldera.elastic is imported by training scripts: the import itself needs only the standard library."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
before = set(sys.modules)
import caldera.elastic
loaded = {name.split(".")[0] for name in set(sys.modules) - before}
print(json.dumps(sorted(loaded - set(sys.stdlib_module_names) - {"caldera"})))
"""


def test_importing_caldera_elastic_loads_nothing_but_the_standard_library() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []


def test_the_public_api() -> None:
    import caldera.elastic

    assert sorted(caldera.elastic.__all__) == [
        "Checkpoint",
        "CheckpointError",
        "ElasticEnvError",
        "World",
        "load_checkpoint",
        "rng_state",
        "save_checkpoint",
        "set_rng_state",
        "world",
    ]
