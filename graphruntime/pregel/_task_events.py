"""``stream_mode="tasks"``: a task's start and its result, as LangGraph shows them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graphruntime._internal._constants import ERROR, INTERRUPT, RETURN
from graphruntime._internal._interrupt import interrupt_dict
from graphruntime.constants import TAG_HIDDEN
from graphruntime.pregel._algo import PreparedTask
from graphruntime.types import TaskPayload, TaskResultPayload

# what the task's own fields and namespace already say
_FRAMEWORK_METADATA = frozenset(
    {
        "thread_id",
        "checkpoint_id",
        "checkpoint_ns",
        "checkpoint_map",
        "langgraph_step",
        "langgraph_node",
        "langgraph_triggers",
        "langgraph_path",
        "langgraph_checkpoint_ns",
    }
)


def shown(task: PreparedTask) -> bool:
    """Whether a task appears in the tasks stream (``__start__`` and hidden nodes do not)."""
    return TAG_HIDDEN not in task.node.tags


def task_payload(
    task: PreparedTask, metadata: Mapping[str, Any], tags: Sequence[str]
) -> TaskPayload:
    """A task about to run; ``metadata``/``tags``: its run's, without framework keys."""
    payload: TaskPayload = {
        "id": task.id,
        "name": task.name,
        "input": task.input,
        "triggers": task.triggers,  # type: ignore[typeddict-item] # a tuple, as LangGraph's
    }
    extra = {
        k: v for k, v in {**metadata, **task.node.metadata}.items() if k not in _FRAMEWORK_METADATA
    }
    user_tags = [t for t in (*tags, *task.node.tags) if not t.startswith("seq:step")]
    if user_tags:
        extra["tags"] = user_tags
    if extra:
        payload["metadata"] = extra
    return payload


def _fold(writes: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """Writes by channel; several writes to one channel become ``{"$writes": [...]}``."""
    result: dict[str, Any] = {}
    for channel, value in writes:
        if channel not in result:
            result[channel] = value
            continue
        existing = result[channel]
        many = isinstance(existing, dict) and isinstance(existing.get("$writes"), list)
        result[channel] = {"$writes": [*(existing["$writes"] if many else [existing]), value]}
    return result


def task_result_payload(
    task: PreparedTask, writes: Sequence[tuple[str, Any]], stream_keys: str | Sequence[str]
) -> TaskResultPayload:
    """A task that ended with ``writes`` (its output, error or interrupt writes)."""
    keys = {stream_keys} if isinstance(stream_keys, str) else set(stream_keys)
    return {
        "id": task.id,
        "name": task.name,
        "error": next((v for c, v in writes if c == ERROR), None),
        "result": _fold([(c, v) for c, v in writes if c in keys or c == RETURN]),
        "interrupts": [
            interrupt_dict(i)
            for c, v in writes
            if c == INTERRUPT
            for i in (v if isinstance(v, Sequence) else [v])
        ],
    }
