"""One way to borrow a connection, whether the caller gave a connection or a pool."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any, TypeAlias

from psycopg import Connection, Cursor
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool

__all__ = ("Conn", "ConnectionSource")

Conn: TypeAlias = "Connection[Any] | ConnectionPool[Any]"


class ConnectionSource:
    """Lends connections from a ``Connection`` or a ``ConnectionPool``.

    A single connection is shared by every thread of the process, so borrowing
    it takes a lock: a multi-statement operation (a fenced put's transaction)
    must not interleave with another thread's. A pool needs no lock. The caller
    owns the connection or pool and closes it.
    """

    def __init__(self, conn: Conn) -> None:
        if not isinstance(conn, Connection | ConnectionPool):
            raise TypeError(
                "PostgresSaver needs a psycopg Connection or psycopg_pool.ConnectionPool, "
                f"not {type(conn).__name__}"
            )
        self.conn = conn
        self._lock: threading.Lock | nullcontext[None] = (
            threading.Lock() if isinstance(conn, Connection) else nullcontext()
        )

    @contextmanager
    def connection(self) -> Iterator[Connection[Any]]:
        """A connection for the duration of the block."""
        if isinstance(self.conn, Connection):
            with self._lock:
                yield self.conn
        else:
            with self.conn.connection() as conn:
                yield conn

    @contextmanager
    def cursor(self) -> Iterator[Cursor[DictRow]]:
        """A binary ``dict_row`` cursor: bytea values arrive as raw bytes, not hex."""
        with self.connection() as conn, conn.cursor(binary=True, row_factory=dict_row) as cur:
            yield cur
