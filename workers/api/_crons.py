"""/runs/crons: schedules that start runs (fired by the servers' background sweep)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, LiteralString

from starlette.responses import Response
from starlette.routing import Route

from workers.api._background import check_schedule, next_fire
from workers.api._context import ApiError, not_found
from workers.api._http import Call, endpoint, parse
from workers.api._models import CronCount, CronCreate, CronPatch, CronSearch, RunCreate
from workers.api._threads import threads_json

_SORTS: dict[str, LiteralString] = {
    "cron_id": "cron_id",
    "assistant_id": "assistant_id",
    "thread_id": "thread_id",
    "next_run_date": "next_run_at",
    "created_at": "created_at",
    "updated_at": "updated_at",
}
_RUN_FIELDS = (
    "input",
    "config",
    "context",
    "interrupt_before",
    "interrupt_after",
    "webhook",
    "multitask_strategy",
    "durability",
)


def cron_json(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "cron_id": str(row["cron_id"]),
        "assistant_id": str(row["assistant_id"]),
        "thread_id": row["thread_id"],
        "end_time": row["end_time"],
        "schedule": row["schedule"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "payload": {
            "schedule": row["schedule"],
            "assistant_id": str(row["assistant_id"]),
            **{k: v for k, v in (row["payload"] or {}).items() if k != "on_run_completed"},
        },
        "user_id": row["user_id"] or "",
        "timezone": None,
        "next_run_date": row["next_run_at"],
        "metadata": row["metadata"],
        "on_run_completed": (row["payload"] or {}).get("on_run_completed"),
        "enabled": True,
    }


def _when(text: str | None, name: str) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ApiError(422, f"{name} must be an ISO 8601 time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def create(call: Call) -> Any:
    body = parse(CronCreate, call.body)
    ctx = call.ctx
    thread_id = call.path.get("thread_id")
    if thread_id is not None and not threads_json(ctx, [thread_id]):
        raise not_found(f"Thread {thread_id}")
    if body.enabled is False:
        raise ApiError(422, "disabled crons are not available in graphrun serve")
    ctx.graph_of_assistant(body.assistant_id)
    try:
        check_schedule(body.schedule)
    except ValueError as exc:
        raise ApiError(422, str(exc)) from None
    payload = body.model_dump(mode="json", exclude_none=True, include=set(_RUN_FIELDS))
    if body.stream_mode is not None:
        payload["stream_mode"] = body.stream_mode
    if body.on_run_completed is not None:
        payload["on_run_completed"] = body.on_run_completed
    # the run a firing will start, checked now: a bad one is refused here, not at 3 am
    parse(
        RunCreate,
        {
            **{k: v for k, v in payload.items() if k != "on_run_completed"},
            "assistant_id": body.assistant_id,
        },
    )
    row = ctx.row(
        "create_cron",
        {
            "cron_id": str(uuid.uuid4()),
            "assistant_id": str(ctx.graph_of_assistant(body.assistant_id)[1]["assistant_id"]),
            "thread_id": thread_id,
            "schedule": body.schedule,
            "payload": payload,
            "metadata": body.metadata or {},
            "end_time": _when(body.end_time, "end_time"),
            "next_run_at": next_fire(body.schedule, datetime.now(UTC)),
            "user_id": None,
        },
    )
    assert row is not None
    return cron_json(row)


def search(call: Call) -> Any:
    body = parse(CronSearch, call.body)
    order = _SORTS[body.sort_by or "created_at"]
    direction: LiteralString = "ASC" if body.sort_order == "asc" else "DESC"
    rows = call.ctx.rows(
        "search_crons",
        {
            "assistant_id": _assistant(call, body.assistant_id),
            "thread_id": body.thread_id,
            "limit": body.limit,
            "offset": body.offset,
        },
        order=f"{order} {direction}, cron_id {direction}",
    )
    found = [cron_json(r) for r in rows]
    if body.select:
        found = [{k: c[k] for k in body.select if k in c} for c in found]
    return found


def _assistant(call: Call, assistant_id: str | None) -> str | None:
    if assistant_id is None:
        return None
    return str(call.ctx.graph_of_assistant(assistant_id)[1]["assistant_id"])


def count(call: Call) -> Any:
    body = parse(CronCount, call.body)
    row = call.ctx.row(
        "count_crons",
        {"assistant_id": _assistant(call, body.assistant_id), "thread_id": body.thread_id},
    )
    return int(row["n"]) if row else 0


def patch(call: Call) -> Any:
    body = parse(CronPatch, call.body)
    if body.enabled is False:
        raise ApiError(422, "disabled crons are not available in graphrun serve")
    next_at = None
    if body.schedule is not None:
        try:
            check_schedule(body.schedule)
        except ValueError as exc:
            raise ApiError(422, str(exc)) from None
        next_at = next_fire(body.schedule, datetime.now(UTC))
    payload = body.model_dump(
        mode="json", exclude_none=True, include={*_RUN_FIELDS, "on_run_completed"}
    )
    row = call.ctx.row(
        "update_cron",
        {
            "cron_id": call.path["cron_id"],
            "schedule": body.schedule,
            "next_run_at": next_at,
            "end_time": _when(body.end_time, "end_time"),
            "payload": payload or None,
            "metadata": body.metadata,
        },
    )
    if row is None:
        raise not_found(f"Cron {call.path['cron_id']}")
    return cron_json(row)


def delete(call: Call) -> Any:
    try:
        uuid.UUID(call.path["cron_id"])
    except ValueError:
        raise ApiError(422, "cron_id must be a UUID") from None
    if call.ctx.row("delete_cron", {"cron_id": call.path["cron_id"]}) is None:
        raise not_found(f"Cron {call.path['cron_id']}")
    return Response(status_code=204)


ROUTES = [
    Route("/threads/{thread_id}/runs/crons", endpoint(create), methods=["POST"]),
    Route("/runs/crons", endpoint(create), methods=["POST"]),
    Route("/runs/crons/search", endpoint(search), methods=["POST"]),
    Route("/runs/crons/count", endpoint(count), methods=["POST"]),
    Route("/runs/crons/{cron_id}", endpoint(patch), methods=["PATCH"]),
    Route("/runs/crons/{cron_id}", endpoint(delete), methods=["DELETE"]),
]
