"""Named queries: a ``.sql`` file shipped in a package, split at its ``-- name: <name>``
headers, one statement (or fragment) per name.

SQL lives in ``.sql`` files so it can be read, linted and diffed as SQL. Every set of
named queries loads through here: the saver's, the store's and the cache's in
checkpoint_pg, the run store's and the API's in workers. Each statement is returned
without its closing ``;``, its comment lines and its indentation, so fragments compose, as a
``LiteralString``: trusted text shipped with the package, never built from input.
psycopg caches the parse of a statement's text only up to 4,096 bytes
(``MAX_CACHED_STATEMENT_LENGTH``): a longer one is parsed again at every execution, and
the comments that explain a statement would make some that long.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import cached_property
from importlib.resources import files
from typing import LiteralString, cast

from graphruntime.errors import InvalidArgumentError

__all__ = ("NamedQueries", "parse_queries")

_HEADER = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_COMMENT_LINES = re.compile(r"^[ \t]*--[^\n]*\n?", re.MULTILINE)
_INDENT = re.compile(r"^[ \t]+", re.MULTILINE)


def parse_queries(text: str, source: str = "the SQL text") -> dict[str, LiteralString]:
    """Split ``text`` into ``{name: sql}`` at its ``-- name:`` lines (what comes before
    the first one is a preamble, not a query)."""
    parts = _HEADER.split(text)
    # parts = [preamble, name1, body1, name2, body2, ...]
    queries: dict[str, LiteralString] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise InvalidArgumentError(
                f"query {name!r} is defined twice in {source}: give each query its own name"
            )
        sent: str = _INDENT.sub("", _COMMENT_LINES.sub("", body))
        # the package's own text: literal as far as injection goes
        queries[name] = cast(LiteralString, sent.strip().rstrip(";").rstrip())  # type: ignore[redundant-cast]
    return queries


class NamedQueries(Mapping[str, LiteralString]):
    """The named queries of ``resource`` (a path inside ``package``), read on first use.

    ``queries["name"]`` is the statement; a name the file does not define raises
    ``KeyError`` naming the file.
    """

    def __init__(self, package: str, resource: str) -> None:
        self.package = package
        self.resource = resource

    @cached_property
    def _queries(self) -> dict[str, LiteralString]:
        text = (files(self.package) / self.resource).read_text("utf-8")
        return parse_queries(text, f"{self.package}/{self.resource}")

    def __getitem__(self, name: str) -> LiteralString:
        try:
            return self._queries[name]
        except KeyError:
            raise KeyError(f"no query {name!r} in {self.package}/{self.resource}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._queries)

    def __len__(self) -> int:
        return len(self._queries)

    def __repr__(self) -> str:
        return f"NamedQueries({self.package!r}, {self.resource!r})"
