"""The `caldera` command: one module per verb, registered here and imported only when its verb runs.

A verb's module imports what it needs (the daemon's client, the scheduler, the simulator, the Kubernetes
client...), and importing them all took ~1.3 s of CPU before any verb ran; `caldera list` now imports
what `list` needs, and `caldera --help` none (VERBS holds each verb's one-line help).
"""

from __future__ import annotations

import gc
import importlib
import os
import sys

import click

from caldera import __version__
from caldera.core.errors import CalderaError

# verb → (its module under caldera.cli, the click command's name in it, its one-line help: `caldera --help` shows
# it without importing every verb; tests/cli_verbs/test_common.py checks it is the command's own)
VERBS: dict[str, tuple[str, str, str]] = {
    "up": ("up", "up", "Start the caldera daemon in the background (nothing to do if it already runs)."),
    "down": ("down", "down", "Stop the caldera daemon and the pods it runs."),
    "submit": ("submit", "submit", "Submit a distributed training job: caldera's options, then `--` and the command."),
    "apply": ("apply", "apply", "Create or update the Jobs and Queues described in FILE."),
    "list": ("list", "list_jobs", "List jobs: type, phase, pods running, retries, age, duration and why a job waits."),
    "get": ("get", "get", "Show JOB: phase, retries, and each pod (rank, task, phase, node, address, exit code)."),
    "describe": (
        "describe",
        "describe",
        "Describe JOB: its spec and status, its podgroup, its pods and the events about them.",
    ),
    "explain": (
        "explain",
        "explain",
        "Explain why JOB waits: per node class and for its queue, what blocks it, now or for ever.",
    ),
    "logs": (
        "logs",
        "logs",
        "Print the log of one of JOB's pods (default: the chief: the master, launcher or worker 0).",
    ),
    "top": ("top", "top", "What is allocated: per node (`top node`) or per job (`top job`)."),
    "wait": ("wait", "wait", "Wait until JOB is in PHASE; exit 1 if it ends otherwise or time runs out."),
    "delete": ("delete", "delete", "Stop the pods of each JOB and remove it."),
    "suspend": ("suspend", "suspend", "Suspend JOB: its pods stop, the job stays (Aborted) until `caldera resume`."),
    "resume": ("resume", "resume", "Resume JOB after `caldera suspend`: it is scheduled again as a whole."),
    "scale": (
        "scale",
        "scale",
        "Set the replicas of a task of JOB; an elastic job's launchers re-form the group with the new size.",
    ),
    "launch": (
        "launch",
        "launch",
        "Run COMMAND as one node of an elastic job (etcd rendezvous; see `caldera launch --help`).",
    ),
    "queue": ("queue", "queue", "Create, inspect, open, close and delete queues."),
    "priorityclass": ("priorityclass", "priorityclass", "List and create PriorityClasses."),
    "node": ("node", "node", "List nodes with their labels and taints; label and taint them."),
    "simulate": (
        "simulate",
        "simulate",
        "Replay a workload (or a trace) on a cluster on a virtual clock and report what happened.",
    ),
    "tensorboard": (
        "tensorboard",
        "tensorboard",
        "Print the URL of JOB's TensorBoard (it runs while the job exists, also after the job ends).",
    ),
    "dashboard": (
        "dashboard",
        "dashboard",
        "Print the URL of the web dashboard (and open it in a browser where one can be shown).",
    ),
    "kube": ("kube", "kube", "caldera on Kubernetes: the manifests that install it."),
    "completion": (
        "completion",
        "completion",
        "Print the shell code completing caldera's commands and job names (eval it in SHELL).",
    ),
    "docs": ("docs", "docs", "Print the URL of the API's interactive documentation (log in with the token)."),
    "controller": (
        "controller",
        "controller",
        "Run caldera's job controller and scheduler against a Kubernetes cluster (Volcano's API).",
    ),
}


class Verbs(click.Group):
    """The verbs of VERBS, each imported the first time it is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(VERBS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in VERBS:
            module, name, _ = VERBS[cmd_name]
            command = getattr(importlib.import_module(f"caldera.cli.{module}"), name)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The verbs and their one-line help, from VERBS (no verb is imported); long lines wrap."""
        rows = [(verb, VERBS[verb][2]) for verb in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=Verbs, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="caldera")
@click.option(
    "--kubeconfig",
    envvar="CALDERA_KUBECONFIG",
    metavar="PATH",
    help="talk to the Kubernetes cluster of this kubeconfig instead of the embedded daemon [env: CALDERA_KUBECONFIG]",
)
@click.pass_context
def cli(ctx: click.Context, kubeconfig: str | None) -> None:
    """caldera: gang-scheduled, elastic, fault-tolerant distributed training."""
    if kubeconfig:
        from caldera.cli.common import context  # what every verb imports anyway; not needed by --help or --version

        context(ctx).kubeconfig = kubeconfig


def main() -> None:
    """Entry point: user errors become one line on stderr and exit code 2, never a traceback."""
    try:
        _main()
    finally:
        # The process ends here. Its last cycle collection would only traverse everything the command built
        # (a second for a large simulation, whose run keeps its whole history) to free memory the OS takes
        # back at once: what exists now is left out of it. Files and connections are closed by their owners.
        gc.freeze()


def _main() -> None:
    try:
        # Out of standalone mode click returns, not raises, the code a command exits with (`ctx.exit(2)`).
        code = cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.UsageError as e:
        # Click prints usage, a hint and the error on three lines; scripts and people want one.
        hint = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
        click.echo(f"caldera: error: {e.format_message()}{hint}", err=True)
        sys.exit(2)
    except click.ClickException as e:
        click.echo(f"caldera: error: {e.format_message()}", err=True)
        sys.exit(2 if e.exit_code in (1, 2) else e.exit_code)
    except CalderaError as e:
        click.echo(f"caldera: error: {e}", err=True)
        sys.exit(2)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except Exception as e:  # a bug, not a user error: still one line, the traceback only on request
        if os.environ.get("CALDERA_DEBUG"):
            raise
        click.echo(
            f"caldera: internal error: {type(e).__name__}: {e} (set CALDERA_DEBUG=1 for the traceback)", err=True
        )
        sys.exit(1)
    if isinstance(code, int) and code:
        sys.exit(code)


if __name__ == "__main__":
    main()
