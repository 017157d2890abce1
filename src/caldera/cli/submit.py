"""`caldera submit pytorch|tf|paddle|mpi`: Arena's submit, turned into a Volcano Job.

Flags are parsed and checked here, one usage error (exit code 2) naming the flag per
mistake; `caldera.cli.submitspec` builds the manifest, which is checked once more with
`parse_job` so nothing invalid is sent. `--dry-run` prints it as YAML instead.

Command-line choices:
- The training command follows `--` and is required: everything after `--` is the
  user's, so `python train.py --workers 3` can never be taken for caldera's flags. A
  command given as one quoted string with spaces is refused (no shell runs it); say
  `-- sh -c '...'` for a shell.
- `--workers` counts the master for pytorch, as in Arena; tf and mpi count workers only.
  `--workers MIN:MAX` is accepted only with `--elastic`; `--elastic --workers N` is N:N.
- `--data SRC:DST`: SRC is made absolute here (the daemon has another working
  directory) and must exist; DST is relative to where the command runs, or absolute as in
  Arena (`--data ~/mnist:/mnist_data`: the command's `/mnist_data/...` reads SRC).
- `--tensorboard` needs `--logdir` (Arena's default `/training_logs` means nothing on this
  machine), and `--logdir` needs `--tensorboard`.
- `--retry N` needs N ≥ 1: Volcano reads `maxRetry: 0` as its default 3, so 0 has no
  manifest spelling. Without `--retry`, 3 restarts are allowed.
- Arena's type names are aliases: pytorchjob, tfjob, tensorflow, paddlejob, mpijob.
- `--selector k=v` (repeatable, or `k=v,k2=v2`) and `--toleration` go into every pod
  template; `--priority CLASS` must name a PriorityClass of the cluster (the daemon
  refuses the job otherwise, as Arena checks before submitting).
- `--sync-mode git --sync-source SRC [--sync-branch B]`: SRC is a repository URL or the
  path of a local repository (made absolute here); `rsync` and `hdfs` are Arena's other
  modes, which caldera does not have. Without `--working-dir` the pods then run in their
  own directory, where the code is cloned (`code/<repository name>`, as Arena's).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from typing import Any, TypeVar

import click
import yaml

from caldera.cli._client_hook import submit_manifest
from caldera.cli.submitspec import (
    DataMount,
    SubmitSpec,
    check_quantity,
    command_error,
    mpi_job,
    name_error,
    paddle_job,
    parse_data,
    parse_env,
    parse_selector,
    parse_toleration,
    parse_workers,
    pytorch_job,
    tensorflow_job,
)
from caldera.core.errors import ValidationError
from caldera.core.jobmanifest import parse_job
from caldera.core.validation import dns1123_label_error, dns1123_subdomain_error

_F = TypeVar("_F", bound=Callable[..., Any])
_ALIASES = {"pytorchjob": "pytorch", "tfjob": "tf", "tensorflow": "tf", "paddlejob": "paddle", "mpijob": "mpi"}


def _via(parse: Callable[[str], object]) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """An option callback applying `parse` (which raises ValueError) to each value given."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        try:
            if isinstance(value, tuple):  # a `multiple` option
                return tuple(parse(v) for v in value)
            return value if value is None else parse(value)
        except ValueError as e:
            raise click.BadParameter(str(e), ctx, param) from None

    return callback


def _checked(rule: Callable[[str], str | None]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if (why := rule(text)) is not None:
            raise ValueError(why)
        return text

    return parse


def _data(text: str) -> DataMount:
    mount = parse_data(text)
    source = os.path.abspath(os.path.expanduser(mount.source))
    if not os.path.exists(source):
        raise ValueError(f"{mount.source!r} does not exist on this machine")
    return DataMount(source, mount.target)


def _sync_source(text: str) -> str:
    if "://" in text or (":" in text.split("/", 1)[0] and "@" in text.split(":", 1)[0]):
        return text  # a URL, or scp-like user@host:path
    path = os.path.abspath(os.path.expanduser(text))
    if not os.path.isdir(path):
        raise ValueError(f"{text!r} is neither a repository URL nor a directory on this machine")
    return path


def _retry(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    if value is not None and value < 1:
        raise click.BadParameter("must be at least 1: Volcano reads maxRetry 0 as its default, 3", ctx, param)
    return value


def _working_dir(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty")
    return text


class _TrainingCommand(click.Command):
    """A submit command: caldera's options, then `--`, then the training command (`command` param)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ours, dashes, theirs = _split(args)
        asks_help = any(a in ctx.help_option_names for a in ours)
        if not dashes and not asks_help and not ctx.resilient_parsing:
            raise click.UsageError(
                f"the training command is missing: put it after `--`, as in "
                f"`{ctx.command_path} --name NAME -- python train.py`",
                ctx,
            )
        rest = super().parse_args(ctx, ours)
        command = tuple(theirs)
        if not ctx.resilient_parsing and (why := command_error(command)) is not None:
            raise click.UsageError(f"after `--`: {why}", ctx)
        ctx.params["command"] = command
        return rest


def _split(args: list[str]) -> tuple[list[str], bool, list[str]]:
    if "--" not in args:
        return args, False, []
    at = args.index("--")
    return args[:at], True, args[at + 1 :]


class _SubmitGroup(click.Group):
    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, _ALIASES.get(cmd_name, cmd_name))


_COMMON = (
    click.option(
        "--name", required=True, metavar="NAME", callback=_via(_checked(name_error)), help="Job name (DNS-1123 label)."
    ),
    click.option(
        "-n",
        "--namespace",
        default="default",
        show_default=True,
        metavar="NS",
        callback=_via(_checked(dns1123_label_error)),
    ),
    click.option(
        "--image", default="", help="Container image (kept in the manifest; the embedded cluster ignores it)."
    ),
    click.option(
        "--gpus",
        type=click.IntRange(min=0),
        default=0,
        help="nvidia.com/gpu per pod (parameter servers and the MPI launcher get none).",
    ),
    click.option("--cpu", metavar="QUANTITY", callback=_via(check_quantity), help="CPU per pod, like 2 or 500m."),
    click.option("--memory", metavar="QUANTITY", callback=_via(check_quantity), help="Memory per pod, like 4Gi."),
    click.option(
        "--queue",
        default="default",
        show_default=True,
        metavar="QUEUE",
        callback=_via(_checked(dns1123_subdomain_error)),
    ),
    click.option("-p", "--priority", metavar="CLASS", callback=_via(_checked(dns1123_subdomain_error))),
    click.option(
        "-e", "--env", multiple=True, metavar="K=V", callback=_via(parse_env), help="Environment variable (repeatable)."
    ),
    click.option(
        "--working-dir",
        metavar="DIR",
        callback=_via(_working_dir),
        help="The command's working directory (default: the current directory).",
    ),
    click.option(
        "-d",
        "--data",
        multiple=True,
        metavar="SRC:DST",
        callback=_via(_data),
        help="Host path SRC as DST in the pod's directory.",
    ),
    click.option(
        "--tensorboard", is_flag=True, help="Start TensorBoard on --logdir for the job (see `caldera tensorboard JOB`)."
    ),
    click.option("--logdir", help="TensorBoard log directory (with --tensorboard)."),
    click.option(
        "--retry", type=int, callback=_retry, help="Whole-job restarts allowed (maxRetry; Volcano's default 3)."
    ),
    click.option(
        "--selector",
        multiple=True,
        metavar="K=V",
        callback=_via(parse_selector),
        help="Run on nodes with this label (repeatable; Arena's, a nodeSelector).",
    ),
    click.option(
        "--toleration",
        multiple=True,
        metavar="KEY[=VALUE]:EFFECT|all",
        callback=_via(parse_toleration),
        help="Tolerate a node taint (repeatable; `all`: every taint).",
    ),
    click.option(
        "--sync-mode", type=click.Choice(["git"]), help="Fetch the code into each pod first (Arena's git-sync)."
    ),
    click.option("--sync-source", metavar="URL|DIR", callback=_via(_sync_source), help="The repository to clone."),
    click.option("--sync-branch", metavar="BRANCH", help="The branch or tag to clone (default: the repository's)."),
    click.option("--dry-run", is_flag=True, help="Print the Job manifest as YAML; submit nothing."),
)


def _common_options(f: _F) -> _F:
    for option in reversed(_COMMON):
        f = option(f)
    return f


def _spec(
    *,
    name: str,
    namespace: str,
    image: str,
    gpus: int,
    cpu: str | None,
    memory: str | None,
    queue: str,
    priority: str | None,
    env: tuple[tuple[str, str], ...],
    working_dir: str | None,
    data: tuple[DataMount, ...],
    tensorboard: bool,
    logdir: str | None,
    retry: int | None,
    selector: tuple[tuple[tuple[str, str], ...], ...],
    toleration: tuple[dict[str, str], ...],
    sync_mode: str | None,
    sync_source: str | None,
    sync_branch: str | None,
    command: tuple[str, ...],
) -> SubmitSpec:
    if tensorboard and not logdir:
        raise click.UsageError("--tensorboard needs --logdir DIR")
    if logdir and not tensorboard:
        raise click.UsageError("--logdir is used only with --tensorboard")
    if sync_mode and not sync_source:
        raise click.UsageError("--sync-mode git needs --sync-source URL|DIR")
    if (sync_source or sync_branch) and not sync_mode:
        raise click.UsageError("--sync-source and --sync-branch go with --sync-mode git")
    if not working_dir and not sync_mode:
        working_dir = os.getcwd()  # like running it here: relative paths in the command work
    return SubmitSpec(
        name=name,
        command=command,
        namespace=namespace,
        image=image,
        gpus=gpus,
        cpu=cpu or "",
        memory=memory or "",
        queue=queue,
        priority=priority or "",
        env=env,
        working_dir=working_dir or "",  # with --sync-mode: the pod's directory, where the code is cloned
        data=data,
        tensorboard_logdir=logdir or "",
        retry=retry,
        node_selector=tuple(pair for pairs in selector for pair in pairs),
        tolerations=toleration,
        sync_source=sync_source or "",
        sync_branch=sync_branch or "",
    )


def _submit(manifest: dict[str, Any], dry_run: bool) -> None:
    try:
        parse_job(manifest)
    except ValidationError as e:
        raise click.UsageError(f"the job would be invalid: {e}") from None
    if dry_run:
        click.echo(yaml.safe_dump(manifest, sort_keys=False), nl=False)
        return
    submit_manifest(manifest)
    meta = manifest["metadata"]
    click.echo(f"job {meta['namespace']}/{meta['name']} submitted")


_USAGE = "[OPTIONS] -- COMMAND..."


@click.group(cls=_SubmitGroup)
def submit() -> None:
    """Submit a distributed training job: caldera's options, then `--` and the command."""


@submit.command(cls=_TrainingCommand, options_metavar=_USAGE)
@click.option(
    "--workers",
    default="1",
    show_default=True,
    metavar="N|MIN:MAX",
    callback=_via(parse_workers),
    help="Pods, the master included; MIN:MAX with --elastic.",
)
@click.option("--elastic", is_flag=True, help="Elastic job: the gang is MIN pods of MAX.")
@_common_options
def pytorch(workers: tuple[int | None, int], elastic: bool, dry_run: bool, **common: Any) -> None:
    """PyTorch: a master and --workers minus one workers (PyTorchJob)."""
    low, high = workers
    if low is not None and not elastic:
        raise click.BadParameter("MIN:MAX is for elastic jobs: add --elastic", param_hint="'--workers'")
    _submit(pytorch_job(_spec(**common), workers=high, min_workers=low, elastic=elastic), dry_run)


@submit.command(cls=_TrainingCommand, options_metavar=_USAGE)
@click.option("--ps", type=click.IntRange(min=0), default=0, show_default=True, help="Parameter servers.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Workers.")
@click.option("--chief", is_flag=True, help="Add a chief; the job is done when it completes.")
@click.option("--evaluator", is_flag=True, help="Add an evaluator.")
@_common_options
def tf(ps: int, workers: int, chief: bool, evaluator: bool, dry_run: bool, **common: Any) -> None:
    """TensorFlow: parameter servers, workers, an optional chief and evaluator (TFJob)."""
    _submit(tensorflow_job(_spec(**common), workers=workers, ps=ps, chief=chief, evaluator=evaluator), dry_run)


@submit.command(cls=_TrainingCommand, options_metavar=_USAGE)
@click.option("--pservers", type=click.IntRange(min=0), default=0, show_default=True, help="0: collective mode.")
@click.option("--trainers", type=click.IntRange(min=1), default=1, show_default=True, help="Trainers.")
@_common_options
def paddle(pservers: int, trainers: int, dry_run: bool, **common: Any) -> None:
    """PaddlePaddle: parameter-server mode with --pservers, else collective."""
    _submit(paddle_job(_spec(**common), trainers=trainers, pservers=pservers), dry_run)


@submit.command(cls=_TrainingCommand, options_metavar=_USAGE)
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Workers (not the launcher).")
@click.option(
    "--worker-command",
    metavar="CMD",
    callback=_via(shlex.split),
    help="What workers run (default: wait until stopped; mpirun reaches them through the hostfile).",
)
@_common_options
def mpi(workers: int, worker_command: list[str] | None, dry_run: bool, **common: Any) -> None:
    """MPI: a launcher (master) running the command, and --workers workers (MPIJob)."""
    _submit(mpi_job(_spec(**common), workers=workers, worker_command=tuple(worker_command or ())), dry_run)
