"""``GraphClient``: run registered graphs on the workers with the in-process API.

A client is safe to share between threads: every store call borrows one connection
for one statement and gives it back. Its methods live by responsibility: queueing,
waiting on and streaming runs in :mod:`workers._client_runs`; a thread's state, edits
and cancel in :mod:`workers._client_threads`; the connections they share in
:mod:`workers._client_core`; the approvers' inbox here, over :mod:`workers.approvals`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from graphruntime.config import RunnableConfig
from workers import approvals
from workers._client_runs import RunHandle, Runs, check_durability
from workers._client_threads import Threads
from workers._requests import check_text
from workers.approvals import InboxPage, ResumeOutcome, ResumeRecord, Route
from workers.decisions import DecisionInput
from workers.messages import MAX_NAME, MAX_NOTE
from workers.store import WaitClaim

__all__ = ("GraphClient", "RunHandle", "check_durability")


class GraphClient(Runs, Threads):
    """Submit runs, wait on them and read thread state, against Postgres and the broker."""

    def inbox(
        self,
        graph: str | None = None,
        *,
        where: dict[str, Any] | None = None,
        node: str | None = None,
        older_than: timedelta | datetime | None = None,
        limit: int = 50,
        cursor: str | None = None,
        thread: str | None = None,
        action: str | None = None,
        args: dict[str, Any] | None = None,
    ) -> InboxPage:
        """A page of pending interrupts across threads, oldest first.

        ``where`` keeps waits whose value contains it (JSON containment, e.g.
        ``{"team": "ops"}``); ``older_than`` an age or a time; ``thread`` one thread's
        waits; ``action``/``args`` the approval requests (LangChain's HITL middleware,
        Agent Inbox) of that action whose args contain ``args``; ``cursor`` is the
        previous page's. Reads the inbox table only, never a checkpoint.
        """
        return approvals.inbox(
            self,
            graph,
            where=where,
            node=node,
            older_than=older_than,
            limit=limit,
            cursor=cursor,
            thread=thread,
            action=action,
            args=args,
        )

    def resume_many(
        self,
        graph: str,
        *,
        value: Any = None,
        decision: DecisionInput | None = None,
        idempotency_key: str,
        where: dict[str, Any] | None = None,
        node: str | None = None,
        items: Iterable[tuple[str, str]] | None = None,
        action: str | None = None,
        args: dict[str, Any] | None = None,
        actor: str | None = None,
        note: str | None = None,
        route: Route = "client",
        progress: Callable[[int, int], None] | None = None,
    ) -> list[ResumeOutcome]:
        """Resume every selected pending interrupt with ``value``, or answer each with
        ``decision`` in its own format (approve / edit / reject / respond; see
        :mod:`workers.decisions`): one outcome per thread. A decision one selected wait
        does not allow resumes none (:class:`~workers.decisions.DecisionError`).

        Safe to repeat: the same ``idempotency_key`` resumes each thread once.
        ``route`` is recorded in the audit trail (``ui``, ``inbox``, ``api``... for the
        product's own front ends).
        """
        check_text("actor", actor, MAX_NAME)
        check_text("note", note, MAX_NOTE)
        return approvals.resume_many(
            self,
            graph,
            value=value,
            decision=decision,
            idempotency_key=idempotency_key,
            where=where,
            node=node,
            items=items,
            action=action,
            args=args,
            actor=actor,
            note=note,
            route=route,
            progress=progress,
        )

    def claim_wait(
        self,
        graph: str,
        thread_id: str,
        interrupt_id: str,
        *,
        actor: str,
        minutes: float = 15,
        take_over: bool = False,
    ) -> WaitClaim:
        """Claim a pending wait for ``minutes`` so other approvers see who answers it;
        the claim as it stands after the attempt (``taken`` False: someone else holds
        it). See :func:`workers.approvals.claim_wait`."""
        return approvals.claim_wait(
            self, graph, thread_id, interrupt_id, actor=actor, minutes=minutes, take_over=take_over
        )

    def release_wait(self, graph: str, thread_id: str, interrupt_id: str, *, actor: str) -> bool:
        """End ``actor``'s claim on a wait; whether there was one."""
        return approvals.release_wait(self, graph, thread_id, interrupt_id, actor=actor)

    def resume_history(
        self, graph: str, config: RunnableConfig, *, limit: int = 50
    ) -> list[ResumeRecord]:
        """The thread's resumes, newest first: who, when, which value, which route."""
        return approvals.resume_history(self, graph, config, limit=limit)
