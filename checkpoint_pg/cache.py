"""PostgresCache: graphruntime's cache contract (LangGraph's BaseCache) on Postgres.

    from checkpoint_pg import PostgresCache

    cache = PostgresCache(pool)
    cache.setup()
    graph = builder.compile(cache=cache)

Every process that shares the database shares the cached results, so a node whose
result was cached by one worker is not run again by another, and clearing the cache
from a client clears it for all of them. One table (``sql/cache_migrations``),
queries in ``sql/cache_queries.sql``; values go through the serializer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg

from checkpoint_pg._connection import Conn, ConnectionSource
from checkpoint_pg.named_queries import NamedQueries
from checkpoint_pg.schema import Migrations
from graphruntime.cache.base import BaseCache, CacheError, FullKey, Namespace, check_cache_ttl
from graphruntime.checkpoint.serde import SerializerProtocol

__all__ = ("CACHE_MIGRATIONS", "PostgresCache")

ValueT = TypeVar("ValueT")

CACHE_MIGRATIONS = Migrations(
    "checkpoint_pg",
    "sql/cache_migrations",
    table="graphruntime_cache_migrations",
    lock_key="graphruntime_cache_migrations",
    component="checkpoint_pg cache",
    setup_hint="run PostgresCache.setup()",
)

_Q = NamedQueries("checkpoint_pg", "sql/cache_queries.sql")


def _namespace(ns: Namespace) -> str:
    return json.dumps(list(ns), ensure_ascii=False)


class PostgresCache(BaseCache[ValueT]):
    """Cached results in Postgres, shared by every process on the database.

    Give it a psycopg ``Connection`` opened with ``autocommit=True`` or a
    ``ConnectionPool``; the caller owns and closes it. Call :meth:`setup` once to
    create or upgrade its table. Expired entries are invisible at once;
    :meth:`sweep_expired` deletes them.
    """

    def __init__(self, conn: Conn, *, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        self._source = ConnectionSource(conn)

    def setup(self) -> None:
        """Create the cache's table, or apply the migrations this database lacks."""
        with self._source.connection() as conn:
            CACHE_MIGRATIONS.migrate(conn)

    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, ValueT]:
        if not keys:
            return {}
        wanted = {(_namespace(ns), key): (ns, key) for ns, key in keys}
        params = {
            "namespaces": [ns for ns, _ in wanted],
            "keys": [key for _, key in wanted],
        }
        rows = self._run(_Q["cache_get"], params, fetch=True)
        found: dict[FullKey, ValueT] = {}
        for row in rows:
            full = wanted[(row["namespace"], row["key"])]
            found[full] = self.serde.loads_typed((row["kind"], bytes(row["value"])))
        return found

    async def aget(self, keys: Sequence[FullKey]) -> dict[FullKey, ValueT]:
        return await asyncio.to_thread(self.get, list(keys))

    def set(self, pairs: Mapping[FullKey, tuple[ValueT, int | None]]) -> None:
        if not pairs:
            return
        params: dict[str, list[Any]] = {
            "namespaces": [],
            "keys": [],
            "kinds": [],
            "values": [],
            "ttls": [],
        }
        for (ns, key), (value, ttl) in pairs.items():
            check_cache_ttl(ttl)
            kind, data = self.serde.dumps_typed(value)
            params["namespaces"].append(_namespace(ns))
            params["keys"].append(key)
            params["kinds"].append(kind)
            params["values"].append(data)
            params["ttls"].append(None if ttl is None else float(ttl))
        self._run(_Q["cache_set"], params)

    async def aset(self, pairs: Mapping[FullKey, tuple[ValueT, int | None]]) -> None:
        await asyncio.to_thread(self.set, dict(pairs))

    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        if namespaces is None:
            self._run(_Q["cache_clear_all"], {})
        elif namespaces:
            self._run(
                _Q["cache_clear_namespaces"],
                {"namespaces": [_namespace(ns) for ns in namespaces]},
            )

    async def aclear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        await asyncio.to_thread(self.clear, None if namespaces is None else list(namespaces))

    def sweep_expired(self) -> int:
        """Delete the expired entries now; returns how many."""
        with self._errors("PostgresCache sweep failed"), self._source.cursor() as cur:
            cur.execute(_Q["cache_sweep"])
            return max(cur.rowcount, 0)

    def _run(self, query: Any, params: Mapping[str, Any], *, fetch: bool = False) -> list[Any]:
        with self._errors("PostgresCache failed"), self._source.cursor() as cur:
            cur.execute(query, params)
            return cur.fetchall() if fetch else []

    @staticmethod
    @contextmanager
    def _errors(failed: str) -> Iterator[None]:
        try:
            yield
        except psycopg.errors.UndefinedTable as exc:
            raise CacheError(
                "PostgresCache: the cache table is missing: run PostgresCache.setup() "
                "(or `graphrun db migrate`) first"
            ) from exc
        except psycopg.Error as exc:
            raise CacheError(f"{failed}: {exc}") from exc
