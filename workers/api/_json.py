"""Values as the LangGraph Server API writes them in JSON: interrupts, messages, sends,
commands, snapshots, pydantic models, dataclasses, datetimes."""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import uuid
from collections.abc import Mapping
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from enum import Enum
from typing import Any

from graphruntime.types import Command, Interrupt, PregelTask, Send, StateSnapshot


def jsonable(value: Any) -> Any:
    """A JSON-ready copy of ``value`` (LangGraph's shapes for its own types)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, Interrupt):
        return {
            "value": jsonable(value.value),
            "id": value.id,
            "response_schema": jsonable(getattr(value, "response_schema", None)),
        }
    if isinstance(value, Send):
        return {"node": value.node, "arg": jsonable(value.arg)}
    if isinstance(value, Command):
        return {
            k: jsonable(v)
            for k, v in (
                ("graph", value.graph),
                ("update", value.update),
                ("resume", value.resume),
                ("goto", value.goto),
            )
            if v is not None and v != ()
        }
    if isinstance(value, StateSnapshot):
        return snapshot_json(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID | Decimal):
        return str(value)
    if isinstance(value, Enum):
        return jsonable(value.value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    dump = getattr(value, "model_dump", None)  # pydantic models, LangChain messages
    if callable(dump):
        return jsonable(dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    as_tuple = getattr(value, "_asdict", None)
    if callable(as_tuple):
        return jsonable(as_tuple())
    return str(value)


def dumps(value: Any) -> str:
    return json.dumps(jsonable(value), ensure_ascii=False, separators=(",", ":"))


def _checkpoint_ref(config: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not config:
        return None
    conf = config.get("configurable") or {}
    if not conf.get("checkpoint_id"):
        return None
    return {
        "checkpoint_id": conf.get("checkpoint_id"),
        "thread_id": conf.get("thread_id"),
        "checkpoint_ns": conf.get("checkpoint_ns", ""),
    }


def _interrupt_ref(intr: Interrupt) -> dict[str, Any]:
    return {"id": intr.id, "value": jsonable(intr.value)}


def task_json(task: PregelTask) -> dict[str, Any]:
    state = task.state
    return {
        "id": task.id,
        "name": task.name,
        "path": jsonable(task.path),
        "error": None if task.error is None else _error_text(task.error),
        "interrupts": [_interrupt_ref(i) for i in task.interrupts],
        "checkpoint": _checkpoint_ref(state) if isinstance(state, Mapping) else None,
        "state": snapshot_json(state) if isinstance(state, StateSnapshot) else None,
        "result": jsonable(task.result),
    }


def _error_text(error: Any) -> str:
    if isinstance(error, BaseException):
        return f"{type(error).__name__}({str(error)!r})"
    return str(error)


def snapshot_json(snapshot: StateSnapshot) -> dict[str, Any]:
    """A thread state (``GET /threads/{id}/state``, history entries)."""
    checkpoint = _checkpoint_ref(snapshot.config)
    parent = _checkpoint_ref(snapshot.parent_config)
    return {
        "values": jsonable(snapshot.values),
        "next": list(snapshot.next),
        "tasks": [task_json(t) for t in snapshot.tasks],
        "metadata": jsonable(snapshot.metadata or {}),
        "created_at": jsonable(snapshot.created_at),
        "checkpoint": checkpoint,
        "parent_checkpoint": parent,
        "interrupts": [_interrupt_ref(i) for i in snapshot.interrupts],
        "checkpoint_id": checkpoint["checkpoint_id"] if checkpoint else None,
        "parent_checkpoint_id": parent["checkpoint_id"] if parent else None,
    }
