"""Who may call the API, and how big a request may be.

Without ``GRAPHRUNTIME_API_TOKEN`` the server answers loopback peers only (and refuses
to start on another address); with it, every request but ``/ok`` carries the token as
``x-api-key`` or ``Authorization: Bearer``, as LangGraph's clients send it. A body
over the limit is refused (413) before any handler sees it.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workers.errors import ConfigurationError

MIN_TOKEN = 16
OPEN_PATHS = frozenset({"/ok"})


def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host in ("localhost", "localhost.localdomain", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_token(token: str | None) -> str | None:
    if token is None or token == "":
        return None
    if len(token) < MIN_TOKEN or token != token.strip():
        raise ConfigurationError(
            f"GRAPHRUNTIME_API_TOKEN must be at least {MIN_TOKEN} characters without "
            "surrounding spaces; make one with: python -c 'import secrets; "
            "print(secrets.token_urlsafe())'"
        )
    return token


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve beyond loopback without a token."""
    if check_token(token) is None and not is_loopback(host):
        raise ConfigurationError(
            f"Refusing to serve the API on {host!r} without a token: anyone who can reach it "
            "could start, resume and cancel runs. Set GRAPHRUNTIME_API_TOKEN, or bind 127.0.0.1."
        )


async def _reply(send: Send, status: int, detail: str, headers: list[Any] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class Guard:
    """ASGI middleware: authentication (sets ``state.actor``) and the body size limit."""

    def __init__(self, app: ASGIApp, *, token: str | None, max_body: int) -> None:
        self.app = app
        self.token = check_token(token)
        self.max_body = max_body

    def _actor(self, headers: Headers) -> str | None:
        assert self.token is not None
        given = headers.get("x-api-key")
        if given is None:
            scheme, _, credentials = headers.get("authorization", "").partition(" ")
            given = credentials.strip() if scheme.lower() == "bearer" else None
        if given is not None and hmac.compare_digest(given.encode(), self.token.encode()):
            return "api"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if scope["path"] not in OPEN_PATHS:
            if self.token is None:
                peer = (scope.get("client") or ("", 0))[0]
                if not is_loopback(peer):
                    await _reply(
                        send,
                        403,
                        "This server has no token and answers loopback only; set "
                        "GRAPHRUNTIME_API_TOKEN to serve other hosts.",
                    )
                    return
                actor = "api"
            else:
                found = self._actor(headers)
                if found is None:
                    await _reply(
                        send,
                        401,
                        "Missing or wrong API token: send it as the x-api-key header or as "
                        "'Authorization: Bearer <token>'.",
                    )
                    return
                actor = found
            scope.setdefault("state", {})["actor"] = actor
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            await _reply(
                send, 413, f"The request body is over {self.max_body} bytes; nothing was changed."
            )
            return
        if scope["method"] in ("POST", "PUT", "PATCH", "DELETE") and length is None:
            bounded = await self._bounded(receive, send)
            if bounded is None:
                return
            receive = bounded
        await self.app(scope, receive, send)

    def _too_big(self) -> str:
        return f"The request body is over {self.max_body} bytes; nothing was changed."

    async def _bounded(self, receive: Receive, send: Send) -> Receive | None:
        """A chunked body read whole (up to the limit) and replayed; None: refused."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await _reply(
                    send,
                    413,
                    f"The request body is over {self.max_body} bytes; nothing was changed.",
                )
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay
