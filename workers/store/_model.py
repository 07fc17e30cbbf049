"""What the workers keep about runs: the rows the run store reads and writes.

:class:`~workers.store.RunStore` keeps them (in Postgres, or in memory for tests).
Errors are the workers' own (:class:`~workers.errors.RunStoreError`,
:class:`~workers.errors.StoreUnavailableError`), never a driver's.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, NamedTuple

from graphruntime.checkpoint import SerializerProtocol
from workers.store._payload import RunKind, RunPayload

RunStatus = Literal["queued", "running", "interrupted", "success", "error", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"interrupted", "success", "error", "cancelled"})
EventRow = tuple[tuple[str, ...], str, Any]
"""``(namespace, stream mode, payload)``: one stream chunk of a run."""


@dataclass(frozen=True)
class NewRun:
    """A run to queue (see :meth:`RunStore.create_run`); made by :meth:`of`."""

    run_id: str
    thread_id: str
    graph: str
    kind: RunKind
    payload: RunPayload
    idempotency_key: str | None = None
    request_digest: str | None = None
    origin: dict[str, Any] | None = None
    stored: tuple[str, bytes] | None = None
    """The payload as stored (the serde's dump of ``payload.stored()``), dumped once."""

    @classmethod
    def of(
        cls,
        graph: str,
        thread_id: str,
        payload: RunPayload,
        serde: SerializerProtocol,
        *,
        idempotency_key: str | None = None,
        origin: dict[str, Any] | None = None,
        stored: tuple[str, bytes] | None = None,
    ) -> NewRun:
        """The run to queue for ``payload`` on the thread, with the digest of its request
        (the graph and the payload as stored): the same key with another request conflicts.
        ``stored``: ``serde``'s dump of ``payload.stored()`` if the caller has it."""
        type_, data = stored if stored is not None else serde.dumps_typed(payload.stored())
        digest = hashlib.sha256(graph.encode() + b"\0" + type_.encode() + b"\0" + data)
        return cls(
            run_id=str(uuid.uuid4()),
            thread_id=thread_id,
            graph=graph,
            kind=payload.kind,
            payload=payload,
            idempotency_key=idempotency_key,
            request_digest=digest.hexdigest(),
            origin=origin,
            stored=(type_, data),
        )

    @property
    def answers(self) -> list[str] | None:
        """The interrupt ids a resume map answers, sorted (None: not a resume map)."""
        return self.payload.answers if self.kind == "resume" else None


@dataclass(frozen=True)
class Run:
    """One ``invoke``/``submit`` of a graph on a thread.

    ``payload_error`` says why its payload could not be decoded here (then ``payload``
    is empty), e.g. a value of a class this process may not load.
    """

    run_id: str
    thread_id: str
    graph: str
    status: str
    kind: str
    payload: RunPayload
    stop: int | None
    result: Any
    error: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    idempotency_key: str | None = None
    request_digest: str | None = None
    resumes_run: str | None = None
    origin: dict[str, Any] | None = None
    payload_error: str | None = None
    result_error: str | None = None

    @property
    def done(self) -> bool:
        return self.status in TERMINAL


@dataclass(frozen=True)
class Event:
    """A stored stream chunk of a run, in order (``seq``)."""

    seq: int
    ns: tuple[str, ...]
    mode: str
    payload: Any


@dataclass(frozen=True)
class StepTask:
    """A dispatched task's barrier row: ``dispatched`` until a job completes it."""

    task_id: str
    status: Literal["dispatched", "done"]
    error: dict[str, Any] | None = None


@dataclass(frozen=True)
class OrphanTask:
    """An open task nobody will finish (its worker died, or its message was lost)."""

    run_id: str
    thread_id: str
    checkpoint_id: str
    task_id: str
    path: tuple[Any, ...]
    retry_attempts: int
    resends: int


@dataclass(frozen=True)
class RunningTask:
    """A task a live worker runs (claimed), e.g. one of a run being cancelled."""

    task_id: str
    worker: str
    path: tuple[Any, ...]


@dataclass(frozen=True)
class Wait:
    """One pending interrupt: a thread waiting for a human, as the inbox keeps it.

    The coordinator makes it from the step a run stopped at; the store adds, as it
    lists it, when it was first asked and whether the thread has a run under way.
    """

    graph: str
    thread_id: str
    interrupt_id: str
    node: str
    namespace: str
    value: Any
    """The interrupt's value as JSON, as the serde stores it (what ``where`` matches)."""
    run_id: str
    """The run that stopped at it."""
    checkpoint_id: str
    deadline: datetime | None = None
    default: tuple[str, bytes] | None = None
    """The resume value at the deadline, typed-serialized (for the deadline sweep:
    :meth:`~workers.store.RunStore.expired_waits`; inbox pages leave it out)."""
    created_at: datetime | None = None
    """When it was first asked, by the store's clock (None: not stored yet)."""
    resuming: bool = False
    """A run of the thread is queued or running (the wait may be answered already)."""
    response_schema: Any = None
    """The interrupt's ``response_schema`` (a JSON schema: the answers it takes), if any."""
    claimed_by: str | None = None
    """The approver whose claim on the wait has not lapsed (see :class:`WaitClaim`)."""
    claimed_until: datetime | None = None


@dataclass(frozen=True)
class InboxQuery:
    """Filters of an inbox page: the value contains ``where`` (JSON), of ``node``, old."""

    graph: str | None = None
    where: dict[str, Any] | None = None
    node: str | None = None
    older_than: timedelta | datetime | None = None
    """Created before this time, or longer ago than this age (by the store's clock)."""
    limit: int = 50
    after: tuple[datetime, str, str] | None = None
    """Keyset cursor: the (created_at, thread_id, interrupt_id) of the last row seen."""
    threads: Sequence[tuple[str, str]] | None = None
    """Only these (thread_id, interrupt_id)."""
    thread_id: str | None = None
    """Only this thread's waits."""
    any_of: Sequence[Any] | None = None
    """The value contains at least one of these (JSON containment each)."""


@dataclass(frozen=True)
class WaitClaim:
    """An approver's claim on a pending wait, as it stands after a claim attempt."""

    holder: str | None
    """Who holds it (None: nobody, or it lapsed)."""
    until: datetime | None
    taken: bool
    """This attempt took (or renewed) it."""


@dataclass(frozen=True)
class Claim:
    """A coordinator job's start (:meth:`RunStore.claim_runs`)."""

    ended: bool
    """The message's run had already ended: nothing to do."""
    leased: bool
    """This worker holds the thread's lease now."""
    run: Run | None
    """Under the lease: the thread's oldest run still to finish, marked running (its
    ``status`` is the one it had before)."""
    found: bool = True
    """False: no such run."""
    epoch: str | None = None
    """The server's epoch when claimed (see :meth:`RunStore.finish_and_release_many`)."""


class TaskClaims(NamedTuple):
    """A task job's start (:meth:`RunStore.claim_tasks`)."""

    ids: list[str]
    """The task ids claimed, in the message's order."""
    epoch: str | None
    """The server's epoch when claimed (see :meth:`RunStore.complete_tasks`)."""


@dataclass(frozen=True)
class Released:
    """A thread's lease given up (:meth:`RunStore.finish_and_release_many`)."""

    finished: bool
    """This call ended the run (False: it had already ended)."""
    following: str | None
    """The thread's oldest run still to finish: queued while the lease was held, its own
    job found the lease taken, so the caller sends it on."""
    error: Exception | None = None
    """Why the run was not ended (:meth:`RunStore.finish_and_release_many`): its result
    cannot be stored. The lease is freed all the same."""


@dataclass(frozen=True)
class RunEnd:
    """How a run ends (:meth:`RunStore.finish_and_release_many`)."""

    run_id: str
    thread_id: str
    status: RunStatus
    result: Any = None
    error: Mapping[str, Any] | None = None
    inbox: Sequence[Wait] | None = None
    """What the thread waits on now (replacing its inbox); None: leave it."""


@dataclass(frozen=True)
class RunQuery:
    """Filters of a run listing, newest first."""

    thread_id: str | None = None
    graph: str | None = None
    status: str | None = None
    newer_than: float | None = None
    """Only runs created in the last this many seconds."""
    limit: int = 50


@dataclass(frozen=True)
class Overview:
    """The cluster at a glance (``graphrun status``)."""

    queued: int
    running: int
    pending_interrupts: int
    overdue: int
    """Pending interrupts past their deadline (the sweepers resume them)."""
    workers: int
    """Worker nodes (a Celery worker: its main process and its pool) with a fresh heartbeat."""
    processes: int = 0
    """Their processes with a fresh heartbeat."""


def canonical_run_id(run_id: str) -> str:
    """The run id as Postgres prints a uuid (its statements' results, the NOTIFY
    payloads); an id that is no uuid as it is."""
    try:
        return str(uuid.UUID(run_id))
    except ValueError:
        return run_id
