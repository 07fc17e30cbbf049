"""/threads/{id}/runs and /runs: create, stream, wait, batch, get, list, join, join
stream, cancel, delete. Every run goes to the workers (:mod:`workers.api._runs`)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
from sse_starlette.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from graphruntime.config import RunnableConfig
from workers.api import _runs as runs
from workers.api._context import ApiContext, ApiError, not_found
from workers.api._http import (
    Call,
    endpoint,
    error_response,
    parse,
    query_bool,
    query_int,
    read_json,
)
from workers.api._json import dumps, jsonable
from workers.api._models import RunCreate
from workers.api._threads import ensure_thread, threads_json
from workers.store import Event, Run

WAIT_TIMEOUT = 3600.0
"""Seconds a /wait or /join request waits for its run (the run goes on after)."""


def run_json(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": str(row["run_id"]),
        "thread_id": row["thread_id"],
        "assistant_id": str(row["assistant_id"]) if row.get("assistant_id") else None,
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "status": runs.RUN_STATUS.get(row["status"], row["status"]),
        "metadata": row.get("metadata") or {},
        "kwargs": row.get("kwargs") or {},
        "multitask_strategy": row.get("multitask_strategy") or "enqueue",
        "langsmith_session_name": None,
    }


def load_run(ctx: ApiContext, thread_id: str | None, run_id: str) -> dict[str, Any]:
    try:
        uuid.UUID(run_id)
    except ValueError:
        raise ApiError(422, f"Invalid run ID {run_id!r}: must be a UUID") from None
    row = ctx.row("get_run", {"run_id": run_id})
    if row is None or (thread_id is not None and row["thread_id"] != thread_id):
        raise not_found(f"Run {run_id}")
    return row


def _rollback_point(ctx: ApiContext, thread_id: str, cancelled: list[str]) -> str | None:
    """The checkpoint the thread was at before the first of the ``cancelled`` runs."""
    saver = ctx.client.saver
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    first: Any = None
    for item in saver.list(config):
        if item.metadata.get("run_id") in cancelled:
            first = item  # newest first: the last one seen is the oldest
    if first is None or first.parent_config is None:
        return None
    return str(first.parent_config["configurable"].get("checkpoint_id"))


def create_run(
    ctx: ApiContext,
    thread_id: str | None,
    body: RunCreate,
    actor: str | None,
    *,
    idempotency_key: str | None = None,
    temporary: bool | None = None,
) -> dict[str, Any]:
    """Queue the run for the workers; its API row. Nothing is written on a refusal.

    ``idempotency_key``: the same key on the thread gives the same run (a cron firing);
    ``temporary``: delete the thread once the run ended (default: stateless runs)."""
    graph, assistant = ctx.graph_of_assistant(body.assistant_id)
    modes = runs.worker_modes(body.modes())
    if body.after_seconds:
        raise ApiError(422, "after_seconds is not available in graphrun serve yet")
    stateless = thread_id is None
    if thread_id is None:
        if "if_not_exists" in body.model_fields_set:
            raise ApiError(422, "if_not_exists applies to runs on a thread")
        thread_id = runs.new_thread_id()
        if temporary is None:
            temporary = body.on_completion != "keep"
    elif body.on_completion is not None:
        raise ApiError(422, "on_completion applies to stateless runs (POST /runs)")
    temporary = bool(temporary)
    found = None if stateless else ctx.row("threads_by_ids", {"ids": [thread_id]})
    existing = found is not None
    if not stateless and not existing and body.if_not_exists != "create":
        raise not_found(f"Thread {thread_id}")
    thread_metadata: dict[str, Any] = dict(found["metadata"] or {}) if found else {}
    bound = (found["graph"] or thread_metadata.get("graph_id")) if found else None
    if bound is not None and bound != graph:
        raise ApiError(
            409, f"Thread {thread_id} belongs to graph {bound!r}, not {graph!r}; nothing changed"
        )
    fork_from: str | None = None
    if existing and body.multitask_strategy != "enqueue":
        active = runs.active_runs(ctx, thread_id)
        if active and body.multitask_strategy == "reject":
            raise ApiError(
                409,
                f"Thread {thread_id} is busy (run {active[0]}); multitask_strategy 'reject' "
                "refuses a second run",
            )
        if active:
            cancelled = runs.cancel_thread(ctx, bound or graph, thread_id, actor) or []
            if body.multitask_strategy == "rollback":
                fork_from = _rollback_point(ctx, thread_id, cancelled)
                for run_id in cancelled:
                    ctx.row("delete_run", {"run_id": run_id})
    if body.command is not None and body.command.resume is not None and existing:
        _check_resume(ctx, thread_id, body.command.resume)
    input: Any = runs.command_of(body.command) if body.command is not None else body.input
    configurable: dict[str, Any] = {
        **(assistant["config"] or {}).get("configurable", {}),
        **((body.config or {}).get("configurable") or {}),
        "thread_id": thread_id,
        "graph_id": graph,
        "assistant_id": str(assistant["assistant_id"]),
    }
    checkpoint_id = body.checkpoint_id or (
        body.checkpoint.checkpoint_id if body.checkpoint else None
    )
    if fork_from is not None and checkpoint_id is None:
        checkpoint_id = fork_from
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    if body.checkpoint is not None and body.checkpoint.checkpoint_ns:
        configurable["checkpoint_ns"] = body.checkpoint.checkpoint_ns
    metadata = {
        **(assistant["metadata"] or {}),
        **(thread_metadata or {}),
        **(body.metadata or {}),
        "graph_id": graph,
        "assistant_id": str(assistant["assistant_id"]),
    }
    config: dict[str, Any] = {
        **(assistant["config"] or {}),
        **(body.config or {}),
        "configurable": configurable,
        "metadata": {**((body.config or {}).get("metadata") or {}), **metadata},
    }
    context = {**(assistant["context"] or {}), **(body.context or {})}
    made = ensure_thread(ctx, thread_id) if not existing else False
    try:
        handle = runs.submit(
            ctx,
            graph,
            input,
            config,  # type: ignore[arg-type]
            modes=modes,
            subgraphs=body.stream_subgraphs,
            interrupt_before=body.interrupt_before,
            interrupt_after=body.interrupt_after,
            context=context,
            durability=body.durability,
            actor=actor,
            idempotency_key=idempotency_key,
        )
    except Exception:
        if made:  # refused: the thread made for it goes too
            ctx.row("delete_thread", {"thread_id": thread_id})
        raise
    kwargs = body.model_dump(mode="json", exclude_none=True, exclude={"assistant_id"})
    kwargs["stream_mode"] = body.modes()
    inserted = ctx.row(
        "insert_run",
        {
            "run_id": handle.run_id,
            "thread_id": thread_id,
            "assistant_id": str(assistant["assistant_id"]),
            "metadata": {**(thread_metadata or {}), **(body.metadata or {})},
            "kwargs": kwargs,
            "multitask_strategy": body.multitask_strategy,
            "temporary": temporary,
        },
    )
    if body.webhook:
        ctx.rows("add_webhook", {"run_id": handle.run_id, "url": body.webhook})
    ran = {"graph_id": graph, "assistant_id": str(assistant["assistant_id"])}
    if any(thread_metadata.get(k) != v for k, v in ran.items()):
        ctx.row("update_thread", {"thread_id": thread_id, "metadata": ran})
    if inserted is None:  # the same run again (a cron's firing under its key)
        return load_run(ctx, thread_id, handle.run_id)
    return {**inserted, "status": "queued", "updated_at": inserted["created_at"]}


def _check_resume(ctx: ApiContext, thread_id: str, resume: Any) -> None:
    """Refuse (400, nothing queued) a resume of a thread that waits on nothing, or a resume
    map naming waits it does not have. While a run is under way the worker decides, when
    the resume's turn comes; a thread stopped at a static breakpoint (no wait in the
    inbox, its last run interrupted) is continued by any resume, as in LangGraph."""
    found = ctx.row("resume_check", {"thread_id": thread_id})
    if found is None or found["busy"]:
        return
    pending = list(found["pending"] or [])
    if not pending and found["last_status"] != "interrupted":
        raise ApiError(
            400,
            f"Cannot resume thread {thread_id}: it has no pending interrupt. Nothing was "
            "changed; read its state (GET /threads/{id}/state).",
        )
    if pending and isinstance(resume, dict) and resume and all(k in pending for k in resume):
        return  # a resume map of pending waits
    if pending and isinstance(resume, dict) and any(_looks_like_id(k) for k in resume):
        unknown = sorted(k for k in resume if k not in pending)
        raise ApiError(
            400,
            f"The resume map names interrupts thread {thread_id} does not wait on: "
            f"{', '.join(unknown)}; pending: {', '.join(pending)}. Nothing was changed.",
        )


def _looks_like_id(key: str) -> bool:
    return len(key) == 32 and all(c in "0123456789abcdef" for c in key)


def finish_temporary(ctx: ApiContext, row: dict[str, Any]) -> None:
    """A stateless run's thread goes once the run ended (on_completion 'delete')."""
    if row.get("temporary"):
        thread_id = row["thread_id"]
        ctx.row("delete_thread", {"thread_id": thread_id})
        runs.delete_checkpoints(ctx, thread_id)


def result_json(run: Run) -> Any:
    """What /wait and /join answer: the run's last values (with its interrupts), or its
    error as ``{"__error__": {"error", "message"}}``."""
    if run.status == "error" or run.status == "cancelled":
        info = run.error or {}
        return {
            "__error__": {"error": info.get("type", "Error"), "message": info.get("message", "")}
        }
    return jsonable(run.result)


def _error(info: dict[str, Any]) -> dict[str, Any]:
    return {"error": info.get("type", "Error"), "message": info.get("message", "")}


# --- handlers ---------------------------------------------------------------------------


def create(call: Call) -> Any:
    body = parse(RunCreate, call.body)
    return run_json(create_run(call.ctx, call.path.get("thread_id"), body, call.actor))


def wait(call: Call) -> Any:
    body = parse(RunCreate, call.body)
    ctx = call.ctx
    row = create_run(ctx, call.path.get("thread_id"), body, call.actor)
    run = runs.wait_done(ctx, str(row["run_id"]), WAIT_TIMEOUT)
    finish_temporary(ctx, row)
    return JSONResponse(
        result_json(run),
        headers={"content-location": f"/threads/{row['thread_id']}/runs/{row['run_id']}"},
    )


def batch(call: Call) -> Any:
    if not isinstance(call.body, list):
        raise ApiError(422, "body: a list of runs")
    bodies = [parse(RunCreate, item) for item in call.body]
    return [run_json(create_run(call.ctx, None, body, call.actor)) for body in bodies]


def get(call: Call) -> Any:
    return run_json(load_run(call.ctx, call.path["thread_id"], call.path["run_id"]))


def list_runs(call: Call) -> Any:
    ctx, thread_id = call.ctx, call.path["thread_id"]
    if not threads_json(ctx, [thread_id]):
        raise not_found(f"Thread {thread_id}")
    status = call.query.get("status")
    wanted = None
    if status is not None:
        wanted = [s for s, api in runs.RUN_STATUS.items() if api == status]
        if not wanted:
            raise ApiError(
                422, f"status must be one of {', '.join(sorted(set(runs.RUN_STATUS.values())))}"
            )
    rows = ctx.rows(
        "list_runs",
        {
            "thread_id": thread_id,
            "status": wanted,
            "limit": query_int(call.query, "limit", 10, 1, 1000),
            "offset": query_int(call.query, "offset", 0, 0, 1_000_000),
        },
    )
    return [run_json(r) for r in rows]


def join(call: Call) -> Any:
    ctx = call.ctx
    row = load_run(ctx, call.path["thread_id"], call.path["run_id"])
    run = runs.wait_done(ctx, str(row["run_id"]), WAIT_TIMEOUT)
    return result_json(run)


def cancel(call: Call) -> Any:
    ctx = call.ctx
    row = load_run(ctx, call.path["thread_id"], call.path["run_id"])
    action = call.query.get("action", "interrupt")
    if action not in ("interrupt", "rollback"):
        raise ApiError(422, "action must be interrupt or rollback")
    run = runs.get_run(ctx, str(row["run_id"]))
    if run.done:
        raise ApiError(409, f"Run {run.run_id} has already ended ({run.status})")
    wait = query_bool(call.query, "wait")
    cancelled = runs.cancel_thread(
        ctx, run.graph, run.thread_id, call.actor, timeout=WAIT_TIMEOUT if wait else 1.0
    )
    if action == "rollback":
        for run_id in cancelled or []:
            ctx.row("delete_run", {"run_id": run_id})
    if wait:
        runs.wait_done(ctx, run.run_id, WAIT_TIMEOUT)
        return Response(status_code=204)
    return Response(status_code=202)  # applied, or queued behind the step under way


def delete(call: Call) -> Any:
    ctx = call.ctx
    row = load_run(ctx, call.path["thread_id"], call.path["run_id"])
    if row["status"] in ("queued", "running"):
        raise ApiError(409, f"Run {row['run_id']} is {row['status']}: cancel it first")
    ctx.row("delete_run", {"run_id": str(row["run_id"])})
    return Response(status_code=204)


# --- streaming --------------------------------------------------------------------------


DERIVED = frozenset({"events"})
"""API stream modes made by the server from what the workers stored."""


def _chain_event(task: dict[str, Any], ns: tuple[str, ...]) -> dict[str, Any]:
    """A node's start or end as an ``astream_events`` v2 chain event."""
    start = "input" in task
    metadata = {
        "langgraph_node": task.get("name"),
        "langgraph_triggers": list(task.get("triggers") or []),
        "langgraph_checkpoint_ns": "|".join(ns),
    }
    data: dict[str, Any] = {"input": task.get("input")} if start else {"output": task.get("result")}
    if not start and task.get("error"):
        data["error"] = task["error"]
    return {
        "event": "on_chain_start" if start else "on_chain_end",
        "name": task.get("name"),
        "run_id": task.get("id"),
        "tags": [],
        "metadata": metadata,
        "data": data,
        "parent_ids": [],
    }


def sse_parts(event: Event, modes: set[str], subgraphs: bool) -> list[tuple[str, Any]]:
    """The SSE events of one stored event: itself if its mode was asked for (a
    ``messages-tuple`` part is ``[message, metadata]``: a chat model's token as it came,
    or a message a node returned), and the ``events`` LangChain would show for it."""
    if event.ns and not subgraphs:
        return []
    suffix = f"|{'|'.join(event.ns)}" if event.ns else ""
    parts: list[tuple[str, Any]] = []
    if event.mode in {runs.API_MODES[m] for m in modes if m not in DERIVED}:
        parts.append((event.mode + suffix, event.payload))
    if "events" in modes and event.mode == "tasks" and isinstance(event.payload, dict):
        parts.append(("events" + suffix, _chain_event(event.payload, event.ns)))
    return parts


def parse_event_id(raw: str | None) -> tuple[int, int]:
    """An SSE id this server sent (``seq`` or ``seq.k``: the k-th part of a stored
    event) as (seq, k); (0, -1) before the first."""
    if raw is None or raw.strip() in ("", "-1"):
        return 0, -1
    seq, _, part = raw.strip().partition(".")
    try:
        return max(0, int(seq)), int(part) if part else 1_000_000
    except ValueError:
        raise ApiError(
            422, f"Last-Event-ID must be an event id this server sent, not {raw!r}"
        ) from None


async def sse_events(
    ctx: ApiContext,
    row: dict[str, Any],
    *,
    after: tuple[int, int],
    metadata: bool,
    cancel_on_disconnect: bool,
    temporary: bool,
    actor: str | None,
) -> AsyncIterator[dict[str, Any]]:
    """The run's events as SSE: ``metadata`` first, then its stream parts (ids
    ``seq.k``: the stored event's sequence number and the part's index, increasing), then
    an ``error`` event if it failed."""
    run_id = str(row["run_id"])
    kwargs = row.get("kwargs") or {}
    modes = set(kwargs.get("stream_mode") or ["values"])
    runs.worker_modes(sorted(modes))
    subgraphs = bool(kwargs.get("stream_subgraphs"))
    seq, skip = after
    # the stored event a part was cut from is read again: its parts up to `skip` are skipped
    cursor = max(0, seq - 1) if skip < 1_000_000 and seq else seq
    finished = False
    try:
        if metadata:
            yield {"event": "metadata", "data": dumps({"run_id": run_id, "attempt": 1})}
        while True:
            events, run = await run_in_threadpool(runs.next_events, ctx, run_id, cursor, 1.0)
            for event in events:
                cursor = event.seq
                for index, (name, data) in enumerate(sse_parts(event, modes, subgraphs)):
                    if event.seq == seq and index <= skip:
                        continue
                    yield {"event": name, "data": dumps(data), "id": f"{event.seq}.{index}"}
            if run.done and not events:
                finished = True
                if run.status in ("error", "cancelled"):
                    yield {"event": "error", "data": dumps(_error(run.error or {}))}
                return
    finally:
        if finished and temporary:
            await run_in_threadpool(finish_temporary, ctx, row)
        elif not finished and cancel_on_disconnect:
            with anyio.CancelScope(shield=True):
                await run_in_threadpool(_cancel_quietly, ctx, run_id, actor)


def _cancel_quietly(ctx: ApiContext, run_id: str, actor: str | None) -> None:
    run = runs.get_run(ctx, run_id)
    if not run.done:
        runs.cancel_thread(ctx, run.graph, run.thread_id, actor)  # applied or queued


def _stream_response(
    request: Request, generator: AsyncIterator[dict[str, Any]], row: dict[str, Any]
) -> Response:
    location = f"/threads/{row['thread_id']}/runs/{row['run_id']}"
    return EventSourceResponse(
        generator,
        headers={"content-location": location, "location": f"{location}/stream"},
        ping=15,
    )


async def stream(request: Request) -> Response:
    ctx: ApiContext = request.app.state.ctx
    actor = request.scope.get("state", {}).get("actor")
    try:
        body = parse(RunCreate, await read_json(request))
        thread_id = request.path_params.get("thread_id")
        row = await run_in_threadpool(create_run, ctx, thread_id, body, actor)
    except Exception as exc:  # noqa: BLE001 - answered as LangGraph does, nothing streamed
        return error_response(exc)
    generator = sse_events(
        ctx,
        row,
        after=(0, -1),
        metadata=True,
        cancel_on_disconnect=body.on_disconnect == "cancel",
        temporary=bool(row.get("temporary")),
        actor=actor,
    )
    return _stream_response(request, generator, row)


async def join_stream(request: Request) -> Response:
    ctx: ApiContext = request.app.state.ctx
    try:
        row = await run_in_threadpool(
            load_run, ctx, request.path_params["thread_id"], request.path_params["run_id"]
        )
        given = request.headers.get("last-event-id")
        after = parse_event_id(given)
        if given is None and not (row.get("kwargs") or {}).get("stream_resumable"):
            # a stream that is not resumable is joined live, from now on, as LangGraph's
            last = await run_in_threadpool(runs.last_event, ctx, str(row["run_id"]))
            after = (last, 1_000_000)
        cancel_on_disconnect = query_bool(request.query_params, "cancel_on_disconnect")
        modes = [m for m in request.query_params.getlist("stream_mode") if m]
        if modes:
            runs.worker_modes(modes)
            row = {**row, "kwargs": {**(row.get("kwargs") or {}), "stream_mode": modes}}
    except Exception as exc:  # noqa: BLE001
        return error_response(exc)
    generator = sse_events(
        ctx,
        row,
        after=after,
        # a join names its run first, unless it continues a stream or the run has ended
        metadata=given is None and row["status"] in ("queued", "running"),
        cancel_on_disconnect=cancel_on_disconnect,
        temporary=False,
        actor=request.scope.get("state", {}).get("actor"),
    )
    return _stream_response(request, generator, row)


ROUTES = [
    Route("/threads/{thread_id}/runs", endpoint(create), methods=["POST"]),
    Route("/threads/{thread_id}/runs", endpoint(list_runs), methods=["GET"]),
    Route("/threads/{thread_id}/runs/stream", stream, methods=["POST"]),
    Route("/threads/{thread_id}/runs/wait", endpoint(wait), methods=["POST"]),
    Route("/threads/{thread_id}/runs/{run_id}", endpoint(get), methods=["GET"]),
    Route("/threads/{thread_id}/runs/{run_id}", endpoint(delete), methods=["DELETE"]),
    Route("/threads/{thread_id}/runs/{run_id}/join", endpoint(join), methods=["GET"]),
    Route("/threads/{thread_id}/runs/{run_id}/stream", join_stream, methods=["GET"]),
    Route("/threads/{thread_id}/runs/{run_id}/cancel", endpoint(cancel), methods=["POST"]),
    Route("/runs", endpoint(create), methods=["POST"]),
    Route("/runs/stream", stream, methods=["POST"]),
    Route("/runs/wait", endpoint(wait), methods=["POST"]),
    Route("/runs/batch", endpoint(batch), methods=["POST"]),
]
