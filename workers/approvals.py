"""Approvals at scale: the inbox of pending interrupts, bulk resume, cancel, the audit trail.

These are :class:`~workers.client.GraphClient` methods (``inbox``, ``resume_many``,
``cancel``, ``resume_history``); the logic lives here so the client stays small, and
takes what it uses of the client (:class:`Cluster`): this module does not import it.
Every resume they make goes through the same path as ``GraphClient.submit``: a queued
run, checked against the thread when it starts, idempotent by key, audited with its actor.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Literal, NamedTuple, Protocol, get_args

from graphruntime.checkpoint import ClusterSaver, SerializerProtocol, check_round_trip
from graphruntime.config import RunnableConfig
from graphruntime.errors import InvalidResumeError
from graphruntime.types import Command
from workers._queue_runs import queue_runs
from workers._requests import check_text, thread_id_of
from workers.decisions import DecisionError, DecisionInput, action_filter, answer, read_request
from workers.dispatch import Broker
from workers.errors import (
    GraphMismatchError,
    InvalidFilterError,
    InvalidRequestError,
    ResumeConflictError,
    WaitNotPendingError,
)
from workers.messages import MAX_DEPTH, MAX_NAME, nesting_depth
from workers.store import InboxQuery, NewRun, Run, RunPayload, RunStore, WaitClaim
from workers.store import Wait as Wait  # the inbox's row: the client's pages hold them

log = logging.getLogger(__name__)

MAX_PAGE = 1000
"""Largest inbox page; bulk operations page through everything with it."""

MAX_WHERE = 65536
"""Largest ``where`` filter, as JSON text."""

MAX_CURSOR = 4096
"""Longest page cursor accepted (ours are far shorter)."""

MAX_AGE = timedelta(days=36500)
"""Oldest ``older_than`` accepted: a hundred years."""

Route = Literal["ui", "inbox", "cli", "queue", "client", "deadline", "api"]
ROUTES: tuple[Route, ...] = get_args(Route)
"""Where a run came from, as its audit record says: the web inbox, ``graphrun inbox
resume``, ``graphrun resume``/``run``, a resume-queue message, ``GraphClient``, a
deadline, the HTTP API."""


def check_route(route: str) -> None:
    if route not in ROUTES:
        raise InvalidRequestError(f"route must be one of {', '.join(ROUTES)}, got {route!r}")


class Cluster(Protocol):
    """What these functions use of a client (a :class:`~workers.client.GraphClient`)."""

    @property
    def store(self) -> RunStore: ...

    def check_graph(self, graph: str) -> None:
        """Refuse a graph neither the client nor any live worker serves."""
        ...

    @property
    def saver(self) -> ClusterSaver: ...

    def send_coordinates(self, run_ids: Sequence[str], instead: str) -> None:
        """Send recorded runs to the workers (:class:`~workers.errors.NotDispatchedError`
        when the broker is away: do not ``instead``)."""
        ...


class InboxPage(NamedTuple):
    items: list[Wait]
    cursor: str | None
    """Pass it back for the next page; None when this page was the last."""


Outcome = Literal["applied", "already applied", "conflict", "not pending"]


@dataclass(frozen=True)
class ResumeOutcome:
    """What a bulk resume did to one thread."""

    thread_id: str
    interrupt_ids: tuple[str, ...]
    outcome: Outcome
    run_id: str | None = None
    detail: str | None = None


@dataclass(frozen=True)
class ResumeRecord:
    """One resume of a thread, for the audit trail."""

    run_id: str
    created_at: datetime
    status: str
    route: str | None
    actor: str | None
    note: str | None
    value: Any
    error: dict[str, Any] | None


def _position(row: Wait) -> tuple[datetime, str, str]:
    """A listed wait's place in the inbox's order."""
    assert row.created_at is not None  # the store sets it on every row it lists
    return row.created_at, row.thread_id, row.interrupt_id


def encode_cursor(row: Wait) -> str:
    at, thread_id, interrupt_id = _position(row)
    raw = json.dumps([at.isoformat(), thread_id, interrupt_id])
    return base64.urlsafe_b64encode(raw.encode()).decode("ascii")


def decode_cursor(cursor: str) -> tuple[datetime, str, str]:
    bad = InvalidFilterError("Bad inbox cursor: pass back the cursor a previous page returned")
    if not isinstance(cursor, str) or len(cursor) > MAX_CURSOR:
        raise bad
    try:
        at, thread_id, interrupt_id = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        when = datetime.fromisoformat(at)
    except (ValueError, TypeError, RecursionError) as exc:
        raise bad from exc
    if when.tzinfo is None or not all(
        isinstance(v, str) and _plain_text(v) for v in (thread_id, interrupt_id)
    ):
        raise bad
    return when, thread_id, interrupt_id


def check_filter(
    where: dict[str, Any] | None = None,
    node: str | None = None,
    older_than: timedelta | datetime | None = None,
) -> None:
    """Refuse, with the reason, a filter the inbox cannot use (:class:`InvalidFilterError`):
    ``where`` not a JSON object, deeper than the queue messages' limit, bigger than
    64 KiB or holding NUL characters (Postgres text cannot); a ``node`` that is not a
    name; an ``older_than`` that is not an age or an aware datetime, or absurdly old."""
    if where is not None:
        if not isinstance(where, dict):
            raise InvalidFilterError(
                'where is a JSON object the value must contain, e.g. {"team": "ops"}'
            )
        if nesting_depth(where) > MAX_DEPTH:
            raise InvalidFilterError(f"where nests deeper than {MAX_DEPTH} levels")
        try:
            text = json.dumps(where, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidFilterError(f"where is not plain JSON: {exc}") from None
        if len(text) > MAX_WHERE:
            raise InvalidFilterError(f"where is {len(text)} characters; the limit is {MAX_WHERE}")
        if _has_nul(where):
            raise InvalidFilterError("where must not contain NUL characters")
    if node is not None and not (
        isinstance(node, str) and 0 < len(node) <= MAX_NAME and _plain_text(node)
    ):
        raise InvalidFilterError(f"node is a node's name: 1 to {MAX_NAME} characters, no NUL")
    if isinstance(older_than, datetime) and older_than.tzinfo is None:
        raise InvalidFilterError("older_than takes a timedelta (an age) or an aware datetime")
    if isinstance(older_than, timedelta) and not timedelta(0) <= older_than <= MAX_AGE:
        raise InvalidFilterError(
            f"older_than is an age: a timedelta from zero to {MAX_AGE.days} days"
        )
    if older_than is not None and not isinstance(older_than, timedelta | datetime):
        raise InvalidFilterError("older_than takes a timedelta (an age) or an aware datetime")


def check_action(action: str | None, args: dict[str, Any] | None) -> None:
    """Refuse an action filter the inbox cannot use (:class:`InvalidFilterError`)."""
    if action is not None and not (
        isinstance(action, str) and 0 < len(action) <= MAX_NAME and _plain_text(action)
    ):
        raise InvalidFilterError(f"action is a tool's name: 1 to {MAX_NAME} characters, no NUL")
    if args is not None:
        try:
            check_filter(args)
        except InvalidFilterError as exc:
            raise InvalidFilterError(f"args: {exc}".replace("where", "the filter")) from None


def _items(items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """``(thread_id, interrupt_id)`` pairs, checked."""
    out = []
    for item in items:
        if not (isinstance(item, tuple | list) and len(item) == 2):
            raise InvalidFilterError(f"items are (thread_id, interrupt_id) pairs, got {item!r}")
        thread_id, interrupt_id = str(item[0]), str(item[1])
        check_text("thread_id", thread_id, MAX_NAME)
        check_text("interrupt_id", interrupt_id, MAX_NAME)
        out.append((thread_id, interrupt_id))
    return out


def _plain_text(value: str) -> bool:
    return "\x00" not in value


def _has_nul(value: Any) -> bool:
    """Whether a decoded JSON value holds a NUL character in a key or a string."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def inbox(
    client: Cluster,
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
    """A page of pending interrupts, oldest first; filter on the value's fields (``where``:
    JSON containment), the node, the age, the thread, and the action a review asks
    about (``action``: its name, ``args``: contained in its args; see
    :func:`workers.decisions.action_filter`)."""
    if graph is not None:
        client.check_graph(graph)  # an unknown graph is an error, not an empty inbox
    if not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidFilterError(f"limit must be between 1 and {MAX_PAGE}, got {limit!r}")
    check_filter(where, node, older_than)
    check_action(action, args)
    if thread is not None and not (
        isinstance(thread, str) and 0 < len(thread) <= MAX_NAME and _plain_text(thread)
    ):
        raise InvalidFilterError(f"thread is a thread id: 1 to {MAX_NAME} characters, no NUL")
    rows = client.store.inbox(
        InboxQuery(
            graph=graph,
            where=where,
            node=node,
            older_than=older_than,
            limit=limit,
            after=decode_cursor(cursor) if cursor else None,
            thread_id=thread,
            any_of=action_filter(action, args) or None,
        )
    )
    more = encode_cursor(rows[-1]) if len(rows) == limit else None
    return InboxPage(rows, more)


def _targets(
    client: Cluster,
    graph: str,
    where: dict[str, Any] | None,
    node: str | None,
    items: Sequence[tuple[str, str]] | None,
    any_of: list[Any] | None = None,
) -> list[Wait]:
    rows: list[Wait] = []
    after: tuple[datetime, str, str] | None = None
    while True:
        page = client.store.inbox(
            InboxQuery(
                graph=graph,
                where=where,
                node=node,
                limit=MAX_PAGE,
                after=after,
                threads=list(items) if items is not None else None,
                any_of=any_of,
            )
        )
        rows.extend(page)
        if len(page) < MAX_PAGE:
            return rows
        after = _position(page[-1])


def resume_many(
    client: Cluster,
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
    """Resume many pending interrupts with one value, or one decision; one outcome per thread.

    Select them by ``where`` (the value contains it; ``{}`` is every wait of the graph)
    and ``node``, or name them as ``items`` ``(thread_id, interrupt_id)``; ``action`` and
    ``args`` keep the reviews of that action. ``decision`` (approve / edit / reject /
    respond, or one per action of a batched request) answers each wait in its own
    format (:mod:`workers.decisions`); if any selected wait does not allow it, nothing
    is resumed (:class:`~workers.decisions.DecisionError` names what they allow). Each
    thread gets one resume run answering its selected waits, under a key derived from
    ``idempotency_key``: running the same call again changes nothing (its threads
    report "already applied").
    """
    client.check_graph(graph)
    check_route(route)
    if (where is None) == (items is None):
        raise InvalidRequestError(
            "resume_many takes where= (a JSON filter; {} for all) or items=, not both"
        )
    if (value is None) == (decision is None):
        raise InvalidRequestError(
            "resume_many takes value= (the resume value) or decision= (approve, edit, reject, "
            "respond), not both; None resumes nothing"
        )
    check_text("idempotency_key", idempotency_key, MAX_NAME - 5)
    check_filter(where, node)
    check_action(action, args)
    if value is not None:
        check_round_trip(value, client.saver.serde)
    key = f"bulk:{idempotency_key}"
    wanted = _items(items) if items is not None else None
    done = {run.thread_id: run for run in client.store.runs_by_key(graph, key)}
    if wanted is not None:  # report the threads asked about, not every one under the key
        named = {t for t, _ in wanted}
        done = {t: run for t, run in done.items() if t in named}
    rows = _targets(client, graph, where, node, wanted, action_filter(action, args) or None)
    rows = [row for row in rows if row.thread_id not in done]
    answers = _answers(rows, value, decision)
    by_thread: dict[str, list[str]] = {}
    for row in rows:
        by_thread.setdefault(row.thread_id, []).append(row.interrupt_id)
    outcomes: list[ResumeOutcome] = [
        ResumeOutcome(t, (), "already applied", run.run_id) for t, run in done.items()
    ]
    if wanted is not None:
        pending = {(r.thread_id, r.interrupt_id) for r in rows}
        outcomes.extend(
            ResumeOutcome(t, (i,), "not pending", detail="no such pending interrupt")
            for t, i in wanted
            if (t, i) not in pending and t not in done
        )
    origin: dict[str, Any] = {"route": route, "bulk": idempotency_key}
    if actor is not None:
        origin["actor"] = actor
    if note is not None:
        origin["note"] = note
    news = [
        resume_run(
            client.saver.serde,
            graph,
            thread_id,
            {i: answers[(thread_id, i)] for i in ids},
            key,
            origin,
        )
        for thread_id, ids in by_thread.items()
    ]

    def outcome(new: NewRun, run: Run | None, fresh: bool, error: Exception | None) -> None:
        ids = tuple(by_thread[new.thread_id])
        if error is not None:
            kind: Outcome = (
                "conflict"
                if isinstance(error, ResumeConflictError | GraphMismatchError)
                else "not pending"
                if isinstance(error, InvalidResumeError)
                else "conflict"
            )
            outcomes.append(ResumeOutcome(new.thread_id, ids, kind, detail=str(error)))
        elif run is not None:
            applied: Outcome = "applied" if fresh else "already applied"
            outcomes.append(ResumeOutcome(new.thread_id, ids, applied, run.run_id))

    send = partial(client.send_coordinates, instead="resume them again with another key")
    queue_runs(client.store, news, send, each=outcome, progress=progress)
    return outcomes


def _answers(
    rows: list[Wait], value: Any, decision: DecisionInput | None
) -> dict[tuple[str, str], Any]:
    """Each wait's resume value: ``value``, or ``decision`` in the wait's own format.
    Every refusal is collected before anything is written."""
    if decision is None:
        return {(r.thread_id, r.interrupt_id): value for r in rows}
    out: dict[tuple[str, str], Any] = {}
    refused: list[str] = []
    for row in rows:
        try:
            out[(row.thread_id, row.interrupt_id)] = answer(
                read_request(row.value, row.response_schema), decision
            )
        except DecisionError as exc:
            refused.append(f"thread {row.thread_id!r}, wait {row.interrupt_id}: {exc}")
    if refused:
        more = f" (and {len(refused) - 5} more)" if len(refused) > 5 else ""
        raise DecisionError(
            f"{len(refused)} of the {len(rows)} selected waits refuse this decision; nothing "
            f"was resumed. {' '.join(refused[:5])}{more}"
        )
    return out


def claim_wait(
    client: Cluster,
    graph: str,
    thread_id: str,
    interrupt_id: str,
    *,
    actor: str,
    minutes: float,
    take_over: bool = False,
) -> WaitClaim:
    """Claim a pending wait for ``minutes``; the claim as it stands after the attempt.

    Taken when nobody holds it, the holder's claim lapsed, ``actor`` holds it already
    (renewed), or ``take_over``. Raises :class:`WaitNotPendingError` when the wait is
    not pending.
    """
    client.check_graph(graph)
    if not actor or len(actor) > MAX_NAME:
        raise InvalidRequestError(f"actor must be 1 to {MAX_NAME} characters")
    if not 0 < minutes <= 24 * 60:
        raise InvalidRequestError("a claim lasts more than 0 and at most 1440 minutes")
    claim = client.store.claim_wait(thread_id, interrupt_id, actor, minutes * 60, take_over)
    if claim is None:
        raise WaitNotPendingError(
            f"Thread {thread_id!r} has no pending wait {interrupt_id!r} (answered already, "
            "or cancelled)."
        )
    return claim


def release_wait(
    client: Cluster, graph: str, thread_id: str, interrupt_id: str, *, actor: str
) -> bool:
    """End ``actor``'s claim on a wait; whether there was one."""
    client.check_graph(graph)
    return client.store.release_wait(thread_id, interrupt_id, actor)


def resume_run(
    serde: SerializerProtocol,
    graph: str,
    thread_id: str,
    resume: dict[str, Any],
    key: str,
    origin: dict[str, Any],
) -> NewRun:
    """A queued resume run answering ``resume`` (interrupt id -> value) on one thread."""
    payload = RunPayload(
        input=Command(resume=resume), config={"configurable": {"thread_id": thread_id}}
    )
    return NewRun.of(graph, thread_id, payload, serde, idempotency_key=key, origin=origin)


def resume_history(
    client: Cluster, graph: str, config: RunnableConfig, *, limit: int = 50
) -> list[ResumeRecord]:
    """Who resumed the thread, when, with what value, and by which route; newest first."""
    client.check_graph(graph)
    records = []
    for run in client.store.resume_history(thread_id_of(config), limit):
        records.append(_record(run))
    return records


def _record(run: Run) -> ResumeRecord:
    origin = run.origin or {}
    command = run.payload.input
    value = command.resume if isinstance(command, Command) else None
    return ResumeRecord(
        run_id=run.run_id,
        created_at=run.created_at,
        status=run.status,
        route=origin.get("route"),
        actor=origin.get("actor"),
        note=origin.get("note"),
        value=value,
        error=run.error,
    )


DEADLINE_BATCH = 500


def resume_expired(
    store: RunStore,
    broker: Broker,
    serde: SerializerProtocol,
    limit: int = DEADLINE_BATCH,
    *,
    per_message: int = 1,
) -> int:
    """Resume the waits whose deadline passed with their default; returns the runs made.

    Each thread gets one resume run answering its expired waits, under a key named by
    them: every sweeper of the cluster may find the same waits, and only one run is
    made (the others get it back, or a conflict if a human answered first). Their
    coordinator messages name up to ``per_message`` runs each.
    """
    per_thread: dict[tuple[str, str], dict[str, Any]] = {}
    for wait in store.expired_waits(limit):
        if wait.default is not None:  # the query keeps only waits with a default
            default = serde.loads_typed(wait.default)
            per_thread.setdefault((wait.graph, wait.thread_id), {})[wait.interrupt_id] = default
    news = []
    for (graph, thread_id), resume in per_thread.items():
        ids = ",".join(sorted(resume))
        key = "deadline:" + hashlib.sha256(ids.encode()).hexdigest()[:32]
        origin = {"route": "deadline", "actor": "deadline", "note": "deadline passed"}
        news.append(resume_run(serde, graph, thread_id, resume, key, origin))
    created = 0

    def made(new: NewRun, run: Run | None, fresh: bool, error: Exception | None) -> None:
        nonlocal created
        if error is not None:
            log.info("deadline resume of thread %s not made: %s", new.thread_id, error)
        elif run is not None and fresh:
            log.info(
                "deadline passed on thread %s: resumed with its default (run %s)",
                new.thread_id,
                run.run_id,
            )
            created += 1

    queue_runs(store, news, partial(broker.send_coordinates, per_message=per_message), each=made)
    return created
