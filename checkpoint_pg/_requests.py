"""Operations as requests: what to run, with no I/O (psycopg's split of protocol from I/O).

An operation of the saver or the store is a generator: it yields requests (:class:`Stmt`,
:class:`Many`, :class:`Batch`) and receives each one's result, so the SQL, the parameters
and the decoding of rows are written once. :func:`run` performs an operation on a sync
connection, :func:`arun` on an async one; the public classes are thin shells around them.

Every statement runs on a binary cursor with ``dict_row`` rows (bytea arrives as bytes).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, nullcontext
from typing import Any, Literal, NamedTuple, TypeAlias, TypeVar

from psycopg import AsyncConnection, AsyncCursor, Capabilities, Connection, Cursor, sql
from psycopg.rows import DictRow, dict_row

from checkpoint_pg._queries import ASYNC_COMMIT
from checkpoint_pg.cursors import kept_cursor

__all__ = ("Batch", "Fetch", "Many", "Op", "Request", "Stmt", "arun", "run", "single")

T = TypeVar("T")
Query: TypeAlias = "str | bytes | sql.SQL | sql.Composed"
Fetch = Literal["none", "one", "all"]

_PIPELINE = Capabilities().has_pipeline()


class Stmt(NamedTuple):
    """One statement; its result is ``None``, a row (or ``None``) or the list of rows."""

    query: Query
    params: Any = None
    fetch: Fetch = "none"
    prepare: bool = True
    """False: never prepared, so it is planned for its actual values."""
    binary: bool = True
    """False: text results; with no parameters, a script of several statements."""


class Many(NamedTuple):
    """One statement run for each parameter set in one round trip; one row (or None) each."""

    query: Query
    params: Sequence[Any]


class Batch(NamedTuple):
    """Statements sent together (pipelined where libpq can); the list of their results.

    ``transaction``: all or nothing. ``lazy``: the transaction commits without waiting
    for the WAL flush (durable with the next commit that waits).
    """

    statements: Sequence[Stmt]
    transaction: bool = True
    lazy: bool = False


Request: TypeAlias = "Stmt | Many | Batch"
Op: TypeAlias = Generator[Request, Any, T]
"""An operation: yields requests, receives their results, returns its value."""


def single(request: Request) -> Op[Any]:
    """The operation of one request: returns its result."""
    result = yield request
    return result


def run(conn: Connection[Any], op: Op[T]) -> T:
    """Perform ``op`` on ``conn`` (the caller holds the connection for the whole operation)."""
    try:
        request = next(op)
        while True:
            request = op.send(_execute(conn, request))
    except StopIteration as stop:
        value: T = stop.value
        return value


async def arun(conn: AsyncConnection[Any], op: Op[T]) -> T:
    """Perform ``op`` on the async ``conn``."""
    try:
        request = next(op)
        while True:
            request = op.send(await _aexecute(conn, request))
    except StopIteration as stop:
        value: T = stop.value
        return value


def _prepare(conn: Connection[Any] | AsyncConnection[Any], stmt: Stmt) -> bool | None:
    # Hot statements are prepared on first use, unless the connection was opened with
    # prepare_threshold=None (behind a pooler that cannot keep prepared statements).
    if not stmt.prepare:
        return False
    return None if conn.prepare_threshold is None else True


def _fetch(cur: Cursor[DictRow], fetch: Fetch) -> Any:
    if fetch == "one":
        return cur.fetchone()
    if fetch == "all":
        return cur.fetchall()
    return None


async def _afetch(cur: AsyncCursor[DictRow], fetch: Fetch) -> Any:
    if fetch == "one":
        return await cur.fetchone()
    if fetch == "all":
        return await cur.fetchall()
    return None


def _execute(conn: Connection[Any], request: Request) -> Any:
    if isinstance(request, Stmt):
        if conn.pgconn.pipeline_status:  # a cursor whose results come later: its own
            with conn.cursor(binary=request.binary, row_factory=dict_row) as cur:
                cur.execute(request.query, request.params, prepare=_prepare(conn, request))
                return _fetch(cur, request.fetch)
        cur = kept_cursor(conn, binary=request.binary)
        cur.execute(request.query, request.params, prepare=_prepare(conn, request))
        return _fetch(cur, request.fetch)
    if isinstance(request, Many):
        rows: list[DictRow | None] = []
        with conn.cursor(binary=True, row_factory=dict_row) as cur:
            cur.executemany(request.query, request.params, returning=True)
            while True:
                rows.append(cur.fetchone())
                if not cur.nextset():
                    break
        return rows
    cursors: list[tuple[Cursor[DictRow], Fetch]] = []
    pipeline: AbstractContextManager[Any] = conn.pipeline() if _PIPELINE else nullcontext()
    atomic: AbstractContextManager[Any] = (
        conn.transaction() if request.transaction else nullcontext()
    )
    with pipeline, atomic:
        if request.lazy:
            conn.execute(ASYNC_COMMIT)
        for stmt in request.statements:
            cur = conn.cursor(binary=True, row_factory=dict_row)
            cur.execute(stmt.query, stmt.params, prepare=_prepare(conn, stmt))
            cursors.append((cur, stmt.fetch))
    # the results arrived with the commit (one round trip in pipeline mode)
    try:
        return [_fetch(cur, fetch) for cur, fetch in cursors]
    finally:
        for cur, _ in cursors:
            cur.close()


async def _aexecute(conn: AsyncConnection[Any], request: Request) -> Any:
    if isinstance(request, Stmt):
        async with conn.cursor(binary=request.binary, row_factory=dict_row) as cur:
            await cur.execute(request.query, request.params, prepare=_prepare(conn, request))
            return await _afetch(cur, request.fetch)
    if isinstance(request, Many):
        rows: list[DictRow | None] = []
        async with conn.cursor(binary=True, row_factory=dict_row) as cur:
            await cur.executemany(request.query, request.params, returning=True)
            while True:
                rows.append(await cur.fetchone())
                if not cur.nextset():
                    break
        return rows
    cursors: list[tuple[AsyncCursor[DictRow], Fetch]] = []
    pipeline: AbstractAsyncContextManager[Any] = conn.pipeline() if _PIPELINE else _anull()
    atomic: AbstractAsyncContextManager[Any] = (
        conn.transaction() if request.transaction else _anull()
    )
    async with pipeline, atomic:
        if request.lazy:
            await conn.execute(ASYNC_COMMIT)
        for stmt in request.statements:
            cur = conn.cursor(binary=True, row_factory=dict_row)
            await cur.execute(stmt.query, stmt.params, prepare=_prepare(conn, stmt))
            cursors.append((cur, stmt.fetch))
    try:
        return [await _afetch(cur, fetch) for cur, fetch in cursors]
    finally:
        for cur, _ in cursors:
            await cur.close()


def _anull() -> AbstractAsyncContextManager[None]:
    return nullcontext()
