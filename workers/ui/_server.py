"""Serving the inbox with uvicorn, refusing to expose it without a token."""

from __future__ import annotations

from workers.client import GraphClient
from workers.ui._app import create_app
from workers.ui._guard import check_bind


def serve(
    client: GraphClient,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    log_level: str = "info",
) -> None:
    """Serve the inbox until interrupted (Ctrl-C).

    Raises :class:`~workers.errors.ConfigurationError` before binding when ``host`` is
    not a loopback address and there is no ``token``.
    """
    import uvicorn

    check_bind(host, token)
    app = create_app(client, token=token)
    uvicorn.run(app, host=host, port=port, log_level=log_level, proxy_headers=False)
