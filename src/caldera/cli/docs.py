"""`caldera docs`: where the daemon serves its interactive API documentation (Swagger UI).

It is a page of the dashboard (`/docs`), behind the same login: the login page asks for the
API token once and gives the browser a session cookie; the token never goes in a URL. This
prints the URL and where the token file is, never the token.
"""

from __future__ import annotations

import click

from caldera.cli.common import Verb, cluster, home
from caldera.client.home import TOKEN_FILE


@click.command(cls=Verb)
@click.pass_context
def docs(ctx: click.Context) -> None:
    """Print the URL of the API's interactive documentation (log in with the token)."""
    click.echo(str(cluster(ctx).info().get("listening") or "").rstrip("/") + "/docs")
    click.echo(f"log in with the token in {home(ctx).resolve() / TOKEN_FILE}", err=True)
