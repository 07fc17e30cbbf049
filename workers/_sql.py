"""Named queries from ``sql/queries.sql``, loaded once, and the workers' migrations."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import LiteralString, cast

from checkpoint_pg.schema import Migrations

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)


@cache
def queries() -> dict[str, LiteralString]:
    text = resources.files("workers").joinpath("sql/queries.sql").read_text()
    parts = _NAME.split(text)
    return {
        name: cast(LiteralString, body.strip().rstrip(";"))
        for name, body in zip(parts[1::2], parts[2::2], strict=True)
    }


def query(name: str) -> LiteralString:
    return queries()[name]


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
