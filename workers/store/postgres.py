"""The run store on Postgres: the named queries of ``workers/sql/queries.sql``, run.

:class:`PostgresConnector` runs them on a pool: each session borrows a connection and
gives it back before the store's method returns. Driver errors are wrapped:
:class:`~workers.errors.StoreUnavailableError` when the database could not be reached
(classified by SQLSTATE), :class:`~workers.errors.StoreRecoveredError` when a
``check_epoch`` found the server recovered from a crash, else
:class:`~workers.errors.RunStoreError`.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from checkpoint_pg import is_connection_error, missing_schema
from checkpoint_pg.cursors import kept_cursor
from graphruntime.checkpoint import SerializerProtocol
from workers._pinned_pool import PinnedPool
from workers._sql import MIGRATIONS, query
from workers.errors import RunStoreError, StoreRecoveredError, StoreUnavailableError
from workers.store._connector import Row
from workers.store._store import RunStore

__all__ = ("PostgresConnector", "PostgresRunStore", "make_pool")

EPOCH_CHANGED = "GRCRA"
"""SQLSTATE of graphruntime_check_epoch (migration 0007): see StoreRecoveredError."""

UNPREPARED = frozenset({"inbox_page", "list_runs"})
"""Queries planned with their actual values each time: their NULL conditions fold away."""


class _Session:
    """Named queries on one connection."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def all(self, name: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        prepare = False if name in UNPREPARED else None
        conn = self.conn
        if conn.pgconn.pipeline_status:  # a cursor whose results come later: its own
            cur = conn.execute(query(name), params, prepare=prepare)
        else:
            cur = kept_cursor(conn)
            cur.execute(query(name), params, prepare=prepare)
        # rownumber is None for a result without rows (description would build columns)
        return cur.fetchall() if cur.rownumber is not None else []

    def many(
        self, name: str, params: Sequence[Mapping[str, Any]], *, returning: bool = True
    ) -> list[list[Row]]:
        if not params:
            return []
        if len(params) == 1:  # one plain statement: no pipeline to enter and leave
            rows = self.all(name, params[0])
            return [rows] if returning else []
        with self.conn.cursor() as cur:
            cur.executemany(query(name), params, returning=returning)
            if not returning:
                return []
            out = [cur.fetchall()]
            while cur.nextset():
                out.append(cur.fetchall())
            return out


class PostgresConnector:
    """Runs the store's named queries on a pool of autocommit dict-row connections."""

    def __init__(self, pool: ConnectionPool[Any]) -> None:
        self.pool = pool

    @contextmanager
    def session(self, operation: str, *, transaction: bool = False) -> Iterator[_Session]:
        with self._conn(operation) as conn:
            if transaction:
                with conn.transaction():
                    yield _Session(conn)
            else:
                yield _Session(conn)

    def batch(
        self, operation: str, statements: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> list[list[Row]]:
        with self._conn(operation) as conn:
            with conn.pipeline(), conn.transaction():
                cursors = [conn.execute(query(name), params) for name, params in statements]
            return [cur.fetchall() if cur.rownumber is not None else [] for cur in cursors]

    @contextmanager
    def _conn(self, operation: str) -> Iterator[psycopg.Connection[Any]]:
        try:
            with self.pool.connection() as conn:
                yield conn
        except (psycopg.Error, OSError) as exc:
            if isinstance(exc, psycopg.Error) and exc.sqlstate == EPOCH_CHANGED:
                raise StoreRecoveredError(
                    f"run store: {operation}: {exc.diag.message_primary}"
                ) from exc
            if isinstance(exc, OSError) or is_connection_error(exc):
                raise StoreUnavailableError(
                    f"run store: {operation} could not reach Postgres: {exc}"
                ) from exc
            hint = f" The workers' tables are missing: {MIGRATIONS.setup_hint}." * missing_schema(
                exc
            )
            raise RunStoreError(f"run store: {operation} failed: {exc}{hint}") from exc
        except Exception as exc:
            if is_connection_error(exc):  # psycopg_pool.PoolTimeout
                raise StoreUnavailableError(
                    f"run store: {operation} got no connection: {exc}"
                ) from exc
            raise


class PostgresRunStore(RunStore):
    """The run store on a Postgres pool (the store's rules: :class:`~workers.store.RunStore`)."""

    def __init__(self, pool: ConnectionPool[Any], serde: SerializerProtocol | None = None) -> None:
        super().__init__(PostgresConnector(pool), serde)
        self.pool = pool

    def setup(self) -> None:
        """Apply the workers' pending migrations (workers/sql/migrations)."""
        MIGRATIONS.migrate(self.pool)

    def close(self) -> None:
        """Close the pool (the store owns it when it came from ``workers.runtime.connect``)."""
        self.pool.close()


class _CheckWhenIdle:
    """A pool check that pings only connections not lent for a while.

    Checking every checkout costs a round trip per statement on the hot path; a
    connection lent moments ago is almost surely alive, while one that sat idle
    through a Postgres restart is not. The check stamps the checkout time: the time
    since a connection was last lent is never shorter than the time since it came
    back, so it pings at least as often as a stamp at the return would. (A ``reset``
    callback would stamp the return instead, but then psycopg_pool hands every return
    to its worker thread: a queue, a thread switch and a late return per statement.)
    """

    def __init__(self, idle: float) -> None:
        self.idle = idle
        self._lent: weakref.WeakKeyDictionary[psycopg.Connection[Any], float] = (
            weakref.WeakKeyDictionary()
        )

    def check(self, conn: psycopg.Connection[Any]) -> None:
        now = time.monotonic()
        lent = self._lent.get(conn)
        if lent is None or now - lent > self.idle:
            ConnectionPool.check_connection(conn)
        self._lent[conn] = now


def make_pool(
    url: str, max_size: int = 4, *, prepare: bool = True, check_idle: float = 1.0
) -> PinnedPool:
    """A pool of autocommit dict-row connections, opened and checked when idle.

    ``prepare=False`` turns server-side prepared statements off (a pooler in
    transaction mode that cannot keep them).
    """
    idle_check = _CheckWhenIdle(check_idle)
    pool = PinnedPool(
        url,
        min_size=1,
        max_size=max_size,
        kwargs={
            "autocommit": True,
            "row_factory": dict_row,
            **({} if prepare else {"prepare_threshold": None}),
        },
        open=False,
        check=idle_check.check,
    )
    pool.open(wait=True, timeout=30)
    return pool
