"""One way to borrow a connection, whether the caller gave a connection or a pool."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager, nullcontext
from typing import Any, TypeAlias, TypeVar

from psycopg import AsyncConnection, Connection, Cursor
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from graphruntime.errors import InvalidArgumentError, InvalidArgumentTypeError

__all__ = (
    "AConn",
    "AsyncConnectionSource",
    "Conn",
    "ConnectionSource",
    "check_conn",
    "refuse_on_loop",
    "wait_on_loop",
)

T = TypeVar("T")


def refuse_on_loop(loop: asyncio.AbstractEventLoop, owner: str, instead: str) -> None:
    """Raise if called on ``loop``'s own thread: waiting there for the loop would block it."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        return
    if running is loop:
        raise asyncio.InvalidStateError(
            f"Synchronous calls to {owner} are only allowed from a different thread than "
            f"its event loop's: {instead}"
        )


def wait_on_loop(
    loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T], owner: str, instead: str
) -> T:
    """Run ``coro`` on ``loop`` (another thread's) and wait for its result."""
    try:
        refuse_on_loop(loop, owner, instead)
    except asyncio.InvalidStateError:
        coro.close()
        raise
    return asyncio.run_coroutine_threadsafe(coro, loop).result()


Conn: TypeAlias = "Connection[Any] | ConnectionPool[Any]"
AConn: TypeAlias = "AsyncConnection[Any] | AsyncConnectionPool[Any]"


def check_conn(conn: Any, pipe: Any, owner: str, *, is_async: bool) -> None:
    """Refuse what the class cannot use, naming what it takes."""
    kinds = (AsyncConnection, AsyncConnectionPool) if is_async else (Connection, ConnectionPool)
    if not isinstance(conn, kinds):
        raise InvalidArgumentTypeError(
            f"{owner} needs a psycopg {kinds[0].__name__} or psycopg_pool."
            f"{kinds[1].__name__}, not {type(conn).__name__}"
        )
    if isinstance(conn, kinds[0]) and not conn.autocommit:
        raise InvalidArgumentError(
            f"{owner} needs a connection opened with autocommit=True, e.g. "
            f"{kinds[0].__name__}.connect(url, autocommit=True); with autocommit off its "
            "writes would stay in a transaction nobody commits"
        )
    if pipe is not None and not isinstance(conn, kinds[0]):
        raise InvalidArgumentError(
            f"{owner}: a pipeline belongs to one connection; pass that {kinds[0].__name__}, "
            f"not a {type(conn).__name__}, with pipe="
        )


class ConnectionSource:
    """Lends connections from a ``Connection`` or a ``ConnectionPool``.

    A single connection is shared by every thread of the process, so borrowing
    it takes a lock: a multi-statement operation (a fenced put's transaction)
    must not interleave with another thread's. A pool needs no lock. The caller
    owns the connection or pool and closes it.
    """

    def __init__(self, conn: Conn) -> None:
        if not isinstance(conn, Connection | ConnectionPool):
            raise InvalidArgumentTypeError(
                "PostgresSaver needs a psycopg Connection or psycopg_pool.ConnectionPool, "
                f"not {type(conn).__name__}"
            )
        self.conn = conn
        self._lock: threading.RLock | nullcontext[None] = (
            threading.RLock() if isinstance(conn, Connection) else nullcontext()
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


class AsyncConnectionSource:
    """Lends connections from an ``AsyncConnection`` or an ``AsyncConnectionPool``.

    A pool lends each caller its own connection, with no lock: concurrent calls run
    in parallel, up to the pool's size. A single connection serves one operation at
    a time (an asyncio lock), as psycopg requires.
    """

    def __init__(self, conn: AConn) -> None:
        self.conn = conn
        self._lock = asyncio.Lock() if isinstance(conn, AsyncConnection) else None

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A connection for the duration of the block."""
        if isinstance(self.conn, AsyncConnection):
            assert self._lock is not None
            async with self._lock:
                yield self.conn
        else:
            async with self.conn.connection() as conn:
                yield conn
