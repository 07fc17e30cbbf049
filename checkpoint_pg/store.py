"""PostgresStore: graphruntime's store contract (LangGraph's BaseStore) on Postgres.

    from checkpoint_pg import PostgresStore

    with PostgresStore.from_conn_string(url) as store:
        store.setup()
        store.put(("users", "u1"), "prefs", {"theme": "dark"})

One table (``sql/store_migrations``), queries in ``sql/store_queries.sql``.
Values are JSONB objects; filters compile to parameterized SQL (``_store_sql``).
No vector search: pgvector is not available, so ``index=`` is refused.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import datetime
from typing import Any, TypedDict

import psycopg
from psycopg import Connection, Cursor, sql
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool

from checkpoint_pg import _store_queries as q
from checkpoint_pg._connection import Conn, ConnectionSource
from checkpoint_pg._store_sql import filter_sql, namespace_sql, pattern_sql
from checkpoint_pg.schema import Migrations
from graphruntime.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidStoreRequestError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    StoreBackendError,
    TTLConfig,
    TTLSweeper,
    check_ttl_config,
    encode_value,
    namespace_pattern,
    parse_filter,
    validate_op,
)

__all__ = ("STORE_MIGRATIONS", "PoolConfig", "PostgresStore")

STORE_MIGRATIONS = Migrations(
    "checkpoint_pg",
    "sql/store_migrations",
    table="graphruntime_store_migrations",
    lock_key="graphruntime_store_migrations",
    component="checkpoint_pg store",
    setup_hint="run PostgresStore.setup()",
)

# list_namespaces without max_depth: a slice bound past any namespace's depth.
_NO_DEPTH_LIMIT = 2**31 - 1


class PoolConfig(TypedDict, total=False):
    """Settings of the pool :meth:`PostgresStore.from_conn_string` opens."""

    min_size: int
    max_size: int | None
    kwargs: dict[str, Any]


class PostgresStore(BaseStore):
    """Items in Postgres, with the calls of LangGraph's ``PostgresStore``.

    Give it a psycopg ``Connection`` opened with ``autocommit=True`` (shared by
    the threads of a process, one batch at a time) or a ``ConnectionPool``; the
    caller owns and closes it. Or use :meth:`from_conn_string`. Call
    :meth:`setup` once to create or upgrade the table.

    Args:
        ttl: TTL settings; puts take ``ttl=`` (minutes) with or without them.
            Expired items are invisible at once; :meth:`sweep_ttl` (or the
            thread of :meth:`start_ttl_sweeper`) deletes them.
        clock: the current time for TTLs and timestamps; by default the
            database's ``now()``. Tests pass a fake one to expire items without
            waiting.
        index: refused: vector search needs pgvector, which this store does not use.
    """

    supports_ttl = True

    def __init__(
        self,
        conn: Conn,
        *,
        ttl: TTLConfig | None = None,
        clock: Callable[[], datetime] | None = None,
        index: IndexConfig | None = None,
    ) -> None:
        if index is not None:
            raise InvalidStoreRequestError(
                "PostgresStore has no vector search (it would need the pgvector extension): "
                "drop index=, or use graphruntime.store.memory.InMemoryStore(index=...)"
            )
        if isinstance(conn, Connection) and not conn.autocommit:
            raise ValueError(
                "PostgresStore needs a connection opened with autocommit=True, e.g. "
                "psycopg.Connection.connect(url, autocommit=True); with autocommit off "
                "its writes would stay in a transaction nobody commits"
            )
        self.conn = conn
        self._source = ConnectionSource(conn)
        self._clock = clock
        self.ttl_config = check_ttl_config(ttl)
        self.index_config = None
        self._sweeper = TTLSweeper(self.sweep_ttl, "graphruntime-pg-store-ttl-sweeper")

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        pool_config: PoolConfig | None = None,
        ttl: TTLConfig | None = None,
        index: IndexConfig | None = None,
    ) -> Iterator[PostgresStore]:
        """A store on a new connection (or, with ``pool_config``, a pool), closed on exit.

        The TTL sweeper, if started, is stopped on exit too.
        """
        kwargs: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0}
        if pool_config is None:
            with Connection.connect(conn_string, row_factory=dict_row, **kwargs) as conn:
                store = cls(conn, ttl=ttl, index=index)
                try:
                    yield store
                finally:
                    store.stop_ttl_sweeper()
            return
        unknown = set(pool_config) - set(PoolConfig.__annotations__)
        if unknown:
            raise InvalidStoreRequestError(
                f"Unknown pool_config keys {sorted(unknown)}: expected min_size, max_size, kwargs"
            )
        with ConnectionPool(
            conn_string,
            min_size=pool_config.get("min_size", 1),
            max_size=pool_config.get("max_size"),
            kwargs={**kwargs, "row_factory": dict_row, **pool_config.get("kwargs", {})},
            open=True,
        ) as pool:
            store = cls(pool, ttl=ttl, index=index)
            try:
                yield store
            finally:
                store.stop_ttl_sweeper()

    def setup(self) -> None:
        """Create the store's table, or apply the migrations this database lacks."""
        with self._source.connection() as conn:
            STORE_MIGRATIONS.migrate(conn)

    # -- the contract ----------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order in one transaction; consecutive gets (and puts) share a query."""
        ops = list(ops)
        for op in ops:
            self._check(op)
        results: list[Result] = [None] * len(ops)
        if not ops:
            return results
        now = self._clock() if self._clock is not None else None
        runs = list(_runs(ops))
        try:
            with self._source.connection() as conn:
                # One statement is atomic on its own: a transaction would only add the
                # BEGIN and COMMIT round trips.
                atomic = conn.transaction() if len(runs) > 1 else nullcontext()
                with atomic, conn.cursor(binary=True, row_factory=dict_row) as cur:
                    for start, run in runs:
                        self._execute(cur, run, start, now, results)
        except psycopg.Error as exc:
            raise StoreBackendError(f"PostgresStore batch failed: {exc}") from exc
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # -- TTL -------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete the expired items now; returns how many."""
        now = self._clock() if self._clock is not None else None
        try:
            with self._source.cursor() as cur:
                cur.execute(q.SWEEP, {"now": now})
                return max(cur.rowcount, 0)
        except psycopg.Error as exc:
            raise StoreBackendError(f"PostgresStore TTL sweep failed: {exc}") from exc

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Call :meth:`sweep_ttl` every ``sweep_interval_minutes`` on a daemon thread.

        The interval defaults to ``ttl_config["sweep_interval_minutes"]``, else 5.
        The future completes when :meth:`stop_ttl_sweeper` stops the thread
        (cancelling it stops it too).
        """
        configured = (self.ttl_config or {}).get("sweep_interval_minutes")
        return self._sweeper.start(60.0 * float(sweep_interval_minutes or configured or 5))

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; ``False`` if it was still running after ``timeout`` s."""
        return self._sweeper.stop(timeout)

    # -- internals -------------------------------------------------------------

    @property
    def _omit_expired(self) -> bool:
        return (self.ttl_config or {}).get("omit_expired", True)

    def _check(self, op: Op) -> None:
        validate_op(op)
        if isinstance(op, PutOp) and op.value is not None:
            if op.index is not None and op.index is not False:
                raise InvalidStoreRequestError(
                    "put(index=[...]) needs vector search, which PostgresStore does not have "
                    "(pass index=None or False)"
                )
        elif isinstance(op, SearchOp):
            if op.query is not None:
                raise InvalidStoreRequestError(
                    "search(query=...) needs vector search, which PostgresStore does not have: "
                    "search with filter= instead"
                )
            parse_filter(op.filter)

    def _execute(
        self,
        cur: Cursor[DictRow],
        run: Sequence[Op],
        start: int,
        now: datetime | None,
        results: list[Result],
    ) -> None:
        first = run[0]
        if isinstance(first, GetOp):
            gets = [op for op in run if isinstance(op, GetOp)]
            for offset, item in enumerate(self._get(cur, gets, now)):
                results[start + offset] = item
        elif isinstance(first, PutOp):
            self._put(cur, [op for op in run if isinstance(op, PutOp)], now)
        elif isinstance(first, SearchOp):
            results[start] = self._search(cur, first, now)
        elif isinstance(first, ListNamespacesOp):
            results[start] = self._list_namespaces(cur, first, now)

    def _get(
        self, cur: Cursor[DictRow], ops: list[GetOp], now: datetime | None
    ) -> list[Item | None]:
        params = {
            "prefixes": [".".join(op.namespace) for op in ops],
            "keys": [op.key for op in ops],
            "refresh": [op.refresh_ttl for op in ops],
            "omit_expired": self._omit_expired,
            "now": now,
        }
        cur.execute(q.GET, params)
        found: list[Item | None] = [None] * len(ops)
        for row in cur.fetchall():
            op = ops[row["ord"] - 1]
            found[row["ord"] - 1] = Item(
                value=row["value"],
                key=op.key,
                namespace=op.namespace,
                created_at=row["created_at"],
                updated_at=row["updated_at"],
            )
        return found

    def _put(self, cur: Cursor[DictRow], ops: list[PutOp], now: datetime | None) -> None:
        final: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            final.pop((op.namespace, op.key), None)  # the last op wins, in its position
            final[(op.namespace, op.key)] = op
        upserts = [op for op in final.values() if op.value is not None]
        deletes = [op for op in final.values() if op.value is None]
        if deletes:
            cur.execute(
                q.DELETE,
                {
                    "prefixes": [".".join(op.namespace) for op in deletes],
                    "keys": [op.key for op in deletes],
                },
            )
        if upserts:
            cur.execute(
                q.PUT,
                {
                    "prefixes": [".".join(op.namespace) for op in upserts],
                    "keys": [op.key for op in upserts],
                    "values": [encode_value(op.value) for op in upserts if op.value is not None],
                    "ttls": [op.ttl for op in upserts],
                    "now": now,
                },
            )

    def _search(self, cur: Cursor[DictRow], op: SearchOp, now: datetime | None) -> list[SearchItem]:
        params: dict[str, Any] = {
            "omit_expired": self._omit_expired,
            "now": now,
            "limit": op.limit,
            "offset": op.offset,
            "refresh": op.refresh_ttl,
        }
        where = [namespace_sql(op.namespace_prefix, params)]
        where.extend(filter_sql(parse_filter(op.filter), params))
        query = sql.SQL(q.SEARCH).format(where=sql.SQL("\n        AND ").join(where))
        cur.execute(query, params)
        return [
            SearchItem(
                namespace=tuple(row["prefix"].split(".")),
                key=row["key"],
                value=row["value"],
                created_at=row["created_at"],
                updated_at=row["updated_at"],
            )
            for row in cur.fetchall()
        ]

    def _list_namespaces(
        self, cur: Cursor[DictRow], op: ListNamespacesOp, now: datetime | None
    ) -> list[tuple[str, ...]]:
        pattern = namespace_pattern(op.match_conditions)
        if pattern is None:
            return []
        params: dict[str, Any] = {
            "omit_expired": self._omit_expired,
            "now": now,
            "max_depth": op.max_depth if op.max_depth is not None else _NO_DEPTH_LIMIT,
            "limit": op.limit,
            "offset": op.offset,
        }
        query = sql.SQL(q.LIST_NAMESPACES).format(where=pattern_sql(pattern, params))
        cur.execute(query, params)
        return [tuple(row["namespace"]) for row in cur.fetchall()]


def _runs(ops: list[Op]) -> Iterator[tuple[int, list[Op]]]:
    """Consecutive gets, and consecutive puts, as one run each; any other op alone."""
    start = 0
    while start < len(ops):
        kind = type(ops[start])
        end = start + 1
        if kind in (GetOp, PutOp):
            while end < len(ops) and type(ops[end]) is kind:
                end += 1
        yield start, ops[start:end]
        start = end
