"""Who may use the inbox, and which form posts count: authentication, CSRF, headers.

Without authentication (:class:`~workers.ui._identity.Auth`) the inbox serves
loopback only: the peer must be a loopback address and the ``Host`` header must name
one (so a page elsewhere cannot reach it through DNS rebinding). With it, every request
must authenticate, and its actor is the identity it gives.

A form post must carry the CSRF token the page rendered for its submission key (an
HMAC no other site can compute) and, when the browser sends an ``Origin`` (or
``Referer``), come from this host.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import json
import re
import secrets
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workers.errors import ConfigurationError
from workers.ui._identity import Auth, Denied

MAX_BODY = 1 << 20
"""Largest form post accepted (bytes)."""

_SUBMISSION = re.compile(r"^[0-9a-f]{32}$")
_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}

SECURITY_HEADERS = {
    # No inline script or style anywhere: the page's own files only, and no framing.
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, without port) is this machine only."""
    host = host.strip("[]").lower()
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, auth: Auth | str | None) -> None:
    """Refuse to serve beyond loopback without authentication."""
    if not isinstance(auth, Auth):
        auth = Auth.of(token=auth)
    if not auth.required and not is_loopback(host):
        raise ConfigurationError(
            f"Refusing to serve the inbox on {host!r} without a token: anyone who can reach "
            "it could resume threads. Set GRAPHRUNTIME_UI_TOKENS_FILE (one token per "
            "approver), GRAPHRUNTIME_UI_TOKEN (or --token) or GRAPHRUNTIME_UI_IDENTITY_HEADER "
            "behind an authenticating proxy, or bind 127.0.0.1."
        )


def _host_of(host_header: str) -> str:
    """The host part of a ``Host`` header (``[::1]:8000`` -> ``::1``)."""
    return urlsplit(f"//{host_header}").hostname or ""


class Csrf:
    """Form tokens: an HMAC of each form's submission key."""

    def __init__(self, seed: bytes | None) -> None:
        # from the tokens when there are some, so forms survive restarts and replicas agree
        self._key = hashlib.sha256(
            b"graphrun-ui-csrf\0" + (seed or secrets.token_bytes(32))
        ).digest()

    @staticmethod
    def new_submission() -> str:
        return secrets.token_hex(16)

    def token_for(self, submission: str) -> str:
        return hmac.new(self._key, submission.encode(), hashlib.sha256).hexdigest()

    def check(self, submission: str, token: str) -> bool:
        if not _SUBMISSION.match(submission):
            return False
        return hmac.compare_digest(self.token_for(submission), token)

    def seal(self, data: Any) -> str:
        """``data`` (JSON) as URL-safe text that :meth:`unseal` gives back unchanged."""
        raw = base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode()
        mac = hmac.new(self._key, b"seal\0" + raw.encode(), hashlib.sha256).hexdigest()[:32]
        return f"{raw}.{mac}"

    def unseal(self, text: str) -> Any:
        """What :meth:`seal` sealed, or None for anything this inbox did not make."""
        raw, _, mac = text.rpartition(".")
        want = hmac.new(self._key, b"seal\0" + raw.encode(), hashlib.sha256).hexdigest()[:32]
        if not raw or not hmac.compare_digest(want, mac):
            return None
        try:
            return json.loads(base64.urlsafe_b64decode(raw.encode()))
        except ValueError:
            return None


class Guard:
    """ASGI middleware: refuses what may not reach the inbox; sets ``state.actor``."""

    def __init__(self, app: ASGIApp, *, auth: Auth) -> None:
        self.app = app
        self.auth = auth

    def _refusal(self, scope: Scope) -> Response | None:
        headers = Headers(scope=scope)
        peer = (scope.get("client") or ("", 0))[0]
        if not self.auth.required and (
            not is_loopback(peer) or not is_loopback(_host_of(headers.get("host", "")))
        ):
            return PlainTextResponse(
                "This inbox has no token and serves loopback only (127.0.0.1 or "
                "localhost). Set GRAPHRUNTIME_UI_TOKENS_FILE or GRAPHRUNTIME_UI_TOKEN to "
                "serve it elsewhere.",
                status_code=403,
            )
        actor = self.auth.actor(headers, peer)
        if isinstance(actor, Denied):
            return PlainTextResponse(
                (actor.reason + " " if actor.reason else "")
                + "The inbox needs your token: HTTP basic auth with your name as the user "
                "and your token as the password, or an 'Authorization: Bearer' header.",
                status_code=401,
                headers={"www-authenticate": 'Basic realm="graphrun inbox"'},
            )
        scope.setdefault("state", {})["actor"] = actor
        if scope["method"] not in ("GET", "HEAD"):
            return self._post_refusal(headers)
        return None

    def _post_refusal(self, headers: Headers) -> Response | None:
        source = headers.get("origin") or headers.get("referer")
        if source is not None and urlsplit(source).netloc != headers.get("host"):
            return PlainTextResponse(
                "This form was not sent from this inbox's page; nothing was changed.",
                status_code=403,
            )
        length = headers.get("content-length")
        if length is None or not length.isdigit():
            return PlainTextResponse("A form post needs a Content-Length.", status_code=411)
        if int(length) > MAX_BODY:
            return PlainTextResponse(
                f"The form is larger than {MAX_BODY} bytes; nothing was changed.", status_code=413
            )
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                raw = list(message.get("headers", []))
                present = {name.lower() for name, _ in raw}
                for name, value in SECURITY_HEADERS.items():
                    if name.encode() not in present:
                        raw.append((name.encode(), value.encode()))
                message["headers"] = raw
            await send(message)

        refusal = self._refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)
