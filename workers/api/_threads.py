"""/threads: create, get, patch, delete, copy, search, count, state, history, prune.

A thread's ``values`` and ``interrupts`` are read from its head checkpoint (one round
trip for a page of threads, no graph code needed); its ``status`` from the workers'
runs and inbox. What needs the graph (``next`` and ``tasks`` of a state, an edit) is
computed by a worker that serves it.
"""

from __future__ import annotations

import uuid
from typing import Any, LiteralString

from starlette.routing import Route

from graphruntime.config import RunnableConfig
from workers.api import _runs as runs
from workers.api._context import ApiContext, ApiError, not_found
from workers.api._http import Call, endpoint, parse, query_bool, query_int
from workers.api._json import jsonable, snapshot_json
from workers.api._models import (
    CheckpointRef,
    HistoryBody,
    StateGetBody,
    StateUpdate,
    ThreadCount,
    ThreadCreate,
    ThreadPatch,
    ThreadPrune,
    ThreadSearch,
)

INTERRUPT = "__interrupt__"
COPY_KEYS = ("thread_id", "created_at", "updated_at", "state_updated_at", "metadata", "status")
"""What a copy answers (LangGraph's: the new thread without its state)."""

_SORTS: dict[str, LiteralString] = {
    "thread_id": "t.thread_id",
    "status": "graphruntime_api_thread_status(t.thread_id)",
    "created_at": "t.created_at",
    "updated_at": "t.updated_at",
}


def _state_values(channel_values: dict[str, Any]) -> dict[str, Any]:
    return {
        name: value
        for name, value in channel_values.items()
        if not name.startswith("__") and ":" not in name
    }


def threads_json(ctx: ApiContext, ids: list[str]) -> list[dict[str, Any]]:
    """The API's threads of ``ids`` (those that exist), in order."""
    if not ids:
        return []
    rows = ctx.rows("threads_by_ids", {"ids": ids})
    heads = runs.heads(ctx, [r["thread_id"] for r in rows])
    out = []
    for row, head in zip(rows, heads, strict=True):
        values = None
        interrupts: dict[str, list[dict[str, Any]]] = {}
        if head is not None:
            values = _state_values(head.checkpoint.get("channel_values") or {})
            for task_id, channel, value in head.pending_writes or ():
                if channel == INTERRUPT:
                    interrupts.setdefault(task_id, []).extend(
                        {"id": i.id, "value": jsonable(i.value)} for i in value
                    )
        if row["status"] != "interrupted":
            interrupts = {}
        error = row["last_error"] if row["status"] == "error" else None
        thread = {
            "thread_id": row["thread_id"],
            "created_at": row["created_at"],
            "updated_at": row["updated_at"],
            "state_updated_at": row["updated_at"],
            "metadata": row["metadata"],
            "status": row["status"],
            "config": row["config"],
            "values": jsonable(values),
        }
        if row["graph"] is not None:  # a thread that ran: its error and waits, as LangGraph
            thread["error"] = (
                None
                if error is None
                else {"error": error.get("type", "Error"), "message": error.get("message", "")}
            )
            thread["interrupts"] = interrupts
        out.append(thread)
    return out


def thread_json(ctx: ApiContext, thread_id: str) -> dict[str, Any]:
    found = threads_json(ctx, [thread_id])
    if not found:
        raise not_found(f"Thread {thread_id}")
    return found[0]


def thread_graph(ctx: ApiContext, thread_id: str) -> str | None:
    """The graph the thread belongs to (its first run's), None before any run."""
    row = ctx.row("threads_by_ids", {"ids": [thread_id]})
    if row is None:
        raise not_found(f"Thread {thread_id}")
    graph = row["graph"] or (row["metadata"] or {}).get("graph_id")
    return str(graph) if graph else None


def ensure_thread(ctx: ApiContext, thread_id: str, metadata: dict[str, Any] | None = None) -> bool:
    """Create the thread if it does not exist; whether it was made."""
    made = ctx.row(
        "create_thread", {"thread_id": thread_id, "metadata": metadata or {}, "config": {}}
    )
    return bool(made and made["made"])


def create(call: Call) -> Any:
    body = parse(ThreadCreate, call.body)
    if body.supersteps:
        raise ApiError(422, "supersteps on thread creation are not available in graphrun serve")
    thread_id = body.thread_id or str(uuid.uuid4())
    made = ensure_thread(call.ctx, thread_id, body.metadata)
    if not made and body.if_exists == "raise":
        raise ApiError(409, f"Thread {thread_id} already exists")
    return thread_json(call.ctx, thread_id)


def get(call: Call) -> Any:
    return thread_json(call.ctx, call.path["thread_id"])


def patch(call: Call) -> Any:
    body = parse(ThreadPatch, call.body)
    thread_id = call.path["thread_id"]
    thread_json(call.ctx, thread_id)  # 404 first
    call.ctx.row("update_thread", {"thread_id": thread_id, "metadata": body.metadata or {}})
    return thread_json(call.ctx, thread_id)


def delete(call: Call) -> Any:
    from starlette.responses import Response

    ctx, thread_id = call.ctx, call.path["thread_id"]
    graph = thread_graph(ctx, thread_id)
    if graph is not None and runs.active_runs(ctx, thread_id):
        runs.cancel_thread(ctx, graph, thread_id, call.actor)  # applied or queued
    ensure_thread(ctx, thread_id)  # a thread only the workers knew gets a row to hide
    ctx.row("delete_thread", {"thread_id": thread_id})
    ctx.rows("delete_thread_runs", {"thread_id": thread_id})
    runs.delete_checkpoints(ctx, thread_id)
    return Response(status_code=204)


def copy(call: Call) -> Any:
    ctx, source = call.ctx, call.path["thread_id"]
    original = thread_json(ctx, source)
    target = runs.new_thread_id()
    ensure_thread(ctx, target, original["metadata"])
    runs.copy_checkpoints(ctx, source, target)
    copied = thread_json(ctx, target)
    return {k: copied[k] for k in COPY_KEYS}


def _metadata_graph(metadata: dict[str, Any] | None) -> tuple[dict[str, Any] | None, str | None]:
    """A ``graph_id`` metadata filter also matches threads the workers ran (by graph)."""
    if not metadata:
        return None, None
    graph = metadata.get("graph_id")
    rest = {k: v for k, v in metadata.items() if k != "graph_id"}
    return (rest or None), (str(graph) if isinstance(graph, str) else None)


def search(call: Call) -> Any:
    body = parse(ThreadSearch, call.body)
    ctx = call.ctx
    if body.status == "interrupted":
        metadata, graph = _metadata_graph(body.metadata)
        ids = [
            r["thread_id"]
            for r in ctx.rows(
                "search_interrupted_threads",
                {
                    "graph": graph,
                    "metadata": metadata,
                    "ids": body.ids,
                    "limit": body.limit,
                    "offset": body.offset,
                },
            )
        ]
    else:
        order = _SORTS[body.sort_by or "created_at"]
        direction: LiteralString = "ASC" if body.sort_order == "asc" else "DESC"
        ids = [
            r["thread_id"]
            for r in ctx.rows(
                "search_threads",
                {
                    "metadata": body.metadata,
                    "ids": body.ids,
                    "status": body.status,
                    "limit": body.limit if body.values is None else 1000,
                    "offset": body.offset if body.values is None else 0,
                },
                order=f"{order} {direction}, t.thread_id {direction}",
            )
        ]
    found = threads_json(ctx, ids)
    if body.values is not None:
        wanted = body.values
        found = [
            t
            for t in found
            if isinstance(t["values"], dict)
            and all(t["values"].get(k) == v for k, v in wanted.items())
        ][body.offset : body.offset + body.limit]
    if body.select:
        found = [{k: t[k] for k in body.select if k in t} for t in found]
    return found


def count(call: Call) -> Any:
    body = parse(ThreadCount, call.body)
    if body.values is not None:
        raise ApiError(422, "counting threads by values is not available in graphrun serve")
    if body.status == "interrupted":
        metadata, graph = _metadata_graph(body.metadata)
        row = call.ctx.row(
            "count_interrupted_threads", {"graph": graph, "metadata": metadata, "ids": None}
        )
    else:
        row = call.ctx.row(
            "count_threads", {"metadata": body.metadata, "ids": None, "status": body.status}
        )
    return int(row["n"]) if row else 0


def _config(
    thread_id: str, checkpoint: CheckpointRef | None = None, checkpoint_id: str | None = None
) -> RunnableConfig:
    conf: dict[str, Any] = {"thread_id": thread_id}
    if checkpoint is not None:
        if checkpoint.checkpoint_id:
            conf["checkpoint_id"] = checkpoint.checkpoint_id
        if checkpoint.checkpoint_ns:
            conf["checkpoint_ns"] = checkpoint.checkpoint_ns
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def empty_state(thread_id: str) -> dict[str, Any]:
    return {
        "values": {},
        "next": [],
        "tasks": [],
        "metadata": None,
        "created_at": None,
        "checkpoint": None,
        "parent_checkpoint": None,
        "interrupts": [],
        "checkpoint_id": None,
        "parent_checkpoint_id": None,
    }


def _state(ctx: ApiContext, thread_id: str, config: RunnableConfig, subgraphs: bool) -> Any:
    graph = thread_graph(ctx, thread_id)
    if graph is None:
        return empty_state(thread_id)
    snapshot = runs.get_state(ctx, graph, config, subgraphs=subgraphs)
    if not snapshot.config:
        return empty_state(thread_id)
    return snapshot_json(snapshot)


def get_state(call: Call) -> Any:
    thread_id = call.path["thread_id"]
    subgraphs = query_bool(call.query, "subgraphs")
    return _state(call.ctx, thread_id, _config(thread_id), subgraphs)


def get_state_at(call: Call) -> Any:
    thread_id = call.path["thread_id"]
    subgraphs = query_bool(call.query, "subgraphs")
    config = _config(thread_id, checkpoint_id=call.path["checkpoint_id"])
    return _state(call.ctx, thread_id, config, subgraphs)


def post_state_at(call: Call) -> Any:
    thread_id = call.path["thread_id"]
    body = parse(StateGetBody, call.body)
    return _state(call.ctx, thread_id, _config(thread_id, body.checkpoint), body.subgraphs)


def update_state(call: Call) -> Any:
    ctx, thread_id = call.ctx, call.path["thread_id"]
    body = parse(StateUpdate, call.body)
    graph = thread_graph(ctx, thread_id)
    if graph is None:
        raise ApiError(
            409,
            f"Thread {thread_id} has no graph yet: start a run on it first (its first run binds "
            "it to a graph)",
        )
    config = _config(thread_id, body.checkpoint, body.checkpoint_id)
    edited = runs.update_state(ctx, graph, config, body.values, body.as_node)
    conf = edited.get("configurable") or {}
    checkpoint = {
        "thread_id": conf.get("thread_id", thread_id),
        "checkpoint_ns": conf.get("checkpoint_ns", ""),
        "checkpoint_id": conf.get("checkpoint_id"),
    }
    return {
        "checkpoint": checkpoint,
        "configurable": dict(checkpoint),
        "checkpoint_id": checkpoint["checkpoint_id"],
    }


def _history(ctx: ApiContext, thread_id: str, body: HistoryBody) -> Any:
    graph = thread_graph(ctx, thread_id)
    if graph is None:
        return []
    config = _config(thread_id, body.checkpoint)
    before: RunnableConfig | None = None
    if isinstance(body.before, str):
        before = _config(thread_id, checkpoint_id=body.before)
    elif body.before is not None:
        before = _config(thread_id, body.before)
    found = runs.history(ctx, graph, config, filter=body.metadata, before=before, limit=body.limit)
    return [snapshot_json(s) for s in found]


def history_post(call: Call) -> Any:
    return _history(call.ctx, call.path["thread_id"], parse(HistoryBody, call.body))


def history_get(call: Call) -> Any:
    body = HistoryBody(
        limit=query_int(call.query, "limit", 10, 1, 1000),
        before=call.query.get("before"),
    )
    return _history(call.ctx, call.path["thread_id"], body)


def prune(call: Call) -> Any:
    body = parse(ThreadPrune, call.body)
    ctx = call.ctx
    pruned = 0
    for thread_id in body.thread_ids:
        if not threads_json(ctx, [thread_id]):
            continue
        if body.strategy == "delete":
            ensure_thread(ctx, thread_id)
            ctx.row("delete_thread", {"thread_id": thread_id})
            ctx.rows("delete_thread_runs", {"thread_id": thread_id})
            runs.delete_checkpoints(ctx, thread_id)
        else:
            runs.prune_checkpoints(ctx, thread_id, 1)
        pruned += 1
    return {"pruned_count": pruned}


ROUTES = [
    Route("/threads", endpoint(create), methods=["POST"]),
    Route("/threads/search", endpoint(search), methods=["POST"]),
    Route("/threads/count", endpoint(count), methods=["POST"]),
    Route("/threads/prune", endpoint(prune), methods=["POST"]),
    Route("/threads/{thread_id}", endpoint(get), methods=["GET"]),
    Route("/threads/{thread_id}", endpoint(patch), methods=["PATCH"]),
    Route("/threads/{thread_id}", endpoint(delete), methods=["DELETE"]),
    Route("/threads/{thread_id}/copy", endpoint(copy), methods=["POST"]),
    Route("/threads/{thread_id}/state", endpoint(get_state), methods=["GET"]),
    Route("/threads/{thread_id}/state", endpoint(update_state), methods=["POST"]),
    Route("/threads/{thread_id}/state/checkpoint", endpoint(post_state_at), methods=["POST"]),
    Route("/threads/{thread_id}/state/{checkpoint_id}", endpoint(get_state_at), methods=["GET"]),
    Route("/threads/{thread_id}/history", endpoint(history_get), methods=["GET"]),
    Route("/threads/{thread_id}/history", endpoint(history_post), methods=["POST"]),
]
