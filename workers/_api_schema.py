"""The API's tables: their migrations (a component of their own, with its own version
table and lock, so they never collide with the workers') and their named queries."""

from __future__ import annotations

from typing import LiteralString

from checkpoint_pg.named_queries import NamedQueries
from checkpoint_pg.schema import Migrations

API_MIGRATIONS = Migrations(
    "workers",
    "sql/api_migrations",
    table="graphruntime_api_migrations",
    lock_key="graphruntime_api_migrations",
    component="api",
    setup_hint="run `graphrun db migrate`",
)

_QUERIES = NamedQueries("workers", "sql/api_queries.sql")


def query(name: str) -> LiteralString:
    return _QUERIES[name]
