"""Whether the store queues a run, and why it refused one, as the error the caller gets.

Both read the facts of the ``explain_refused_run`` query; ``create_run`` decides in SQL
on Postgres, and with :func:`accepts` in memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graphruntime.errors import InvalidResumeError, UnknownInterruptError
from workers.errors import (
    GraphMismatchError,
    ResumeConflictError,
    RunStoreError,
    ThreadNotFoundError,
)
from workers.store._model import NewRun

__all__ = ("accepts", "not_pending", "refused_as")


def accepts(new: Mapping[str, Any], why: Mapping[str, Any]) -> bool:
    """Whether ``create_run`` queues the run ``new`` (its parameters): the thread is its
    graph's, no run has its key, none answers its pause already, and a resume answers
    an open wait (a map: every id it names; a plain value: any, or a thread whose latest
    run stopped without one or is under way)."""
    if why["thread_graph"] != new["graph"] or why["same_key_run"] or why["same_pause_run"]:
        return False
    waits, answers = why["open_waits"] or [], new["answers"]
    if new["kind"] != "resume":
        return True
    if answers is not None:
        return bool(answers) and set(answers) <= set(waits)
    return bool(waits) or why["latest_status"] in ("interrupted", "queued", "running")


def refused_as(new: NewRun, why: Mapping[str, Any]) -> str:
    """The run a refused create_run stands for (same idempotency key), or why it was refused.

    ``why``: ``thread_graph``, ``same_key_run``/``same_key_digest`` (the run with the
    same key), ``same_pause_run``/``same_pause_status`` (the resume already answering
    the same pause), ``open_waits`` (the thread's inbox) and ``latest_status``.
    """
    thread_graph = why["thread_graph"]
    if thread_graph is None and new.kind == "cancel":
        raise ThreadNotFoundError(
            f"Cannot cancel thread {new.thread_id!r}: no run was ever made on it. Check the "
            "thread_id (graphrun runs lists recent threads). Nothing was changed."
        )
    if thread_graph is None and new.kind == "resume":
        raise InvalidResumeError(
            f"Cannot resume thread {new.thread_id!r}: it has no checkpoints. Check the "
            "thread_id, or start the thread with an input first. Nothing was changed."
        )
    if thread_graph is not None and thread_graph != new.graph:
        raise GraphMismatchError(
            f"Thread {new.thread_id!r} belongs to graph {thread_graph!r}; it cannot run "
            f"under graph {new.graph!r}. Use a new thread_id for graph {new.graph!r}."
        )
    if why["same_key_run"] is not None:
        digest = why["same_key_digest"]
        if new.request_digest is not None and digest not in (None, new.request_digest):
            raise ResumeConflictError(
                f"Idempotency key {new.idempotency_key!r} of thread {new.thread_id!r} was "
                f"already used by run {why['same_key_run']} for a different request. Nothing "
                "was changed; use a new key for a new request."
            )
        return str(why["same_key_run"])
    if why["same_pause_run"] is not None:
        raise ResumeConflictError(
            f"Thread {new.thread_id!r} is already being resumed by run {why['same_pause_run']} "
            f"(status {why['same_pause_status']}). This resume was not applied; read the "
            "thread's state and resume its next interrupt if there is one."
        )
    if new.kind == "resume":
        not_pending(new, why["open_waits"] or [], why["latest_status"])
        # the resume that won the race has already moved the thread on since
        raise ResumeConflictError(
            f"Another resume of thread {new.thread_id!r}'s pause was accepted first. This "
            "resume was not applied; read the thread's state and resume its next interrupt "
            "if there is one."
        )
    raise RunStoreError(  # pragma: no cover - every other refusal has a reason above
        f"run store: the run for thread {new.thread_id!r} was refused for an unknown reason"
    )


def not_pending(new: NewRun, open_waits: Sequence[str], latest_status: str | None) -> None:
    """Raise why a resume answers no open wait of its thread, if it does not."""
    pending = sorted(open_waits)
    answers = new.answers
    if answers is not None:
        if not answers:
            raise UnknownInterruptError(
                f"The resume map names no interrupt; pending interrupt ids: {pending}. "
                "Nothing was changed.",
                reason="empty_map",
                pending_ids=pending,
            )
        unknown = sorted(set(answers) - set(pending))
        if unknown:
            raise UnknownInterruptError(
                f"Resume map key {unknown[0]} matches no pending interrupt of thread "
                f"{new.thread_id!r} (answered already, cancelled, or never asked: "
                f"{', '.join(unknown)}); pending interrupt ids: {pending}. Nothing was changed.",
                reason="not_pending",
                interrupt_ids=unknown,
                pending_ids=pending,
            )
    elif not pending and latest_status not in ("interrupted", "queued", "running"):
        raise InvalidResumeError(
            f"Cannot resume thread {new.thread_id!r}: it has no pending interrupt (its latest "
            f"run is {latest_status}). Nothing was changed; use get_state() to see the "
            "thread's state."
        )
