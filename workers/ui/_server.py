"""Serving the inbox with uvicorn, refusing to expose it without authentication."""

from __future__ import annotations

from workers.client import GraphClient
from workers.ui._app import create_app
from workers.ui._guard import check_bind
from workers.ui._identity import Auth


def serve(
    client: GraphClient,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    auth: Auth | None = None,
    claim_minutes: float = 15,
    log_level: str = "info",
) -> None:
    """Serve the inbox until interrupted (Ctrl-C).

    Raises :class:`~workers.errors.ConfigurationError` before binding when ``host`` is
    not a loopback address and ``auth`` requires nothing.
    """
    import uvicorn

    auth = auth or Auth.of()
    check_bind(host, auth)
    app = create_app(client, auth=auth, claim_minutes=claim_minutes)
    uvicorn.run(app, host=host, port=port, log_level=log_level, proxy_headers=False)
