"""What the run store's rules run on: a connector of named queries, and the store's base.

A :class:`Connector` runs the named queries of ``workers/sql/queries.sql``: on Postgres
(``workers.store.postgres``), or their in-memory mirror, one method per query
(``workers.store.memory``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from graphruntime.checkpoint import JsonSerializer, SerializerProtocol

__all__ = ("Connector", "Params", "Row", "Session", "StoreBase", "one")

Row = dict[str, Any]
"""A row as a query returns it: column name -> value."""
Params = Mapping[str, Any]


class Session(Protocol):
    """One connection (or transaction) of a :class:`Connector`: named queries on it."""

    def all(self, name: str, params: Params | None = None) -> list[Row]:
        """The query's rows (none for a statement that returns none)."""
        ...

    def many(
        self, name: str, params: Sequence[Params], *, returning: bool = True
    ) -> list[list[Row]]:
        """The query once per params, pipelined; each one's rows (``returning``)."""
        ...


class Connector(Protocol):
    """Runs the named queries: Postgres, or their in-memory mirror."""

    def session(
        self, operation: str, *, transaction: bool = False
    ) -> AbstractContextManager[Session]:
        """A connection for ``operation`` (named in errors), in one transaction if asked."""
        ...

    def batch(self, operation: str, statements: Sequence[tuple[str, Params]]) -> list[list[Row]]:
        """The statements in one transaction, sent in one round trip; each one's rows."""
        ...


def one(rows: list[Row]) -> Row | None:
    return rows[0] if rows else None


class StoreBase:
    """A connector and the serde the store's values go through."""

    def __init__(self, db: Connector, serde: SerializerProtocol | None = None) -> None:
        self.db = db
        self.serde = serde or JsonSerializer()

    def _all(self, name: str, params: Params | None = None) -> list[Row]:
        """One statement on a connection of its own."""
        with self.db.session(name) as s:
            return s.all(name, params)

    def _load(self, type_: str | None, data: bytes | None) -> Any:
        return (
            None if type_ is None or data is None else self.serde.loads_typed((type_, bytes(data)))
        )
