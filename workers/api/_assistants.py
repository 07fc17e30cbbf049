"""/assistants: named configs of a graph. Every graph of the config has a system
assistant (its id: uuid5 of the graph id, as LangGraph's); a graph id works wherever an
assistant id does."""

from __future__ import annotations

import uuid
from typing import Any, LiteralString

from starlette.responses import Response
from starlette.routing import Route

from workers.api import _runs as runs
from workers.api._context import ApiContext, ApiError, not_found, system_assistant_id
from workers.api._http import Call, endpoint, parse, query_bool
from workers.api._models import (
    AssistantCount,
    AssistantCreate,
    AssistantPatch,
    AssistantSearch,
    AssistantVersions,
    LatestVersion,
)

_SORTS: dict[str, LiteralString] = {
    "assistant_id": "assistant_id",
    "graph_id": "graph_id",
    "name": "name",
    "created_at": "created_at",
    "updated_at": "updated_at",
}


def ensure_system_assistants(ctx: ApiContext) -> None:
    for graph_id, description in ctx.graphs.items():
        ctx.rows(
            "ensure_assistant",
            {
                "assistant_id": system_assistant_id(graph_id),
                "graph_id": graph_id,
                "name": graph_id,
                "description": description,
                "config": {},
                "context": {},
                "metadata": {"created_by": "system"},
            },
        )


def assistant_json(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "assistant_id": str(row["assistant_id"]),
        "graph_id": row["graph_id"],
        "config": row["config"],
        "context": row["context"],
        "metadata": row["metadata"],
        "name": row["name"],
        "created_at": row["created_at"],
        "updated_at": row.get("updated_at", row["created_at"]),
        "version": row["version"],
        "description": row["description"],
    }


def _known_graph(ctx: ApiContext, graph_id: str) -> None:
    if graph_id not in ctx.graphs:
        raise ApiError(
            404, f"Graph {graph_id!r} not found: the config serves {', '.join(sorted(ctx.graphs))}"
        )


def get(call: Call) -> Any:
    _, row = call.ctx.graph_of_assistant(call.path["assistant_id"])
    return assistant_json(row)


def create(call: Call) -> Any:
    body = parse(AssistantCreate, call.body)
    ctx = call.ctx
    _known_graph(ctx, body.graph_id)
    assistant_id = body.assistant_id or str(uuid.uuid4())
    try:
        uuid.UUID(assistant_id)
    except ValueError:
        raise ApiError(422, "assistant_id must be a UUID") from None
    made = ctx.rows(
        "ensure_assistant",
        {
            "assistant_id": assistant_id,
            "graph_id": body.graph_id,
            "name": body.name or "Untitled",
            "description": body.description,
            "config": body.config or {},
            "context": body.context or {},
            "metadata": body.metadata or {},
        },
    )
    if not made and body.if_exists == "raise":
        raise ApiError(409, f"Assistant {assistant_id} already exists")
    _, row = ctx.graph_of_assistant(assistant_id)
    return assistant_json(row)


def patch(call: Call) -> Any:
    body = parse(AssistantPatch, call.body)
    ctx = call.ctx
    _, row = ctx.graph_of_assistant(call.path["assistant_id"])
    if body.graph_id is not None:
        _known_graph(ctx, body.graph_id)
    updated = ctx.row(
        "update_assistant",
        {
            "assistant_id": str(row["assistant_id"]),
            "graph_id": body.graph_id,
            "name": body.name,
            "description": body.description,
            "config": body.config,
            "context": body.context,
            "metadata": body.metadata,
        },
    )
    if updated is None:
        raise not_found(f"Assistant {row['assistant_id']}")
    return assistant_json(updated)


def delete(call: Call) -> Any:
    ctx = call.ctx
    _, row = ctx.graph_of_assistant(call.path["assistant_id"])
    ctx.row("delete_assistant", {"assistant_id": str(row["assistant_id"])})
    return Response(status_code=204)


def search(call: Call) -> Any:
    body = parse(AssistantSearch, call.body)
    order = _SORTS[body.sort_by or "created_at"]
    direction: LiteralString = "ASC" if body.sort_order == "asc" else "DESC"
    rows = call.ctx.rows(
        "search_assistants",
        {
            "graph_id": body.graph_id,
            "metadata": body.metadata,
            "name": body.name,
            "limit": body.limit,
            "offset": body.offset,
        },
        order=f"{order} {direction}, assistant_id {direction}",
    )
    found = [assistant_json(r) for r in rows]
    if body.select:
        found = [{k: a[k] for k in body.select if k in a} for a in found]
    return found


def count(call: Call) -> Any:
    body = parse(AssistantCount, call.body)
    row = call.ctx.row(
        "count_assistants",
        {"graph_id": body.graph_id, "metadata": body.metadata, "name": body.name},
    )
    return int(row["n"]) if row else 0


def versions(call: Call) -> Any:
    body = parse(AssistantVersions, call.body)
    ctx = call.ctx
    _, row = ctx.graph_of_assistant(call.path["assistant_id"])
    rows = ctx.rows(
        "assistant_versions",
        {
            "assistant_id": str(row["assistant_id"]),
            "metadata": body.metadata,
            "limit": body.limit,
            "offset": body.offset,
        },
    )
    versions = []
    for r in rows:
        found = assistant_json({**r, "updated_at": r["created_at"]})
        del found["updated_at"]  # a version is never updated
        versions.append(found)
    return versions


def latest(call: Call) -> Any:
    body = parse(LatestVersion, call.body)
    ctx = call.ctx
    _, row = ctx.graph_of_assistant(call.path["assistant_id"])
    updated = ctx.row(
        "set_assistant_version", {"assistant_id": str(row["assistant_id"]), "version": body.version}
    )
    if updated is None:
        raise not_found(f"Version {body.version} of assistant {row['assistant_id']}")
    return assistant_json(updated)


def graph(call: Call) -> Any:
    ctx = call.ctx
    graph_id, _ = ctx.graph_of_assistant(call.path["assistant_id"])
    raw = call.query.get("xray", "false")
    xray: int | bool
    if raw.isdigit():
        xray = int(raw)
    else:
        xray = query_bool(call.query, "xray")
    return runs.graph_info(ctx, graph_id, kind="graph", xray=xray)


def schemas(call: Call) -> Any:
    ctx = call.ctx
    graph_id, _ = ctx.graph_of_assistant(call.path["assistant_id"])
    return {"graph_id": graph_id, **runs.graph_info(ctx, graph_id, kind="schemas", name=graph_id)}


def subgraphs(call: Call) -> Any:
    ctx = call.ctx
    graph_id, _ = ctx.graph_of_assistant(call.path["assistant_id"])
    namespace = call.path.get("namespace") or call.query.get("namespace")
    recurse = query_bool(call.query, "recurse")
    found = runs.graph_info(ctx, graph_id, kind="subgraphs", namespace=namespace, recurse=recurse)
    return {ns: {"graph_id": graph_id, **s} for ns, s in found.items()}


ROUTES = [
    Route("/assistants", endpoint(create), methods=["POST"]),
    Route("/assistants/search", endpoint(search), methods=["POST"]),
    Route("/assistants/count", endpoint(count), methods=["POST"]),
    Route("/assistants/{assistant_id}", endpoint(get), methods=["GET"]),
    Route("/assistants/{assistant_id}", endpoint(patch), methods=["PATCH"]),
    Route("/assistants/{assistant_id}", endpoint(delete), methods=["DELETE"]),
    Route("/assistants/{assistant_id}/versions", endpoint(versions), methods=["POST"]),
    Route("/assistants/{assistant_id}/latest", endpoint(latest), methods=["POST"]),
    Route("/assistants/{assistant_id}/graph", endpoint(graph), methods=["GET"]),
    Route("/assistants/{assistant_id}/schemas", endpoint(schemas), methods=["GET"]),
    Route("/assistants/{assistant_id}/subgraphs", endpoint(subgraphs), methods=["GET"]),
    Route("/assistants/{assistant_id}/subgraphs/{namespace}", endpoint(subgraphs), methods=["GET"]),
]
