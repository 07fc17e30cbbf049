"""Whether the store queues a run, and why it refused one, as the error the caller gets.

:func:`refusal` reads the facts of the ``explain_refused_run`` query: the store
(:class:`~workers.store.RunStore`) raises what it finds for a run ``create_run`` did not
queue (on Postgres the statement decides in SQL), and the in-memory ``create_run``
queues a run when it finds nothing.
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

__all__ = ("refusal", "refused_as")


def refused_as(new: Mapping[str, Any], why: Mapping[str, Any]) -> str:
    """The run a refused create_run stands for (same idempotency key), or why it was
    refused, raised (see :func:`refusal`)."""
    found = refusal(new, why)
    if found is None and new["kind"] == "resume":
        # the facts allow it: the resume that won the race has moved the thread on since
        found = ResumeConflictError(
            f"Another resume of thread {new['thread_id']!r}'s pause was accepted first. This "
            "resume was not applied; read the thread's state and resume its next interrupt "
            "if there is one."
        )
    if found is None:  # pragma: no cover - every other refusal has a reason
        raise RunStoreError(
            f"run store: the run for thread {new['thread_id']!r} was refused for an unknown reason"
        )
    if isinstance(found, Exception):
        raise found
    return found


def refusal(new: Mapping[str, Any], why: Mapping[str, Any]) -> Exception | str | None:
    """Why ``create_run`` refuses the run ``new`` (its parameters): the error for the
    caller, or the run with the same idempotency key (it stands for ``new``); None: the
    run is queued. A resume must answer an open wait (a map: every id it names; a plain
    value: any, or a thread whose latest run stopped without one or is under way).

    ``why``: ``thread_graph``, ``same_key_run``/``same_key_digest`` (the run with the
    same key), ``same_pause_run``/``same_pause_status`` (the resume already answering
    the same pause), ``open_waits`` (the thread's inbox) and ``latest_status``.
    """
    thread, graph, thread_graph = new["thread_id"], new["graph"], why["thread_graph"]
    if thread_graph is None and new["kind"] == "cancel":
        return ThreadNotFoundError(
            f"Cannot cancel thread {thread!r}: no run was ever made on it. Check the "
            "thread_id (graphrun runs lists recent threads). Nothing was changed."
        )
    if thread_graph is None and new["kind"] == "resume":
        return InvalidResumeError(
            f"Cannot resume thread {thread!r}: it has no checkpoints. Check the "
            "thread_id, or start the thread with an input first. Nothing was changed."
        )
    if thread_graph != graph:
        return GraphMismatchError(
            f"Thread {thread!r} belongs to graph {thread_graph!r}; it cannot run "
            f"under graph {graph!r}. Use a new thread_id for graph {graph!r}."
        )
    if why["same_key_run"] is not None:
        digest, wanted = why["same_key_digest"], new["request_digest"]
        if wanted is not None and digest not in (None, wanted):
            return ResumeConflictError(
                f"Idempotency key {new['idempotency_key']!r} of thread {thread!r} was "
                f"already used by run {why['same_key_run']} for a different request. Nothing "
                "was changed; use a new key for a new request."
            )
        return str(why["same_key_run"])
    if why["same_pause_run"] is not None:
        return ResumeConflictError(
            f"Thread {thread!r} is already being resumed by run {why['same_pause_run']} "
            f"(status {why['same_pause_status']}). This resume was not applied; read the "
            "thread's state and resume its next interrupt if there is one."
        )
    if new["kind"] == "resume":
        return _not_pending(new, why["open_waits"] or [], why["latest_status"])
    return None


def _not_pending(
    new: Mapping[str, Any], open_waits: Sequence[str], latest_status: str | None
) -> InvalidResumeError | None:
    """Why a resume answers no open wait of its thread, if it does not."""
    pending = sorted(open_waits)
    answers = new["answers"]
    if answers is not None:
        if not answers:
            return UnknownInterruptError(
                f"The resume map names no interrupt; pending interrupt ids: {pending}. "
                "Nothing was changed.",
                reason="empty_map",
                pending_ids=pending,
            )
        unknown = sorted(set(answers) - set(pending))
        if unknown:
            return UnknownInterruptError(
                f"Resume map key {unknown[0]} matches no pending interrupt of thread "
                f"{new['thread_id']!r} (answered already, cancelled, or never asked: "
                f"{', '.join(unknown)}); pending interrupt ids: {pending}. Nothing was changed.",
                reason="not_pending",
                interrupt_ids=unknown,
                pending_ids=pending,
            )
    elif not pending and latest_status not in ("interrupted", "queued", "running"):
        return InvalidResumeError(
            f"Cannot resume thread {new['thread_id']!r}: it has no pending interrupt (its latest "
            f"run is {latest_status}). Nothing was changed; use get_state() to see the "
            "thread's state."
        )
    return None
