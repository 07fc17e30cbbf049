"""Reaching Postgres and Redis: check the URLs, wait a bounded time for each service to
answer, check that the database's schemas are those this code needs.

A worker runs all three before its pool starts (it must not say "ready" on a broken
database); the ``graphrun`` commands run the first two before they read or write anything.
Every error names the setting and where it points (host, port, database or socket), never
a password.
"""

from __future__ import annotations

import re
import sys
import time
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, urlsplit

from workers._retrying import SERVICE_START
from workers.errors import BrokerUnavailableError, ConfigurationError, StoreUnavailableError

if TYPE_CHECKING:
    from checkpoint_pg.schema import Migrations
    from workers.settings import Settings

__all__ = (
    "all_migrations",
    "check_schemas",
    "check_services",
    "check_urls",
    "database_url",
    "postgres_location",
    "reach",
    "redacted",
    "redis_location",
    "redis_url",
    "wait_for_postgres",
    "wait_for_redis",
)

_REDIS_SCHEMES = ("redis", "rediss", "redis+socket", "unix")


def database_url(settings: Settings) -> str:
    """``DATABASE_URL``, or the embedded Postgres in embedded mode; else an error."""
    if settings.database_url:
        return settings.database_url
    if settings.embedded:
        from checkpoint_pg.embedded import data_dir, embedded_url

        url = embedded_url()
        sys.stderr.write(
            f"graphruntime: using the embedded Postgres in {data_dir() / 'pg'} (development only)\n"
        )
        return url
    raise ConfigurationError(
        "DATABASE_URL is not set: point it at Postgres (e.g. postgresql://user@host/db), or "
        "set GRAPHRUNTIME_EMBEDDED=1 to start an embedded Postgres for development."
    )


def redis_url(settings: Settings) -> str:
    """``REDIS_URL``, or the embedded Redis in embedded mode; else an error."""
    if settings.redis_url:
        redis_location(settings.redis_url)  # a malformed URL is refused by name, here
        return settings.redis_url
    if settings.embedded:
        from workers.embedded import data_dir as embedded_dir
        from workers.embedded import redis_url as embedded

        url = embedded()
        sys.stderr.write(
            f"graphruntime: using the embedded Redis in {embedded_dir()} (development only)\n"
        )
        return url
    raise ConfigurationError(
        "REDIS_URL is not set: point it at the Redis broker (e.g. redis://redis:6379/0), or "
        "set GRAPHRUNTIME_EMBEDDED=1 to start an embedded Redis for development."
    )


def redacted(url: str) -> str:
    """``url`` with any password replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    if not parts.password:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return SplitResult(
        parts.scheme, f"{user}:***@{host}", parts.path, parts.query, parts.fragment
    ).geturl()


def postgres_location(url: str) -> str:
    """Where ``url`` points: ``host:port/dbname`` (or the socket directory), no password.

    Raises :class:`ConfigurationError` naming ``DATABASE_URL`` when it does not parse.
    """
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        info = conninfo_to_dict(url)
    except ProgrammingError as exc:
        # libpq quotes the text it could not read, which may hold the password
        problem = re.sub(r'"[^"]*"', '"…"', _first_line(exc))
        raise ConfigurationError(
            f"DATABASE_URL is not a Postgres URL ({problem}): give "
            "postgresql://user:password@host:5432/dbname"
        ) from None
    ports = str(info.get("port") or "")
    if any(p and not p.isdigit() for p in ports.split(",")):
        raise ConfigurationError(
            f"DATABASE_URL: port {ports!r} is not a number (in {redacted(url)})"
        )
    host = str(info.get("host") or info.get("hostaddr") or "localhost")
    dbname = info.get("dbname") or info.get("user") or "postgres"
    if host.startswith("/"):
        return f"socket {host}, database {dbname}"
    return f"{host}:{ports or 5432}/{dbname}"


def _redis_py_url(url: str) -> str:
    """Celery's ``redis+socket://`` spelled as redis-py's ``unix://``."""
    return url.replace("redis+socket://", "unix://", 1)


def redis_location(url: str) -> str:
    """Where ``url`` points: ``host:port/db`` or the socket path, no password.

    Raises :class:`ConfigurationError` naming ``REDIS_URL`` when it does not parse.
    """
    from redis.connection import parse_url

    scheme = url.partition("://")[0] if "://" in url else ""
    if scheme not in _REDIS_SCHEMES:
        raise ConfigurationError(
            f"REDIS_URL must start with redis://, rediss:// or redis+socket://, got "
            f"{redacted(url)!r}"
        )
    try:
        parts = parse_url(_redis_py_url(url))  # type: ignore[no-untyped-call]
        split = urlsplit(url)
    except ValueError as exc:
        raise ConfigurationError(f"REDIS_URL is malformed ({exc}): {redacted(url)!r}") from None
    db = split.path.strip("/") if scheme in ("redis", "rediss") else ""
    if db and not db.isdigit():
        raise ConfigurationError(
            f"REDIS_URL is malformed (the database {db!r} is not a number): {redacted(url)!r}"
        )
    if "path" in parts:
        return f"socket {parts['path']}"
    return f"{parts.get('host', 'localhost')}:{parts.get('port', 6379)}/{parts.get('db', 0)}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def wait_for_postgres(url: str, timeout: float) -> None:
    """Connect and run ``SELECT 1``, trying again for up to ``timeout`` seconds while the
    server cannot be reached; a refusal (a wrong password, no such database) fails at once.

    Raises :class:`StoreUnavailableError` naming ``DATABASE_URL`` and where it points.
    """
    import psycopg

    where = postgres_location(url)
    give_up = time.monotonic() + timeout

    def attempt() -> None:
        # libpq's connect_timeout counts in whole seconds, at least 2
        remaining = max(2, int(give_up - time.monotonic() + 0.999))
        with psycopg.connect(url, connect_timeout=remaining, autocommit=True) as conn:
            conn.execute("SELECT 1")

    def unreachable(exc: BaseException) -> bool:
        # no SQLSTATE: the server never answered; 57P03: it is starting up
        return isinstance(exc, psycopg.OperationalError) and exc.sqlstate in (None, "57P03")

    try:
        for step in SERVICE_START.retrying(unreachable, within=timeout):
            with step:
                attempt()
    except psycopg.Error as exc:
        if unreachable(exc):
            raise StoreUnavailableError(
                f"DATABASE_URL: Postgres at {where} did not answer within {timeout:g}s "
                f"(GRAPHRUNTIME_CONNECT_TIMEOUT): {_first_line(exc)}"
            ) from None
        raise StoreUnavailableError(
            f"DATABASE_URL: Postgres at {where} refused the connection: {_first_line(exc)}"
        ) from None


def wait_for_redis(url: str, timeout: float) -> None:
    """``PING`` Redis, trying again for up to ``timeout`` seconds while it cannot be reached;
    a refusal (a wrong password) fails at once.

    Raises :class:`BrokerUnavailableError` naming ``REDIS_URL`` and where it points.
    """
    import redis

    where = redis_location(url)
    give_up = time.monotonic() + timeout

    def attempt() -> None:
        remaining = max(0.5, give_up - time.monotonic())
        client = redis.Redis.from_url(
            _redis_py_url(url), socket_connect_timeout=remaining, socket_timeout=remaining
        )
        try:
            client.ping()
        finally:
            client.close()

    def unreachable(exc: BaseException) -> bool:
        return isinstance(
            exc, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError
        ) and not isinstance(exc, redis.exceptions.AuthenticationError)

    try:
        for step in SERVICE_START.retrying(unreachable, within=timeout):
            with step:
                attempt()
    except redis.exceptions.RedisError as exc:
        if unreachable(exc):
            raise BrokerUnavailableError(
                f"REDIS_URL: Redis at {where} did not answer within {timeout:g}s "
                f"(GRAPHRUNTIME_CONNECT_TIMEOUT): {_first_line(exc)}"
            ) from None
        raise BrokerUnavailableError(
            f"REDIS_URL: Redis at {where} refused the connection: {_first_line(exc)}"
        ) from None


def all_migrations() -> dict[str, Migrations]:
    """Every schema this code uses, by the name ``graphrun db migrate`` prints: the
    checkpoints, the workers' tables, the nodes' store and cache, graphrun serve's tables."""
    from checkpoint_pg.cache import CACHE_MIGRATIONS
    from checkpoint_pg.schema import CHECKPOINT_MIGRATIONS
    from checkpoint_pg.store import STORE_MIGRATIONS
    from workers._api_schema import API_MIGRATIONS
    from workers._sql import MIGRATIONS

    return {
        "checkpoint_pg": CHECKPOINT_MIGRATIONS,
        "workers": MIGRATIONS,
        "store": STORE_MIGRATIONS,
        "cache": CACHE_MIGRATIONS,
        "api": API_MIGRATIONS,
    }


def check_schemas(url: str) -> None:
    """Every schema this code uses (checkpoints, the workers' tables, the nodes' store and
    cache) is at the version this code needs.

    Raises :class:`ConfigurationError` naming ``DATABASE_URL``: behind (run ``graphrun db
    migrate``) or ahead (a newer release migrated it: upgrade this host).
    """
    import psycopg

    where = postgres_location(url)
    behind: list[str] = []
    ahead: list[str] = []
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            for migrations in all_migrations().values():
                current, latest = migrations.schema_version(conn), migrations.latest_version()
                if current < latest:
                    behind.append(f"{migrations.component} at version {current} of {latest}")
                elif current > latest:
                    ahead.append(f"{migrations.component} at version {current}, this code {latest}")
    except psycopg.Error as exc:
        raise StoreUnavailableError(
            f"DATABASE_URL: reading the schema versions of Postgres at {where} failed: "
            f"{_first_line(exc)}"
        ) from None
    if ahead:
        raise ConfigurationError(
            f"DATABASE_URL: the database at {where} was migrated by a newer release "
            f"({'; '.join(ahead)}): upgrade graphruntime on this host"
        )
    if behind:
        raise ConfigurationError(
            f"DATABASE_URL: the database at {where} is not migrated ({'; '.join(behind)}): "
            "run `graphrun db migrate` first (workers never migrate by themselves)"
        )


def check_urls(settings: Settings, *, postgres: bool = True, redis: bool = True) -> tuple[str, str]:
    """``DATABASE_URL`` and ``REDIS_URL`` (those asked for; "" for the others), checked to
    parse. Raises :class:`ConfigurationError` naming the setting."""
    db = database_url(settings) if postgres else ""
    broker = redis_url(settings) if redis else ""
    if db:
        postgres_location(db)
    if broker:
        redis_location(broker)
    return db, broker


def check_services(
    settings: Settings,
    *,
    postgres: bool = True,
    redis: bool = True,
    schemas: bool = False,
) -> None:
    """Check the URLs first (both, before waiting on either), then wait for each service
    (at most ``GRAPHRUNTIME_CONNECT_TIMEOUT`` seconds each), then the schemas if asked.

    Raises :class:`ConfigurationError` (a malformed URL, a schema behind or ahead),
    :class:`StoreUnavailableError` or :class:`BrokerUnavailableError` (a service that did
    not answer or refused).
    """
    db, broker = check_urls(settings, postgres=postgres or schemas, redis=redis)
    reach(settings, db, broker, schemas=schemas)


def reach(settings: Settings, db: str, broker: str, *, schemas: bool = False) -> None:
    """Wait for the services of checked URLs (see :func:`check_services`)."""
    if db:
        wait_for_postgres(db, settings.connect_timeout)
    if broker:
        wait_for_redis(broker, settings.connect_timeout)
    if db and schemas:
        check_schemas(db)
