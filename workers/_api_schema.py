"""The API's tables: their migrations (a component of their own, with its own version
table and lock, so they never collide with the workers') and their named queries."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import LiteralString, cast

from checkpoint_pg.schema import Migrations

API_MIGRATIONS = Migrations(
    "workers",
    "sql/api_migrations",
    table="graphruntime_api_migrations",
    lock_key="graphruntime_api_migrations",
    component="api",
    setup_hint="run `graphrun db migrate`",
)

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)


@cache
def _queries() -> dict[str, LiteralString]:
    text = resources.files("workers").joinpath("sql/api_queries.sql").read_text()
    parts = _NAME.split(text)
    return {
        name: cast(LiteralString, body.strip().rstrip(";"))
        for name, body in zip(parts[1::2], parts[2::2], strict=True)
    }


def query(name: str) -> LiteralString:
    return _queries()[name]
