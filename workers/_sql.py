"""Named queries from ``sql/queries.sql``, loaded once, and the workers' migrations."""

from __future__ import annotations

from typing import LiteralString

from checkpoint_pg.named_queries import NamedQueries
from checkpoint_pg.schema import Migrations

QUERIES = NamedQueries("workers", "sql/queries.sql")


def queries() -> NamedQueries:
    return QUERIES


def query(name: str) -> LiteralString:
    """The statement as sent (without its comment lines: see ``NamedQueries``)."""
    return QUERIES[name]


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
