"""Pure builders from `caldera submit` options to a Volcano `batch.volcano.sh/v1alpha1` Job.

A builder returns the manifest a user could have written by hand: a plain dict in
Volcano's exact shape, which `caldera.core.jobmanifest.parse_job` accepts unchanged.
Nothing here does I/O. Arena's semantics are followed, and where Arena is silent,
what a Volcano user would write:

| submit | tasks (replicas) | plugins (besides svc, env) | done when |
|---|---|---|---|
| pytorch --workers W | master (1), worker (W-1; none if W = 1) | pytorch --master=master --worker=worker (if W > 1) --port=23456 | every pod succeeded |
| tf --ps P --workers W [--chief] [--evaluator] | ps (P), worker (W), chief (1), evaluator (1) | tensorflow, one role flag per task present, --port=2222 | chief TaskCompleted, else worker TaskCompleted |
| paddle [--pservers P] --trainers T | pserver (P; none if P = 0: collective), trainer (T) | paddle [--pserver=pserver] --trainer=trainer --port=36543 | trainer TaskCompleted (PS mode), else every pod |
| mpi --workers N | master (1, the launcher), worker (N) | mpi --master=master --worker=worker, ssh | master TaskCompleted |

Choices, and why:
- `--workers` counts the master for pytorch (Arena), and only workers for tf and mpi.
- One gang: the job's `minAvailable` is all its pods, written out.
- Failure: job policies PodEvicted → RestartJob and PodFailed → RestartJob (Kubeflow
  restarts a failed job; the CTR manifest does the same), so pods are `restartPolicy:
  Never`: the job restarts as a whole, never one pod alone into a rendezvous its peers
  have left. `retry` is `maxRetry`, the restarts allowed; it must be ≥ 1, since Volcano
  reads `maxRetry: 0` as its default 3. Without it the default 3 applies.
- Done: TaskCompleted → CompleteJob on the task whose end is the end of training, which
  stops the servers and placeholders still running (CompleteJob kills unfinished pods).
  PyTorch has no such rule: the job completes when every pod has succeeded.
- Resources are per pod: `cpu` and `memory` as requests; `nvidia.com/gpu` in requests and
  limits (an extended resource needs a limit), only on pods that compute: not on tf ps,
  paddle pservers nor the MPI launcher (Arena's `--gpus` is "GPUs per worker"; its servers
  have their own `--ps-gpus`).
- Elastic pytorch (`--elastic`, `elastic=True`): one task `worker` of MAX pods, minAvailable
  MIN, and the job annotation `caldera.dev/elastic-max-worker: MAX` (also for a fixed
  `--workers N`: fault tolerance at N). There is no master pod: every pod runs `python -m
  caldera.launcher -- COMMAND`, and the launchers elect rank 0 and its address in etcd on
  every round (the pytorch plugin's fixed master would be wrong after the first
  failure). No job-level RestartJob: admission gives the task pod-level recovery
  (`caldera.core.elastic`), so one failed pod is re-created while the others wait.
- Containers are named `pytorch`, `tensorflow`, `paddle`, `mpi`, as each operator names
  them. The image is written when given (the embedded executor ignores it).
- The command is the container's `command`, exec'd without a shell.
- Plugins `svc` and `env` everywhere (hosts lists, VC_TASK_INDEX); `ssh` for mpi as the
  Volcano webhook adds it. Role flags name only the tasks present: caldera's plugins refuse
  a flag naming a missing task (a typo), and paddle chooses parameter-server mode by
  whether its pserver task exists.
- `data` becomes the pod-template annotation `caldera.dev/data: "SRC:DST,..."`: SRC an
  absolute host path; DST relative to where the command runs (the embedded executor links
  it there) or absolute, Arena's form (`--data src:/mnist_data`: the embedded executor maps
  /mnist_data in the command, its arguments and environment to SRC; see
  `caldera.system.podpaths`). Not a hostPath volume: a relative DST is no mountPath. No
  `CALDERA_DATA_<n>` variables: the command names DST itself.
- `tensorboard_logdir` becomes the job annotation `caldera.dev/tensorboard-logdir`.
- `node_selector` (Arena's `--selector k=v`) is every pod template's `nodeSelector`;
  `tolerations` (`--toleration`) its `tolerations`, Arena's spellings read by
  `parse_toleration` (`all` tolerates every taint).
- `sync_source` (Arena's `--sync-mode git --sync-source SRC [--sync-branch B]`): every pod
  runs `python -m caldera.launcher.gitsync --repo SRC [--branch B] -- COMMAND`, which
  clones SRC into `code/<repository name>` where the pod runs, then runs the command
  there, as Arena's git-sync init container fills `<workingDir>/code`. Without
  `--working-dir` such a pod runs in its own directory, where the clone is.
- The job's label `volcano.sh/job-type` is the framework's Kubeflow kind (PyTorchJob,
  TFJob, PaddleJob, MPIJob): `caldera list` shows it as the job's TYPE, as Arena does.
- Environment: in the order given; a repeated name keeps its last value, as in a shell.
  Arena's injected `workers`/`gpus` variables are not copied: the plugins set each
  framework's own.
- MPI workers run `worker_command` if given, else `sleep infinity`: on the embedded
  cluster mpirun reaches them through the hostfile, so a worker pod holds its share of
  the gang's resources until CompleteJob stops it.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from caldera.core.elastic import MAX_REPLICAS_PREFIX as ELASTIC_MAX_PREFIX
from caldera.core.jobkind import JOB_TYPE_LABEL
from caldera.core.objects import JOB_API
from caldera.core.quantity import QuantityError, parse_quantity
from caldera.core.resources import GPU
from caldera.core.validation import dns1123_label_error

DATA_ANNOTATION = "caldera.dev/data"
TENSORBOARD_ANNOTATION = "caldera.dev/tensorboard-logdir"
# Arena's JobMaxLength: the longest pod name, `<job>-trainer-<5 digits>`, still fits a 63-character label.
MAX_NAME_LENGTH = 49
WORKER_PLACEHOLDER = ("sleep", "infinity")
LAUNCHER = ("python", "-m", "caldera.launcher")  # the pod's PATH has caldera's Python first
GITSYNC = ("python", "-m", "caldera.launcher.gitsync")
JOB_TYPES = {"pytorch": "PyTorchJob", "tensorflow": "TFJob", "paddle": "PaddleJob", "mpi": "MPIJob"}
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
PYTORCH_PORT = 23456
TENSORFLOW_PORT = 2222
PADDLE_PORT = 36543
_RESTART_ON_FAILURE = ({"event": "PodEvicted", "action": "RestartJob"}, {"event": "PodFailed", "action": "RestartJob"})
_COMPLETE_JOB = ({"event": "TaskCompleted", "action": "CompleteJob"},)


@dataclass(frozen=True, slots=True)
class DataMount:
    """A host path `source` made available in the pod as `target`."""

    source: str
    target: str


@dataclass(frozen=True, slots=True)
class SubmitSpec:
    """What every `caldera submit` asks for, whatever the framework."""

    name: str
    command: tuple[str, ...]
    namespace: str = "default"
    image: str = ""
    gpus: int = 0
    cpu: str = ""
    memory: str = ""
    queue: str = "default"
    priority: str = ""
    env: tuple[tuple[str, str], ...] = ()
    working_dir: str = ""
    data: tuple[DataMount, ...] = ()
    tensorboard_logdir: str = ""
    retry: int | None = None
    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[dict[str, str], ...] = ()
    sync_source: str = ""  # a git repository (URL or local path) cloned into the pod before the command
    sync_branch: str = ""


# ---------------------------------------------------------------- option text


def name_error(name: str) -> str | None:
    """Why `name` cannot name a submitted job, or None."""
    if len(name) > MAX_NAME_LENGTH:
        return f'"{name}" is longer than {MAX_NAME_LENGTH} characters (pod names <job>-<task>-<index> must fit in 63)'
    return dns1123_label_error(name)


def parse_env(text: str) -> tuple[str, str]:
    """`K=V` as (K, V); raises ValueError."""
    key, eq, value = text.partition("=")
    if not eq:
        raise ValueError(f"{text!r} is not K=V")
    if not key or key[0].isdigit() or not all(c.isalnum() or c in "_-." for c in key) or not key.isascii():
        raise ValueError(f"{key!r} is not a variable name (letters, digits, '_', '-', '.'; not starting with a digit)")
    return key, value


def parse_data(text: str) -> DataMount:
    """`SRC:DST` as a DataMount; raises ValueError. DST is below the working directory, or absolute (Arena's)."""
    source, colon, target = text.partition(":")
    if not colon or not source or not target:
        raise ValueError(f"{text!r} is not SRC:DST")
    if ":" in target or "," in text:
        raise ValueError(f"{text!r}: paths may not contain ':' or ','")
    target = posixpath.normpath(target)
    if target in (".", "/") or ".." in target.split("/"):
        raise ValueError(
            f"{target!r} must name a directory below the working directory (data/mnist) or below / (/mnist_data)"
        )
    return DataMount(source, target)


def parse_selector(text: str) -> tuple[tuple[str, str], ...]:
    """Arena's `--selector k=v[,k2=v2]` as (key, value) pairs; raises ValueError."""
    pairs = []
    for part in text.split(","):
        key, eq, value = part.strip().partition("=")
        if not eq or not key:
            raise ValueError(f"{part.strip()!r} is not a node label k=v")
        pairs.append((key.strip(), value.strip()))
    return tuple(pairs)


def parse_toleration(text: str) -> dict[str, str]:
    """Arena's `--toleration`: `all`, `KEY`, `KEY[=VALUE]:EFFECT[:OPERATOR]` or `KEY=VALUE:EFFECT,OPERATOR`; raises ValueError.

    As Arena: effects and operators are read in any case; without an operator, a value means
    Equal and none means Exists."""
    if text.strip() == "all":
        return {"operator": "Exists"}
    head, colon, rest = text.strip().partition(":")
    key, eq, value = head.partition("=")
    effect, _, operator = rest.replace(",", ":", 1).partition(":") if colon else ("", "", "")
    if not key or ":" in operator:
        raise ValueError(f"{text!r} is not all, KEY or KEY[=VALUE]:EFFECT[:OPERATOR] (e.g. gpu=a100:NoSchedule)")
    out = {"key": key}
    if effect:
        found = next((e for e in TAINT_EFFECTS if e.lower() == effect.lower()), None)
        if found is None:
            raise ValueError(f"{text!r}: the effect {effect!r} is not one of {', '.join(TAINT_EFFECTS)}")
        out["effect"] = found
    op = {"equal": "Equal", "exists": "Exists", "": "Equal" if eq else "Exists"}.get(operator.lower())
    if op is None:
        raise ValueError(f"{text!r}: the operator {operator!r} is not Equal or Exists")
    if op == "Exists" and value:
        raise ValueError(f"{text!r}: the Exists operator takes no value")
    out["operator"] = op
    if value:
        out["value"] = value
    return out


def parse_workers(text: str) -> tuple[int | None, int]:
    """`N` as (None, N) or `MIN:MAX` as (MIN, MAX); raises ValueError."""
    low, colon, high = text.partition(":")
    try:
        lo, hi = (int(low), int(high)) if colon else (None, int(text))
    except ValueError:
        raise ValueError(f"{text!r} is not a count N or a range MIN:MAX") from None
    if lo is None and hi < 1:
        raise ValueError(f"{text!r}: there must be at least 1")
    if lo is not None and not 1 <= lo <= hi:
        raise ValueError(f"{text!r}: a range MIN:MAX needs 1 <= MIN <= MAX")
    return lo, hi


def check_quantity(text: str) -> str:
    """`text` if it is a positive Kubernetes quantity (500m, 4Gi); raises ValueError."""
    try:
        value = parse_quantity(text)
    except QuantityError as e:
        raise ValueError(str(e)) from None
    if value <= 0:
        raise ValueError(f"{text!r} must be more than 0")
    return text.strip()


def command_error(command: tuple[str, ...]) -> str | None:
    """Why `command` cannot be run as given (no shell comes between), or None."""
    if not command:
        return "the command is empty"
    if len(command) == 1 and len(command[0].split()) > 1:
        return (
            f"{command[0]!r} is one word with spaces and no shell runs it: pass its words "
            f"separately (-- python train.py) or ask for a shell (-- sh -c '...')"
        )
    return None


# ---------------------------------------------------------------- builders


@dataclass(frozen=True, slots=True)
class _Role:
    """One task of a framework's job."""

    task: str
    replicas: int
    command: tuple[str, ...]
    gpus: bool = True
    min_available: int | None = None
    completes_job: bool = False


def pytorch_job(
    spec: SubmitSpec, *, workers: int, min_workers: int | None = None, elastic: bool = False
) -> dict[str, Any]:
    """A PyTorch job of `workers` pods, master included; elastic (`min_workers`..`workers` launcher pods)."""
    _require(workers >= 1, "workers must be at least 1 (the master)")
    _require(min_workers is None or 1 <= min_workers <= workers, "min_workers must be between 1 and workers")
    _require(min_workers is None or elastic, "a MIN:MAX range is for elastic jobs")
    if elastic:
        return elastic_pytorch_job(spec, workers=workers, min_workers=min_workers or workers)
    roles = [_Role("master", 1, spec.command)]
    if workers > 1:
        roles.append(_Role("worker", workers - 1, spec.command))
    # A role flag must name a task of the job (the plugin refuses one that does not): no worker flag alone.
    flags = ["--master=master", *(["--worker=worker"] if workers > 1 else []), f"--port={PYTORCH_PORT}"]
    return _job(spec, "pytorch", roles, {"pytorch": flags})


def elastic_pytorch_job(spec: SubmitSpec, *, workers: int, min_workers: int) -> dict[str, Any]:
    """`workers` launcher pods, `min_workers` of them the gang (see the module docstring)."""
    command = (*LAUNCHER, "--", *spec.command)
    role = _Role("worker", workers, command, min_available=min_workers)
    job = _job(spec, "pytorch", [role], {}, min_available=min_workers, policies=())
    job["metadata"].setdefault("annotations", {})[f"{ELASTIC_MAX_PREFIX}worker"] = str(workers)
    return job


def tensorflow_job(
    spec: SubmitSpec, *, workers: int, ps: int = 0, chief: bool = False, evaluator: bool = False
) -> dict[str, Any]:
    """A TensorFlow job: parameter servers, workers, and optionally a chief and an evaluator."""
    _require(workers >= 1, "workers must be at least 1")
    _require(ps >= 0, "ps must be at least 0")
    roles = [
        _Role("ps", ps, spec.command, gpus=False),
        _Role("worker", workers, spec.command, completes_job=not chief),
        _Role("chief", int(chief), spec.command, completes_job=True),
        _Role("evaluator", int(evaluator), spec.command),
    ]
    roles = [r for r in roles if r.replicas]
    flags = [f"--{r.task}={r.task}" for r in roles] + [f"--port={TENSORFLOW_PORT}"]
    return _job(spec, "tensorflow", roles, {"tensorflow": flags})


def paddle_job(spec: SubmitSpec, *, trainers: int, pservers: int = 0) -> dict[str, Any]:
    """A Paddle job: parameter-server mode with `pservers` > 0, else collective."""
    _require(trainers >= 1, "trainers must be at least 1")
    _require(pservers >= 0, "pservers must be at least 0")
    roles = [
        _Role("pserver", pservers, spec.command, gpus=False),
        _Role("trainer", trainers, spec.command, completes_job=pservers > 0),
    ]
    roles = [r for r in roles if r.replicas]
    flags = [f"--{r.task}={r.task}" for r in roles] + [f"--port={PADDLE_PORT}"]
    return _job(spec, "paddle", roles, {"paddle": flags})


def mpi_job(spec: SubmitSpec, *, workers: int, worker_command: tuple[str, ...] = ()) -> dict[str, Any]:
    """An MPI job: a launcher `master` running the command, and `workers` worker pods."""
    _require(workers >= 1, "workers must be at least 1")
    roles = [
        _Role("master", 1, spec.command, gpus=False, completes_job=True),
        _Role("worker", workers, worker_command or WORKER_PLACEHOLDER),
    ]
    plugins = {"mpi": ["--master=master", "--worker=worker"], "ssh": []}
    return _job(spec, "mpi", roles, plugins)


def _require(ok: bool, why: str) -> None:
    if not ok:
        raise ValueError(why)


def _job(
    spec: SubmitSpec,
    container: str,
    roles: list[_Role],
    plugins: dict[str, list[str]],
    min_available: int | None = None,
    policies: tuple[dict[str, str], ...] = _RESTART_ON_FAILURE,
) -> dict[str, Any]:
    _require(bool(spec.command), "the command is empty")
    _require(spec.retry is None or spec.retry >= 1, "retry must be at least 1 (Volcano reads maxRetry 0 as 3)")
    metadata: dict[str, Any] = {"name": spec.name, "namespace": spec.namespace}
    metadata["labels"] = {JOB_TYPE_LABEL: JOB_TYPES[container]}
    if spec.tensorboard_logdir:
        metadata["annotations"] = {TENSORBOARD_ANNOTATION: spec.tensorboard_logdir}
    job: dict[str, Any] = {
        "minAvailable": sum(r.replicas for r in roles) if min_available is None else min_available,
        "queue": spec.queue,
    }
    if spec.priority:
        job["priorityClassName"] = spec.priority
    if spec.retry is not None:
        job["maxRetry"] = spec.retry
    if policies:
        job["policies"] = [dict(p) for p in policies]
    job["plugins"] = {**plugins, "svc": [], "env": []}
    job["tasks"] = [_task(spec, container, role) for role in roles]
    return {"apiVersion": JOB_API, "kind": "Job", "metadata": metadata, "spec": job}


def _task(spec: SubmitSpec, name: str, role: _Role) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name}
    if spec.image:
        container["image"] = spec.image
    container["command"] = list(role.command)
    if spec.sync_source:
        branch = ["--branch", spec.sync_branch] if spec.sync_branch else []
        container["command"] = [*GITSYNC, "--repo", spec.sync_source, *branch, "--", *role.command]
    if spec.env:
        container["env"] = [{"name": k, "value": v} for k, v in dict(spec.env).items()]
    if spec.working_dir:
        container["workingDir"] = spec.working_dir
    if resources := _resources(spec, gpus=role.gpus):
        container["resources"] = resources
    template: dict[str, Any] = {}
    if spec.data:
        _require(all(posixpath.isabs(d.source) for d in spec.data), "data sources must be absolute paths")
        annotation = ",".join(f"{d.source}:{d.target}" for d in spec.data)
        template["metadata"] = {"annotations": {DATA_ANNOTATION: annotation}}
    pod: dict[str, Any] = {"containers": [container], "restartPolicy": "Never"}
    if spec.node_selector:
        pod["nodeSelector"] = dict(spec.node_selector)
    if spec.tolerations:
        pod["tolerations"] = [dict(t) for t in spec.tolerations]
    template["spec"] = pod
    task: dict[str, Any] = {"name": role.task, "replicas": role.replicas}
    if role.min_available is not None:
        task["minAvailable"] = role.min_available
    if role.completes_job:
        task["policies"] = [dict(p) for p in _COMPLETE_JOB]
    task["template"] = template
    return task


def _resources(spec: SubmitSpec, *, gpus: bool) -> dict[str, dict[str, str]]:
    requests = {k: v for k, v in (("cpu", spec.cpu), ("memory", spec.memory)) if v}
    out: dict[str, dict[str, str]] = {}
    if gpus and spec.gpus:
        requests[GPU] = str(spec.gpus)
        out["limits"] = {GPU: str(spec.gpus)}
    if requests:
        out = {"requests": requests, **out}
    return out
