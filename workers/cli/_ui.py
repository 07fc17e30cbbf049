"""``graphrun ui``: serve the approvers' web inbox."""

from __future__ import annotations

from typing import Annotated

import typer

from workers.cli._output import JsonOption, console, fail, json_line
from workers.errors import WorkerError


def ui(
    host: Annotated[
        str, typer.Option(help="Address to bind; beyond loopback it needs authentication.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8765,
    token: Annotated[
        str | None,
        typer.Option(
            help="A token every approver gives (basic auth password, their name as the user; "
            "or a bearer token); it names nobody: prefer --tokens-file. Prefer "
            "GRAPHRUNTIME_UI_TOKEN: a command line is visible to other users.",
            show_default=False,
        ),
    ] = None,
    tokens_file: Annotated[
        str | None,
        typer.Option(
            help="File of 'NAME TOKEN' lines, one per approver (mode 600): a token names its "
            "approver, the actor of what they resume. [env: GRAPHRUNTIME_UI_TOKENS_FILE]",
            show_default=False,
        ),
    ] = None,
    identity_header: Annotated[
        str | None,
        typer.Option(
            help="Behind an authenticating proxy: the header naming the user, believed from "
            "--trusted-proxy peers only. [env: GRAPHRUNTIME_UI_IDENTITY_HEADER]",
            show_default=False,
        ),
    ] = None,
    trusted_proxy: Annotated[
        list[str] | None,
        typer.Option(
            help="Address or network of the proxy that sets --identity-header (repeatable; "
            "default loopback). [env: GRAPHRUNTIME_UI_TRUSTED_PROXIES, comma-separated]",
            show_default=False,
        ),
    ] = None,
    claim_minutes: Annotated[
        float | None,
        typer.Option(help="How long an approver's claim on a wait lasts (default 15).", min=0.1),
    ] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Serve the approvers' web inbox: pending waits, the answers each declares, claims,
    history."""
    try:
        from workers.ui import Auth, check_bind, serve
    except ImportError as exc:
        fail(f"The web inbox needs the ui extra (pip install 'graphruntime[ui]'): {exc}", 2)
    from workers.cli._output import reach_services
    from workers.client import GraphClient
    from workers.settings import Settings

    try:
        settings = Settings()
        proxies = trusted_proxy or settings.ui_trusted_proxies.split(",")
        auth = Auth.of(
            token=token if token is not None else settings.ui_token,
            tokens_file=tokens_file if tokens_file is not None else settings.ui_tokens_file,
            identity_header=identity_header or settings.ui_identity_header,
            trusted_proxies=proxies,
        )
        check_bind(host, auth)  # before connecting to anything
    except WorkerError as exc:  # ConfigurationError: says what to set
        fail(f"{type(exc).__name__}: {exc}", 2)
    # Postgres answers, or exit 3 naming DATABASE_URL (as `graphrun worker`)
    reach_services(postgres=True, redis=False, unreachable=3)
    try:
        client = GraphClient.from_env(settings)
    except WorkerError as exc:  # ConfigurationError: says what to set
        fail(f"{type(exc).__name__}: {exc}", 2)
    minutes = claim_minutes if claim_minutes is not None else settings.ui_claim_minutes
    scope = "authentication required" if auth.required else "loopback only, no token"
    if as_json:
        json_line({"url": f"http://{host}:{port}/", "token_required": auth.required})
    else:
        console.print(f"inbox on http://{host}:{port}/ ({scope})", markup=False, highlight=False)
    try:
        serve(client, host=host, port=port, auth=auth, claim_minutes=minutes)
    finally:
        client.close()
