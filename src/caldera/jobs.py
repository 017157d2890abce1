"""Job builders for Python programs and notebooks: `caldera.jobs.pytorch(name=..., workers=..., command=[...])`.

Each builder returns the Volcano Job manifest (a plain dict) that `caldera submit` would
send with the same options, checked by the same rules, so it can be printed, changed and
submitted with the client::

    import caldera.jobs
    from caldera.client import connect

    job = caldera.jobs.pytorch(name="ddp", workers=3, command=["python", "train.py"])
    with connect() as client:          # the daemon of $CALDERA_HOME (`caldera up`)
        client.apply(job)
        print(client.wait_job("default", "ddp")["phase"])

The options are `caldera submit`'s, keyword only (see `docs/sdk.md`); the command runs in
`working_dir`, by default the directory the builder is called from (a notebook's), as
`caldera submit` runs it where it is typed. A builder raises ValidationError for options
the job could not run with, naming the option. The manifests themselves are built by
`caldera.cli.submitspec`, whose rules this module only exposes under Python names.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from caldera.cli.submitspec import (
    DataMount,
    SubmitSpec,
    mpi_job,
    paddle_job,
    parse_data,
    parse_toleration,
    pytorch_job,
    tensorflow_job,
)
from caldera.core.errors import FieldError, ValidationError
from caldera.core.jobmanifest import parse_job

__all__ = ["mpi", "paddle", "pytorch", "tensorflow"]

Manifest = dict[str, Any]


def pytorch(
    *,
    name: str,
    command: Sequence[str],
    workers: int = 1,
    elastic: bool = False,
    min_workers: int | None = None,
    **options: Any,
) -> Manifest:
    """A PyTorch job of `workers` pods, the master included (Arena's count); `elastic`: MIN..MAX launcher pods.

    With `elastic=True`, `min_workers` (default `workers`) pods make the gang and the job grows
    to `workers`; see `docs/elastic.md`."""
    spec = _spec(name, command, options)
    return _checked(lambda: pytorch_job(spec, workers=workers, min_workers=min_workers, elastic=elastic))


def tensorflow(
    *,
    name: str,
    command: Sequence[str],
    workers: int = 1,
    ps: int = 0,
    chief: bool = False,
    evaluator: bool = False,
    **options: Any,
) -> Manifest:
    """A TensorFlow job: `ps` parameter servers, `workers` workers, an optional chief and evaluator (TF_CONFIG)."""
    spec = _spec(name, command, options)
    return _checked(lambda: tensorflow_job(spec, workers=workers, ps=ps, chief=chief, evaluator=evaluator))


def paddle(*, name: str, command: Sequence[str], trainers: int = 1, pservers: int = 0, **options: Any) -> Manifest:
    """A PaddlePaddle job: parameter-server mode with `pservers` > 0, else collective."""
    spec = _spec(name, command, options)
    return _checked(lambda: paddle_job(spec, trainers=trainers, pservers=pservers))


def mpi(
    *, name: str, command: Sequence[str], workers: int = 1, worker_command: Sequence[str] = (), **options: Any
) -> Manifest:
    """An MPI job: a launcher running `command` (mpirun ...) and `workers` workers (the hostfile names them)."""
    spec = _spec(name, command, options)
    return _checked(lambda: mpi_job(spec, workers=workers, worker_command=tuple(worker_command)))


_OPTIONS = {
    "namespace": "the job's namespace (default: default)",
    "image": "the container image, kept in the manifest",
    "gpus": "nvidia.com/gpu per pod (not on parameter servers nor the MPI launcher)",
    "cpu": "CPU per pod, a quantity (500m, 2)",
    "memory": "memory per pod, a quantity (4Gi)",
    "queue": "the queue (default: default)",
    "priority": "a PriorityClass name",
    "env": "environment variables, a mapping",
    "working_dir": "where the command runs (default: the current directory)",
    "data": "host directories SRC:DST seen at DST in the pod",
    "selector": "node labels the pods need, a mapping (nodeSelector)",
    "tolerations": "taints to tolerate, in `--toleration`'s spellings",
    "tensorboard_logdir": "start TensorBoard on this log directory",
    "retry": "whole-job restarts allowed (maxRetry)",
    "sync_source": "a git repository (URL or local path) cloned into each pod first",
    "sync_branch": "its branch or tag",
}


def _spec(name: str, command: Sequence[str], options: Mapping[str, Any]) -> SubmitSpec:
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise TypeError(f"unknown option {unknown[0]!r}; the options are: {', '.join(_OPTIONS)}")
    o = dict(options)
    try:
        data = tuple(_data(d) for d in o.pop("data", ()))
        tolerations = tuple(parse_toleration(t) for t in o.pop("tolerations", ()))
    except ValueError as e:
        raise ValidationError([FieldError("", str(e))], f"job {name}") from None
    sync = str(o.pop("sync_source", "") or "")
    working_dir = o.pop("working_dir", None)
    return SubmitSpec(
        name=name,
        command=tuple(command),
        env=tuple((str(k), str(v)) for k, v in dict(o.pop("env", None) or {}).items()),
        data=data,
        tolerations=tolerations,
        node_selector=tuple((str(k), str(v)) for k, v in dict(o.pop("selector", None) or {}).items()),
        working_dir=working_dir if working_dir is not None else ("" if sync else os.getcwd()),
        sync_source=os.path.abspath(sync) if sync and "://" not in sync and os.path.isdir(sync) else sync,
        **{k: v for k, v in o.items() if v is not None},
    )


def _data(text: str) -> DataMount:
    mount = parse_data(text)
    return DataMount(os.path.abspath(os.path.expanduser(mount.source)), mount.target)


def _checked(build: Callable[[], Manifest]) -> Manifest:
    """The builder's manifest, checked as `caldera submit` checks it; one ValidationError otherwise."""
    try:
        manifest = build()
    except ValueError as e:
        raise ValidationError([FieldError("", str(e))]) from None
    parse_job(manifest, f"job {manifest['metadata']['name']}")
    return manifest
