"""A cursor kept on a connection for its next statements.

Making a cursor per statement costs a hot statement about a fifth of its CPU (the cursor,
its adapters' lookups). The saver, the store and workers' run store run their single
statements on the cursor :func:`kept_cursor` keeps instead.
"""

from __future__ import annotations

import threading
from typing import Any

from psycopg import Connection, Cursor
from psycopg.rows import DictRow, dict_row

__all__ = ("kept_cursor",)

_KEPT = "_checkpoint_pg_cursors"


def kept_cursor(conn: Connection[Any], *, binary: bool = False) -> Cursor[DictRow]:
    """A ``dict_row`` cursor of ``conn`` for this thread, kept on the connection.

    One per thread: a connection shared by a saver and a store serves threads whose
    statements may interleave. It holds its last result until its next statement, and
    goes with the connection (a cursor refers to its connection: a cache beside them
    would keep closed ones alive). Not for a connection in pipeline mode, whose results
    come later: a statement there needs a cursor of its own.
    """
    kept: dict[tuple[int, bool], Cursor[DictRow]] | None = getattr(conn, _KEPT, None)
    if kept is None:
        kept = {}
        setattr(conn, _KEPT, kept)
    key = (threading.get_ident(), binary)
    cur = kept.get(key)
    if cur is None or cur.closed:
        cur = kept[key] = conn.cursor(binary=binary, row_factory=dict_row)
    return cur
