"""Resume commands checked against a step's pending interrupts, before anything is written."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from graphruntime._internal._constants import ERROR, INTERRUPT, NULL_TASK_ID
from graphruntime.checkpoint.base import PendingWrite
from graphruntime.errors import AmbiguousResumeError, InvalidResumeError, UnknownInterruptError
from graphruntime.pregel._algo import task_finished
from graphruntime.types import Interrupt

_HEX = frozenset("0123456789abcdef")


def is_resume_map(value: Any) -> bool:
    """``Command(resume={interrupt_id: value, ...})``: every key an interrupt id."""
    return isinstance(value, dict) and all(
        isinstance(k, str) and len(k) == 32 and set(k) <= _HEX for k in value
    )


def writes_by_task(
    pending_writes: Iterable[PendingWrite],
    task_ids: Mapping[str, Any] | None = None,
    *,
    null: bool = False,
) -> dict[str, list[tuple[str, Any]]]:
    """Pending writes grouped by task (insertion order kept), null task excluded unless ``null``."""
    by_task: dict[str, list[tuple[str, Any]]] = {}
    for tid, channel, value in pending_writes:
        if (tid == NULL_TASK_ID and not null) or (task_ids is not None and tid not in task_ids):
            continue
        by_task.setdefault(tid, []).append((channel, value))
    return by_task


def pending_interrupts(pending_writes: Iterable[PendingWrite]) -> dict[str, Interrupt]:
    """Interrupts of the step's unfinished tasks, by id, in the order they were saved."""
    out: dict[str, Interrupt] = {}
    for writes in writes_by_task(pending_writes).values():
        if task_finished(writes):
            continue
        for channel, value in writes:
            if channel == INTERRUPT:
                for intr in value:
                    out[intr.id] = intr
    return out


def task_interrupts(writes: Iterable[tuple[str, Any]]) -> list[Interrupt]:
    """The interrupts one task recorded, if it paused (not finished, not failed)."""
    writes = list(writes)
    if task_finished(writes) or any(c == ERROR for c, _ in writes):
        return []
    return [i for c, v in writes if c == INTERRUPT for i in v]


def validate_resume(
    resume: Any,
    *,
    thread: Any,
    has_state: bool,
    pending: Mapping[str, Interrupt],
    edited_while_paused: bool,
    has_next: bool = False,
) -> None:
    """Raise :class:`InvalidResumeError` unless ``resume`` answers the pending interrupts.

    ``edited_while_paused``: ``update_state()`` re-scheduled the interrupted node under a
    new task id; a plain value then reaches its ``interrupt()`` when it runs again.
    ``has_next``: the thread stopped with tasks still to run (a static breakpoint); a
    plain value then continues it, as LangGraph's ``Command(resume=...)`` does there.
    """
    resume_map = is_resume_map(resume)
    if not has_state:
        raise InvalidResumeError(
            f"Cannot resume thread {thread!r}: it has no checkpoints. Check the thread_id, "
            "or start the thread with an input first."
        )
    if not pending and edited_while_paused:
        if resume_map:
            raise InvalidResumeError(
                f"Thread {thread!r} was edited with update_state() while paused, so its "
                "old interrupt ids no longer apply; resume with Command(resume=value)."
            )
        return
    if not pending and has_next and not resume_map:
        return
    if not pending:
        raise InvalidResumeError(
            f"Cannot resume thread {thread!r}: it has no pending interrupt. Nothing was "
            "changed; use get_state() to see the thread's state."
        )
    if resume_map:
        if not resume:
            raise UnknownInterruptError(
                "The resume map names no interrupt; pending interrupt ids: "
                f"{sorted(pending)}. Nothing was changed.",
                reason="empty_map",
                pending_ids=sorted(pending),
            )
        unknown = sorted(set(resume) - set(pending))
        if unknown:
            raise UnknownInterruptError(
                f"Resume map key {unknown[0]} matches no pending interrupt of thread "
                f"{thread!r} (Unknown or already-consumed interrupt: {', '.join(unknown)}); "
                f"pending interrupt ids: {sorted(pending)}. Nothing was changed.",
                reason="not_pending",
                interrupt_ids=unknown,
                pending_ids=sorted(pending),
            )
    elif len(pending) > 1:
        raise AmbiguousResumeError(
            "When there are multiple pending interrupts, you must specify the interrupt "
            "id when resuming. Docs: https://docs.langchain.com/oss/python/langgraph/"
            "interrupts#handling-multiple-interrupts.",
            pending_ids=sorted(pending),
        )
