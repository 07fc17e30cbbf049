"""``graphrun ui``: serve the approvers' web inbox."""

from __future__ import annotations

from typing import Annotated

import typer

from workers.cli._output import console, fail
from workers.errors import WorkerError


def ui(
    host: Annotated[
        str, typer.Option(help="Address to bind; beyond loopback it needs a token.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8765,
    token: Annotated[
        str | None,
        typer.Option(
            help="Token approvers must give (basic auth password, any user name; or a bearer "
            "token). Prefer GRAPHRUNTIME_UI_TOKEN: a command line is visible to other users.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve the approvers' web inbox: pending waits, approve / reject / JSON, history."""
    try:
        from workers.ui import check_bind, serve
    except ImportError as exc:
        fail(f"The web inbox needs the ui extra (pip install 'graphruntime[ui]'): {exc}", 2)
    from workers.client import GraphClient
    from workers.settings import Settings

    try:
        settings = Settings()
        token = token if token is not None else settings.ui_token
        check_bind(host, token)  # before connecting to anything
        client = GraphClient.from_env(settings)
    except WorkerError as exc:  # ConfigurationError: says what to set
        fail(f"{type(exc).__name__}: {exc}", 2)
    scope = "token required" if token else "loopback only, no token"
    console.print(f"inbox on http://{host}:{port}/ ({scope})", markup=False, highlight=False)
    try:
        serve(client, host=host, port=port, token=token)
    finally:
        client.close()
