"""What kind of training job a Volcano Job is, for people: its type, and the kind it was applied as.

- The type is the job's `volcano.sh/job-type` label (Volcano's JobTypeKey, the JobType
  column of `vcctl job list`). `caldera submit` sets it to the framework's Kubeflow kind
  (PyTorchJob, TFJob, PaddleJob, MPIJob), which is what Arena's list shows, and a
  Kubeflow manifest to its own kind; a Volcano manifest may set any value, or none.
- A job read from a Kubeflow manifest (`caldera.core.kubeflow`) runs as a Volcano Job and
  keeps the kind it was written as in the annotation `caldera.dev/applied-as`
  (`kubeflow.org/v1/TFJob`), so `get` and `-o name` show it under that kind
  (`tfjob.kubeflow.org/NAME`); every other job is a `job.batch.volcano.sh`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from caldera.core.objects import JOB_API

JOB_TYPE_LABEL = "volcano.sh/job-type"
APPLIED_AS = "caldera.dev/applied-as"


def job_type(labels: Mapping[str, str] | None) -> str:
    """The job's type ("" when it has none)."""
    return str((labels or {}).get(JOB_TYPE_LABEL) or "")


def applied_as(annotations: Mapping[str, str] | None) -> tuple[str, str]:
    """(apiVersion, kind) the job was applied as: a Kubeflow kind, or Volcano's Job."""
    value = str((annotations or {}).get(APPLIED_AS) or "")
    api, slash, kind = value.rpartition("/")
    return (api, kind) if slash and api and kind else (JOB_API, "Job")


def resource_name(api_version: str, kind: str, name: str) -> str:
    """kubectl's `-o name`: `job.batch.volcano.sh/NAME`, `tfjob.kubeflow.org/NAME`."""
    group = api_version.partition("/")[0] if "/" in api_version else ""
    return f"{kind.lower()}.{group}/{name}" if group else f"{kind.lower()}/{name}"


def object_resource_name(obj: Mapping[str, Any]) -> str:
    """`resource_name` of a stored Job object (its metadata carries the annotation)."""
    meta = obj.get("metadata") or {}
    api, kind = applied_as(meta.get("annotations"))
    return resource_name(api, kind, str(meta.get("name")))
