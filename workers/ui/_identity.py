"""Who is answering: each request's actor, from the inbox's authentication.

Four ways, any of the first three may be combined:

- a **tokens file** (``GRAPHRUNTIME_UI_TOKENS_FILE``): one approver per line, ``NAME
  TOKEN`` (or ``NAME sha256:HEX``, the token's SHA-256); the token given (basic-auth
  password or bearer) names its approver, who is the actor. The file must not be
  readable by group or others.
- a **trusted proxy header** (``GRAPHRUNTIME_UI_IDENTITY_HEADER``, e.g.
  ``X-Forwarded-User``), honoured only from the peers listed in
  ``GRAPHRUNTIME_UI_TRUSTED_PROXIES`` (default: loopback), where an authenticating
  proxy sets it; its value is the actor.
- a **shared token** (``GRAPHRUNTIME_UI_TOKEN``): it names nobody; the basic-auth user
  name is taken as the actor as typed (unverified), a bearer token acts as ``ui``.
- **none** (loopback only): the actor is the user running the inbox.
"""

from __future__ import annotations

import base64
import binascii
import getpass
import hashlib
import hmac
import ipaddress
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from starlette.datastructures import Headers

from workers.errors import ConfigurationError
from workers.messages import MAX_NAME

MIN_TOKEN = 16
_NAME = re.compile(r"^[^\x00-\x1f\x7f]{1," + str(MAX_NAME) + r"}$")
_DIGEST = re.compile(r"^sha256:([0-9a-f]{64})$")

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def check_token(token: str | None) -> str | None:
    """The token, or None when there is none; a short one is refused."""
    if token is None or token == "":
        return None
    if len(token) < MIN_TOKEN or token != token.strip():
        raise ConfigurationError(
            f"The inbox token must be at least {MIN_TOKEN} characters without surrounding "
            "spaces; make one with: python -c 'import secrets; print(secrets.token_urlsafe())'"
        )
    return token


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def read_tokens(path: str | Path) -> dict[str, str]:
    """A tokens file as ``{sha256 of token: approver}``; refused with the line at fault."""
    file = Path(path)
    try:
        mode = file.stat().st_mode
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"GRAPHRUNTIME_UI_TOKENS_FILE: cannot read {file}: {exc}") from exc
    if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigurationError(
            f"GRAPHRUNTIME_UI_TOKENS_FILE: {file} is readable by others; chmod 600 it."
        )
    tokens: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, secret = line.rpartition(" ")
        name = name.strip()
        where = f"GRAPHRUNTIME_UI_TOKENS_FILE: {file} line {number}"
        if not _NAME.match(name):
            raise ConfigurationError(f"{where}: write NAME TOKEN (or NAME sha256:HEX).")
        match = _DIGEST.match(secret)
        if match:
            digest = match.group(1)
        else:
            try:
                check_token(secret)
            except ConfigurationError as exc:
                raise ConfigurationError(f"{where}: {exc}") from None
            digest = _digest(secret)
        if digest in tokens:
            raise ConfigurationError(f"{where}: this token is given to another approver too.")
        tokens[digest] = name
    if not tokens:
        raise ConfigurationError(f"GRAPHRUNTIME_UI_TOKENS_FILE: {file} names no approver.")
    return tokens


def parse_proxies(values: Iterable[str]) -> tuple[Network, ...]:
    try:
        return tuple(ipaddress.ip_network(v.strip(), strict=False) for v in values if v.strip())
    except ValueError as exc:
        raise ConfigurationError(
            f"GRAPHRUNTIME_UI_TRUSTED_PROXIES takes addresses or networks: {exc}"
        ) from exc


_LOOPBACK = parse_proxies(["127.0.0.0/8", "::1/128"])


@dataclass(frozen=True)
class Denied:
    """Why a request is not authenticated (answered 401)."""

    reason: str


@dataclass(frozen=True)
class Auth:
    """How the inbox authenticates, and the actor each way gives."""

    token: str | None = None
    tokens: Mapping[str, str] = field(default_factory=dict)
    header: str | None = None
    proxies: tuple[Network, ...] = _LOOPBACK
    local_actor: str = field(default_factory=lambda: _local_user())

    @classmethod
    def of(
        cls,
        *,
        token: str | None = None,
        tokens_file: str | Path | None = None,
        identity_header: str | None = None,
        trusted_proxies: Iterable[str] | None = None,
    ) -> Auth:
        header = (identity_header or "").strip().lower() or None
        if header is not None and not re.fullmatch(r"[a-z0-9-]{1,64}", header):
            raise ConfigurationError(
                f"GRAPHRUNTIME_UI_IDENTITY_HEADER is a header name, got {identity_header!r}"
            )
        proxies = _LOOPBACK if trusted_proxies is None else parse_proxies(trusted_proxies)
        if header is not None and not proxies:
            raise ConfigurationError(
                "GRAPHRUNTIME_UI_IDENTITY_HEADER needs GRAPHRUNTIME_UI_TRUSTED_PROXIES: the "
                "header is believed only from the proxy that sets it."
            )
        return cls(
            token=check_token(token),
            tokens=read_tokens(tokens_file) if tokens_file else {},
            header=header,
            proxies=proxies,
        )

    @property
    def required(self) -> bool:
        """Whether requests must authenticate (else: loopback only)."""
        return bool(self.token or self.tokens or self.header)

    def seed(self) -> bytes | None:
        """A secret the replicas of this inbox share, for its form tokens (or None)."""
        if self.token:
            return self.token.encode()
        if self.tokens:
            return "\n".join(sorted(self.tokens)).encode()
        return None

    def _trusted(self, peer: str) -> bool:
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(address in network for network in self.proxies)

    def actor(self, headers: Headers, peer: str) -> str | Denied:
        """The request's actor, or why it is refused."""
        if self.header is not None and self._trusted(peer):
            name = headers.get(self.header, "").strip()
            if _NAME.match(name):
                return name
            if not (self.token or self.tokens):
                return Denied(f"The authenticating proxy did not name the user ({self.header}).")
        if not (self.token or self.tokens):
            if self.header is not None:
                return Denied("This inbox is reached through its authenticating proxy only.")
            return self.local_actor
        scheme, _, credentials = headers.get("authorization", "").partition(" ")
        user: str | None = None
        if scheme.lower() == "bearer":
            secret = credentials
        elif scheme.lower() == "basic":
            try:
                decoded = base64.b64decode(credentials, validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                return Denied("Malformed basic auth.")
            user, _, secret = decoded.partition(":")
            user = user.strip() or None
        else:
            return Denied("")
        named = self.tokens.get(_digest(secret))
        if named is not None:
            if user is not None and user != named:
                return Denied(f"This token is {named!r}'s: give that user name, or none.")
            return named
        if self.token and hmac.compare_digest(secret.encode(), self.token.encode()):
            return user if user and _NAME.match(user) else "ui"
        return Denied("")


def _local_user() -> str:
    try:
        return getpass.getuser() or "local"
    except (OSError, KeyError):
        return "local"
