"""`caldera dashboard`: where the daemon serves its web dashboard; opened in a browser where one can show it.

The URL is the daemon's own (as /info says it listens), and the login page asks for the
API token: this prints where the token file is, never the token, and never puts it in a URL.
A browser is opened only when asked (--open) or, by default, when a display is there to
show one (DISPLAY or WAYLAND_DISPLAY set, or macOS): on a server over ssh it only prints.
"""

from __future__ import annotations

import os
import sys
import webbrowser

import click

from caldera.cli.common import Verb, cluster, home
from caldera.client.home import TOKEN_FILE


@click.command(cls=Verb)
@click.option(
    "--open/--no-open", "open_browser", default=None, help="open it in a browser [default: if a display is there]"
)
@click.pass_context
def dashboard(ctx: click.Context, open_browser: bool | None) -> None:
    """Print the URL of the web dashboard (and open it in a browser where one can be shown)."""
    url = str(cluster(ctx).info().get("listening") or "").rstrip("/") + "/"
    click.echo(url)
    click.echo(f"log in with the token in {home(ctx).resolve() / TOKEN_FILE}", err=True)
    if open_browser is None:
        open_browser = can_show_a_browser()
    if open_browser and not webbrowser.open(url):
        click.echo("caldera: no browser could be opened: open the URL above", err=True)


def can_show_a_browser() -> bool:
    return sys.platform in ("darwin", "win32") or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
