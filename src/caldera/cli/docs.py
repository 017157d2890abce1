"""`caldera docs`: where the daemon's interactive API documentation is, with the token that opens it.

The daemon serves it at `/docs` behind the same token as its API: opening
`<url>/docs?token=<token>` once gives the browser a cookie holding the token (HttpOnly,
SameSite=Strict: no other site can use it), and the page then calls the API with it.
The token is `$CALDERA_HOME/token`; keep the URL to yourself as you would the token.
"""

from __future__ import annotations

import click

from caldera.cli.common import Verb, fail, home
from caldera.client import NOT_RUNNING, read_token, running_daemon


@click.command(cls=Verb)
@click.pass_context
def docs(ctx: click.Context) -> None:
    """Print the URL of the API's interactive documentation (with the token)."""
    where = home(ctx)
    daemon = running_daemon(where)
    if daemon is None:
        fail(ctx, NOT_RUNNING)
    click.echo(f"{daemon.url}/docs?token={read_token(where)}")
