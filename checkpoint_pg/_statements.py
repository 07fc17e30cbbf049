"""The statements of a put and of writes, composed (no I/O): which put statement fits its
parameters, and the multi-row writes statements, within Postgres' parameter limit."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from psycopg import sql

from checkpoint_pg import _queries as q

__all__ = ("Statement", "composed", "plain_put", "returns_row")

# Postgres takes at most 65535 parameters per statement; 10 per write.
_MAX_WRITES = 65535 // 10

Statement = tuple[bytes, list[Any]]
"""A composed writes statement and its parameters."""


def composed(upsert: bool, rows: list[list[Any]]) -> list[Statement]:
    """Multi-row statements of at most _MAX_WRITES rows (Postgres' parameter limit)."""
    out = []
    for i in range(0, len(rows), _MAX_WRITES):
        chunk = rows[i : i + _MAX_WRITES]
        out.append((_writes_query(upsert, len(chunk)), [p for row in chunk for p in row]))
    return out


@functools.lru_cache(maxsize=128)
def _writes_query(upsert: bool, n: int) -> bytes:
    """The insert (or upsert) statement for ``n`` writes, composed once per shape."""
    template = sql.SQL(q.UPSERT_WRITES if upsert else q.INSERT_WRITES)
    rows = sql.SQL(", ").join([sql.SQL(q.WRITE_ROW)] * n)
    return template.format(rows=rows).as_bytes(None)


def plain_put(params: Mapping[str, Any]) -> str:
    """The unfenced put statement for ``params``: with every value inline (no blob to
    check), a plain upsert that returns no row."""
    return q.PUT_CHECKPOINT_ROW if params["blob_versions"] is None else q.PUT_CHECKPOINT


def returns_row(query: str | None) -> bool:
    """Whether a put statement returns its verdict row (all but the plain upsert)."""
    return query is not None and query != q.PUT_CHECKPOINT_ROW
