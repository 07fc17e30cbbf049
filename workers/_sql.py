"""Named queries from ``sql/queries.sql`` and the schema, loaded once."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import LiteralString, cast

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


@cache
def schema() -> LiteralString:
    text: LiteralString = resources.files("workers").joinpath("sql/schema.sql").read_text()
    return text
