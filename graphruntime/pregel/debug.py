"""Payloads of the ``tasks``, ``checkpoints`` and ``debug`` stream modes.

As ``langgraph.pregel.debug``: the loop calls these helpers when a run streams one of
those modes; they only shape data (no I/O).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol
from uuid import UUID

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_CHECKPOINT_ID,
    CONFIG_KEY_CHECKPOINT_MAP,
    CONFIG_KEY_CHECKPOINT_NS,
    ERROR,
    INTERRUPT,
    NS_END,
    NS_SEP,
    RETURN,
)
from graphruntime._internal._interrupt import interrupt_dict
from graphruntime.channels import BaseChannel
from graphruntime.checkpoint.base import PendingWrite
from graphruntime.constants import TAG_HIDDEN
from graphruntime.pregel._algo import read_channels, task_finished
from graphruntime.pregel._resume import writes_by_task
from graphruntime.types import (
    CheckpointPayload,
    PregelTask,
    StateSnapshot,
    TaskPayload,
    TaskResultPayload,
)

__all__ = (
    "COLOR_MAPPING",
    "EXCLUDED_METADATA_KEYS",
    "TASK_NAMESPACE",
    "get_bolded_text",
    "get_colored_text",
    "is_multiple_channel_write",
    "map_debug_checkpoint",
    "map_debug_task_results",
    "map_debug_tasks",
    "map_task_result_writes",
    "rm_pregel_keys",
    "tasks_w_writes",
)

TASK_NAMESPACE = UUID("6ba7b831-9dad-11d1-80b4-00c04fd430c8")

EXCLUDED_METADATA_KEYS = frozenset(
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
"""Framework keys of a task's metadata: redundant with the task's own fields."""


class DebugTask(Protocol):
    """What a ``task`` event reads from a task."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def input(self) -> Any: ...
    @property
    def triggers(self) -> Sequence[str]: ...
    @property
    def config(self) -> RunnableConfig | None: ...


class _Named(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def path(self) -> tuple[Any, ...]: ...


def _user_tags(tags: Sequence[str] | None) -> list[str] | None:
    # ``seq:step:N`` tags are langchain's bookkeeping, not the user's
    kept = [t for t in tags or () if not t.startswith("seq:step")]
    return kept or None


def map_debug_tasks(tasks: Iterable[DebugTask]) -> Iterator[TaskPayload]:
    """The ``task`` events (a task starts) of a step; hidden tasks are left out."""
    for task in tasks:
        config = task.config
        if config is not None and TAG_HIDDEN in config.get("tags", ()):
            continue
        payload: TaskPayload = {
            "id": task.id,
            "name": task.name,
            "input": task.input,
            "triggers": task.triggers,  # type: ignore[typeddict-item]
        }
        if config is not None:
            metadata = {
                k: v
                for k, v in (config.get("metadata") or {}).items()
                if k not in EXCLUDED_METADATA_KEYS
            }
            tags = _user_tags(config.get("tags"))
            if tags is not None:
                metadata["tags"] = tags
            if metadata:
                payload["metadata"] = metadata
        yield payload


def is_multiple_channel_write(value: Any) -> bool:
    """True if ``value`` already wraps several writes to one channel."""
    return isinstance(value, dict) and isinstance(value.get("$writes"), list)


def map_task_result_writes(writes: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """``{channel: value}``; several writes to one channel: ``{channel: {"$writes": [...]}}``."""
    result: dict[str, Any] = {}
    for channel, value in writes:
        existing = result.get(channel)
        if existing is None:
            result[channel] = value
            continue
        values = existing["$writes"] if is_multiple_channel_write(existing) else [existing]
        values.append(value)
        result[channel] = {"$writes": values}
    return result


def _interrupt_dicts(writes: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
    return [
        interrupt_dict(v)
        for c, w in writes
        if c == INTERRUPT
        for v in (w if isinstance(w, Sequence) else [w])
    ]


def map_debug_task_results(
    task_tup: tuple[_Named, Sequence[tuple[str, Any]]],
    stream_keys: str | Sequence[str],
) -> Iterator[TaskResultPayload]:
    """The ``task_result`` event of a task that finished, failed or paused."""
    keys = [stream_keys] if isinstance(stream_keys, str) else stream_keys
    task, writes = task_tup
    yield {
        "id": task.id,
        "name": task.name,
        "error": next((v for c, v in writes if c == ERROR), None),
        "result": map_task_result_writes([w for w in writes if w[0] in keys or w[0] == RETURN]),
        "interrupts": _interrupt_dicts(writes),
    }


def rm_pregel_keys(config: RunnableConfig | None) -> RunnableConfig | None:
    """The config without the runtime's ``__pregel_*`` keys (only ``configurable`` kept)."""
    if config is None:
        return None
    return {CONF: {k: v for k, v in config.get(CONF, {}).items() if not k.startswith("__pregel_")}}


def with_checkpoint_map(
    config: RunnableConfig | None, metadata: Mapping[str, Any] | None
) -> RunnableConfig | None:
    parents = metadata.get("parents") if metadata else None
    if config is None or not parents:
        return config
    conf = config[CONF]
    return {
        **config,
        CONF: {
            **conf,
            CONFIG_KEY_CHECKPOINT_MAP: {
                **parents,
                conf[CONFIG_KEY_CHECKPOINT_NS]: conf[CONFIG_KEY_CHECKPOINT_ID],
            },
        },
    }


def map_debug_checkpoint(
    config: RunnableConfig,
    channels: Mapping[str, BaseChannel],
    stream_channels: str | Sequence[str],
    metadata: Mapping[str, Any],
    tasks: Iterable[Any],
    pending_writes: list[PendingWrite],
    parent_config: RunnableConfig | None,
    output_keys: str | Sequence[str],
) -> Iterator[CheckpointPayload[Any]]:
    """The ``checkpoint`` event: a saved checkpoint as ``get_state`` would show it.

    ``tasks`` are the next step's tasks; a task that runs a subgraph carries the
    config that addresses the subgraph's checkpoints as its ``state``.
    """
    tasks = list(tasks)
    parent_ns = config[CONF].get(CONFIG_KEY_CHECKPOINT_NS, "")
    states: dict[str, RunnableConfig | StateSnapshot] = {}
    for task in tasks:
        node = getattr(task, "node", None)  # a step's PreparedTask: its node's subgraphs
        if not getattr(task, "subgraphs", None) and not getattr(node, "subgraphs", None):
            continue
        task_ns = f"{task.name}{NS_END}{task.id}"
        states[task.id] = {
            CONF: {
                "thread_id": config[CONF]["thread_id"],
                CONFIG_KEY_CHECKPOINT_NS: f"{parent_ns}{NS_SEP}{task_ns}" if parent_ns else task_ns,
            }
        }
    shown: list[dict[str, Any]] = []
    for t in tasks_w_writes(tasks, pending_writes, states, output_keys):
        if t.error:
            shown.append({"id": t.id, "name": t.name, "error": t.error, "state": t.state})
            continue
        entry: dict[str, Any] = {"id": t.id, "name": t.name}
        if t.result:
            entry["result"] = t.result
        entry["interrupts"] = tuple(interrupt_dict(i) for i in t.interrupts)
        entry["state"] = t.state
        shown.append(entry)
    yield {
        "config": rm_pregel_keys(with_checkpoint_map(config, metadata)),
        "parent_config": rm_pregel_keys(with_checkpoint_map(parent_config, metadata)),
        # a single stream channel (an entrypoint's) shows its value, None when empty
        "values": read_channels(channels, stream_channels),
        "metadata": metadata,  # type: ignore[typeddict-item] # a checkpoint's metadata
        "next": [t.name for t in tasks],
        "tasks": shown,  # type: ignore[typeddict-item]
    }


def tasks_w_writes(
    tasks: Iterable[_Named],
    pending_writes: list[PendingWrite] | None,
    states: Mapping[str, RunnableConfig | StateSnapshot] | None,
    output_keys: str | Sequence[str],
    *,
    live: bool = False,
) -> tuple[PregelTask, ...]:
    """Tasks as a StateSnapshot lists them: with their saved error, interrupts and result.

    ``live``: only interrupts still waiting for an answer; otherwise every interrupt
    the task raised in the step (a record of the step).
    """
    by_task = writes_by_task(pending_writes or [])
    out: list[PregelTask] = []
    for task in tasks:
        writes = by_task.get(task.id, [])
        finished = task_finished(writes)
        error = next((v for c, v in writes if c == ERROR), None)
        interrupts = tuple(i for c, v in writes if c == INTERRUPT for i in v)
        if live and finished:
            interrupts = ()
        output = [
            (c, v) for c, v in writes if c not in (ERROR, INTERRUPT) and not c.startswith("__")
        ]
        returned = [v for c, v in writes if c == RETURN]
        result: Any
        if returned:
            result = returned[0]
        elif isinstance(output_keys, str):
            mapped = map_task_result_writes([w for w in output if w[0] == output_keys])
            result = mapped.get(output_keys) if mapped else None
        else:
            chosen = [w for w in output if w[0] in output_keys]
            result = map_task_result_writes(chosen) if chosen else {}
        out.append(
            PregelTask(
                task.id,
                task.name,
                task.path,
                error,
                interrupts,
                states.get(task.id) if states else None,
                result if finished else None,
            )
        )
    return tuple(out)


COLOR_MAPPING = {
    "black": "0;30",
    "red": "0;31",
    "green": "0;32",
    "yellow": "0;33",
    "blue": "0;34",
    "magenta": "0;35",
    "cyan": "0;36",
    "white": "0;37",
    "gray": "1;30",
}


def get_colored_text(text: str, color: str) -> str:
    """``text`` in an ANSI colour."""
    return f"\033[1;3{COLOR_MAPPING[color]}m{text}\033[0m"


def get_bolded_text(text: str) -> str:
    """``text`` in ANSI bold."""
    return f"\033[1m{text}\033[0m"
