"""`caldera completion bash|zsh|fish`: the shell code that completes caldera's verbs, options and names.

Load it once per shell, or put the line in the shell's start-up file:

    eval "$(caldera completion bash)"        # ~/.bashrc
    eval "$(caldera completion zsh)"         # ~/.zshrc
    caldera completion fish | source         # ~/.config/fish/config.fish

Besides verbs and options it completes the names a verb takes, asking the daemon: jobs
(for `get`, `logs`, `describe`, `delete`, `wait`, ... of the `-n` namespace given so far),
queues and nodes. It is click's shell completion: the shell calls `caldera` with
`_CALDERA_COMPLETE` set in its environment.
"""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

from caldera.cli.common import Verb

PROG = "caldera"
COMPLETE_VAR = "_CALDERA_COMPLETE"


@click.command(cls=Verb)
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the shell code completing caldera's commands and job names (eval it in SHELL)."""
    root = ctx.find_root().command
    cls = get_completion_class(shell)
    assert cls is not None  # the three choices are click's own shells
    click.echo(cls(root, {}, PROG, COMPLETE_VAR).source())
