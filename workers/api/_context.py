"""What every request handler shares: the client, the graphs, the API's tables."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, LiteralString

from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from workers._api_schema import query
from workers.client import GraphClient
from workers.errors import WorkerError

SYSTEM_ASSISTANT_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
"""LangGraph's namespace for a graph's system assistant id (uuid5 of the graph id)."""


def system_assistant_id(graph_id: str) -> str:
    return str(uuid.uuid5(SYSTEM_ASSISTANT_NAMESPACE, graph_id))


class ApiError(WorkerError):
    """An HTTP error with LangGraph's body (``{"detail": ...}``)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def not_found(what: str) -> ApiError:
    return ApiError(404, f"{what} not found")


@dataclass
class ApiContext:
    """The server's state: a :class:`GraphClient` (which never loads a graph: what needs a
    graph's code is asked of the workers) and the graphs of its langgraph.json."""

    client: GraphClient
    graphs: dict[str, str | None]
    """Graph id -> description."""
    token: str | None = None
    max_body: int = 10 << 20
    cors_origins: tuple[str, ...] = ()
    """Origins besides loopback ones whose pages may call the API from a browser."""
    node_store: Any = None
    """The workers' shared store (``checkpoint_pg.PostgresStore``) for /store."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def pool(self) -> Any:
        return self.client.store.pool  # type: ignore[attr-defined]

    def rows(
        self,
        name: str,
        params: Mapping[str, Any],
        *,
        order: LiteralString | None = None,
    ) -> list[dict[str, Any]]:
        """Rows of a named query of workers/sql/api_queries.sql (``order`` fills {order})."""
        text: Any = query(name)
        if order is not None:
            text = sql.SQL(text).format(order=sql.SQL(order))
        with self.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            cur.execute(text, _params(params), prepare=False if order else None)
            return list(cur.fetchall()) if cur.description else []

    def row(
        self, name: str, params: Mapping[str, Any], *, order: LiteralString | None = None
    ) -> dict[str, Any] | None:
        found = self.rows(name, params, order=order)
        return found[0] if found else None

    def graph_of_assistant(self, assistant_id: str) -> tuple[str, dict[str, Any]]:
        """The graph id and the assistant's row; a graph id works as an assistant id."""
        if assistant_id in self.graphs:
            assistant_id = system_assistant_id(assistant_id)
        try:
            uuid.UUID(assistant_id)
        except ValueError:
            raise ApiError(
                422, f"Invalid assistant ID {assistant_id!r}: must be a UUID or a graph id"
            ) from None
        found = self.row("get_assistant", {"assistant_id": assistant_id})
        if found is None:
            raise not_found(f"Assistant {assistant_id}")
        return str(found["graph_id"]), found


def _params(params: Mapping[str, Any]) -> dict[str, Any]:
    """dicts and lists as jsonb (text arrays stay lists when named so)."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        if isinstance(value, dict):
            out[key] = Jsonb(value)
        else:
            out[key] = value
    return out


def as_json(value: Any) -> str:
    return json.dumps(value)
