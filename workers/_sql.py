"""Named queries from ``sql/queries.sql``, loaded once, and the workers' migrations."""

from __future__ import annotations

import functools
import re
from typing import LiteralString

from checkpoint_pg.named_queries import NamedQueries
from checkpoint_pg.schema import Migrations

QUERIES = NamedQueries("workers", "sql/queries.sql")

_COMMENT_LINES = re.compile(r"^[ \t]*--[^\n]*\n?", re.MULTILINE)


def queries() -> NamedQueries:
    return QUERIES


@functools.cache
def query(name: str) -> LiteralString:
    """The statement as sent: without its comment lines. psycopg caches the parse of a
    statement's text only up to 4,096 bytes (``MAX_CACHED_STATEMENT_LENGTH``); a longer
    one is parsed again at every execution, and the comments would make some that long."""
    return _COMMENT_LINES.sub("", QUERIES[name])


# The workers' tables (runs, step barrier, stream events): numbered files in
# sql/migrations, run by checkpoint_pg's runner but recorded in their own table under
# their own lock, so their version moves independently of the checkpoint tables'.
MIGRATIONS = Migrations(
    "workers",
    "sql/migrations",
    table="graphruntime_workers_migrations",
    lock_key="graphruntime_workers_migrations",
    component="workers",
    setup_hint="run `graphrun db migrate` (or RunStore.setup())",
)
