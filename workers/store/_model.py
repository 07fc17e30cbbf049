"""What the workers keep about runs, and the :class:`RunStore` protocol that keeps it.

The coordinator, the task jobs, the sweeper and the client talk to a ``RunStore``
only; :class:`~workers.store.postgres.PostgresRunStore` is the production one and
:class:`~workers.store.memory.InMemoryRunStore` the test double. Errors are the
workers' own (:class:`~workers.errors.StoreError`,
:class:`~workers.errors.StoreUnavailableError`), never a driver's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, NamedTuple, Protocol

from graphruntime.pregel.driver import is_resume_map

RunStatus = Literal["queued", "running", "interrupted", "success", "error", "cancelled"]
RunKind = Literal["input", "command", "resume", "cancel"]
TERMINAL: frozenset[str] = frozenset({"interrupted", "success", "error", "cancelled"})
EventRow = tuple[tuple[str, ...], str, Any]
"""``(namespace, stream mode, payload)``: one stream chunk of a run."""


@dataclass(frozen=True)
class NewRun:
    """A run to queue (see :meth:`RunStore.create_run`)."""

    run_id: str
    thread_id: str
    graph: str
    kind: RunKind
    payload: dict[str, Any]
    idempotency_key: str | None = None
    request_digest: str | None = None
    origin: dict[str, Any] | None = None

    @property
    def answers(self) -> list[str] | None:
        """The interrupt ids a resume map answers, sorted (None: not a resume map)."""
        resume: Any = getattr(self.payload.get("input"), "resume", None)
        if self.kind != "resume" or not is_resume_map(resume):
            return None
        return sorted(resume)


@dataclass(frozen=True)
class Run:
    """One ``invoke``/``submit`` of a graph on a thread.

    ``payload`` is what the client stored: ``{"input", "config", "stream_modes",
    "subgraphs", "interrupt_before", "interrupt_after"}``. ``payload_error`` says why
    it could not be decoded here (then ``payload`` is empty), e.g. a value of a class
    this process may not load.
    """

    run_id: str
    thread_id: str
    graph: str
    status: str
    kind: str
    payload: dict[str, Any]
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
class InboxEntry:
    """A pending interrupt as the inbox keeps it (see :meth:`RunStore.finish_run`).

    ``value``: the interrupt's value as JSON text (what the serde stores); ``default``
    the deadline's resume value, typed-serialized.
    """

    interrupt_id: str
    node: str
    namespace: str
    value: str
    deadline: datetime | None = None
    default: tuple[str, bytes] | None = None
    response_schema: str | None = None
    """The interrupt's ``response_schema`` as JSON text, when it has one."""


@dataclass(frozen=True)
class InboxUpdate:
    """What a thread waits on now: its graph, checkpoint and pending interrupts."""

    thread_id: str
    graph: str
    checkpoint_id: str
    entries: Sequence[InboxEntry]


@dataclass(frozen=True)
class InboxRow:
    """One row of the inbox, as listed."""

    graph: str
    thread_id: str
    interrupt_id: str
    node: str
    namespace: str
    value: Any
    created_at: datetime
    deadline: datetime | None
    run_id: str
    checkpoint_id: str
    resuming: bool
    """A run of the thread is queued or running (the wait may be answered already)."""
    response_schema: Any = None
    """The interrupt's ``response_schema`` (JSON), when it has one."""
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
    """A coordinator job's start (:meth:`RunStore.claim_run`)."""

    ended: bool
    """The message's run had already ended: nothing to do."""
    leased: bool
    """This worker holds the thread's lease now."""
    run: Run | None
    """Under the lease: the thread's oldest run still to finish, marked running (its
    ``status`` is the one it had before)."""
    found: bool = True
    """False: no such run (:meth:`RunStore.claim_runs`; ``claim_run`` raises)."""
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
    """A thread's lease given up (:meth:`RunStore.finish_and_release`)."""

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
    inbox: InboxUpdate | None = None


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
    """Worker processes with a fresh heartbeat."""


@dataclass(frozen=True)
class ExpiredWait:
    """A pending interrupt whose deadline passed."""

    graph: str
    thread_id: str
    interrupt_id: str
    default: tuple[str, bytes]


class RunStore(Protocol):
    """Runs, the step barrier, thread leases, heartbeats and stream events."""

    # --- runs -----------------------------------------------------------------------
    def create_run(self, new: NewRun) -> tuple[Run, bool]:
        """Queue a run; returns (run, created).

        The same idempotency key on the thread returns the existing run (created
        False), unless its request differs: :class:`~workers.errors.ResumeConflictError`.
        A thread first run under one graph refuses others
        (:class:`~workers.errors.GraphMismatchError`); a second resume of the same
        pause raises :class:`~workers.errors.ResumeConflictError`.
        """
        ...

    def get_run(self, run_id: str) -> Run:
        """The run; :class:`~workers.errors.RunNotFoundError` if there is none."""
        ...

    def next_run(self, thread_id: str) -> Run | None:
        """The thread's oldest queued or running run."""
        ...

    def active_runs(self, thread_id: str) -> list[str]: ...

    def claim_run(self, run_id: str, worker: str, stale: float, token: str | None = None) -> Claim:
        """Start a coordinator job for ``run_id`` in one round trip (see :class:`Claim`);
        ``token``: the job's, kept with the thread's lease (see :meth:`heartbeat`).

        Raises :class:`~workers.errors.RunNotFoundError` for an unknown run.
        """
        ...

    def claim_runs(
        self, run_ids: Sequence[str], worker: str, stale: float, token: str | None = None
    ) -> list[Claim]:
        """:meth:`claim_run` for each run, in order, in one round trip; an unknown run's
        claim is ended and not ``found``."""
        ...

    def set_running(self, run_id: str, stop: int) -> None:
        """Mark the run started and record the last step it may take (kept if recorded):
        what its task jobs and later coordinator jobs re-open it with."""
        ...

    def touch_run(self, run_id: str) -> None: ...

    def finish_run(
        self,
        run_id: str,
        status: RunStatus,
        *,
        result: Any = None,
        error: Mapping[str, Any] | None = None,
        inbox: InboxUpdate | None = None,
    ) -> bool:
        """End a queued or running run; False if it had already ended.

        ``inbox``: what the thread waits on now; its rows replace the thread's, in the
        same transaction (and only if this call ended the run).
        """
        ...

    def finish_and_release(
        self,
        run_id: str,
        status: RunStatus,
        *,
        thread_id: str,
        worker: str,
        result: Any = None,
        error: Mapping[str, Any] | None = None,
        inbox: InboxUpdate | None = None,
    ) -> Released:
        """:meth:`finish_run`, then :meth:`release_thread`, in one transaction."""
        ...

    def finish_and_release_many(
        self,
        ends: Sequence[RunEnd],
        *,
        worker: str,
        free: Sequence[str] = (),
        requeue: Sequence[str] = (),
        epoch: str | None = None,
    ) -> list[Released]:
        """:meth:`finish_and_release` for runs of distinct threads, and :meth:`release_thread`
        for the threads ``free`` (no run of theirs ended), all in one transaction: one
        durable commit for every run it ends. ``requeue``: runs of the freed threads that
        a claim marked running and nothing advanced, queued again.

        ``epoch``: the one the job's claim read. When it ends runs, the commit vouches for
        the job's asynchronous commits before it (held checkpoints): it is refused with a
        :class:`~workers.errors.StoreRecoveredError` if the server recovered from a crash
        since, which may have taken them back (the job is then redone).

        One :class:`Released` per end, then per freed thread, in order. An end whose
        result cannot be stored only frees its lease (its ``Released`` says why); the
        others are not held back by it."""
        ...

    def create_runs(
        self, news: Sequence[NewRun]
    ) -> list[tuple[Run | None, bool, Exception | None]]:
        """:meth:`create_run` for many runs in one round trip; per run (run, created, error)."""
        ...

    def cancel_thread(
        self, thread_id: str, error: Mapping[str, Any], *, cancel_run: str, stale: float
    ) -> list[str]:
        """Under the thread's lease, for its cancel run ``cancel_run``: end the thread's
        other queued and running runs as cancelled, close their open tasks that no live
        worker holds, and clear its inbox, in one transaction; returns the runs cancelled."""
        ...

    def running_cancelled_tasks(self, run_ids: Sequence[str], stale: float) -> list[RunningTask]:
        """The tasks of cancelled runs that live workers still run; closes the others."""
        ...

    def replace_inbox(self, update: InboxUpdate, run_id: str | None) -> None:
        """Set the thread's inbox rows (after an edit of its state)."""
        ...

    def inbox(self, query: InboxQuery) -> list[InboxRow]:
        """A page of pending interrupts, oldest first."""
        ...

    def expired_waits(self, limit: int) -> list[ExpiredWait]:
        """Pending interrupts past their deadline whose thread has no run under way."""
        ...

    def claim_wait(
        self, thread_id: str, interrupt_id: str, actor: str, seconds: float, take_over: bool
    ) -> WaitClaim | None:
        """Claim a pending wait for ``seconds`` when it is free, lapsed, ``actor``'s, or
        ``take_over``; the claim after the attempt, None when the wait is not pending."""
        ...

    def release_wait(self, thread_id: str, interrupt_id: str, actor: str) -> bool:
        """End ``actor``'s claim on the wait; whether there was one."""
        ...

    def runs_by_key(self, graph: str, key: str) -> list[Run]:
        """Every run of the graph created under this idempotency key (any thread)."""
        ...

    def resume_history(self, thread_id: str, limit: int = 50) -> list[Run]:
        """The thread's resume runs, newest first (who, when, with what, by which route)."""
        ...

    def runs_of_thread(self, thread_id: str, limit: int = 20) -> list[dict[str, Any]]: ...

    def list_runs(self, query: RunQuery) -> list[dict[str, Any]]:
        """Runs matching ``query``, newest first, as rows (run_id, thread_id, graph, status,
        kind, created_at, updated_at, error, origin, step_tasks: a running run's latest
        dispatched step as ``{"done": n, "total": m}``, else None)."""
        ...

    def overview(self, stale: float) -> Overview: ...

    # --- thread leases and worker heartbeats --------------------------------------------
    def bind_thread(self, thread_id: str, graph: str) -> str:
        """The graph the thread belongs to; a new thread is bound to ``graph`` now."""
        ...

    def acquire_thread(
        self, thread_id: str, worker: str, stale: float, token: str | None = None
    ) -> bool:
        """Lease the thread to ``worker``'s job ``token`` if free, already the worker's,
        or held by a dead worker."""
        ...

    def release_thread(self, thread_id: str, worker: str) -> str | None:
        """Free the lease; the thread's oldest run still to finish, if any."""
        ...

    def heartbeat(
        self,
        worker: str,
        hostname: str,
        pid: int,
        *,
        keep: str | None = None,
        grace: float | None = None,
    ) -> list[str]:
        """Record that ``worker`` is alive; with a ``grace``, also free its task claims
        and thread leases not taken by its current job (token ``keep``; None: it runs
        none) and older than ``grace`` seconds (younger: a job that just began).

        Returns the threads whose leases it freed.
        """
        ...

    def remove_worker(self, worker: str) -> None: ...

    def live_workers(self, stale: float) -> list[dict[str, Any]]: ...

    # --- the step barrier ---------------------------------------------------------------
    def register_tasks(
        self,
        run_id: str,
        thread_id: str,
        checkpoint_id: str,
        tasks: Sequence[tuple[str, Sequence[Any]]],
        epoch: str | None = None,
    ) -> list[str]:
        """Open the barrier rows of a step's (task id, path); returns the ids new here.

        ``epoch``: as :meth:`finish_and_release_many`'s (the step's checkpoint and the
        run's writes before it may have been committed asynchronously)."""
        ...

    def step_tasks(self, run_id: str, checkpoint_id: str) -> dict[str, StepTask]: ...

    def claim_tasks(
        self,
        run_id: str,
        checkpoint_id: str,
        tasks: Sequence[tuple[str, Sequence[Any], int]],
        worker: str,
        stale: float,
        token: str | None = None,
    ) -> TaskClaims:
        """Claim the (task id, path, attempts) still open and held by nobody alive: their
        ids in order, and the server's epoch.

        ``token`` names the job execution that claims (see :meth:`heartbeat`).

        A task whose registered path differs from the message's is not claimed.

        A message of an earlier attempt than the task's recorded retries claims nothing.
        """
        ...

    def complete_tasks(
        self,
        run_id: str,
        checkpoint_id: str,
        outcomes: Mapping[str, Mapping[str, Any] | None],
        worker: str,
        events: Mapping[str, Sequence[EventRow]],
        epoch: str | None = None,
    ) -> tuple[int, int]:
        """Mark claimed tasks done with their error (or None), keep their events.

        Returns (how many this call completed, tasks of the step still open). The step's
        counter goes down in the same transaction, so exactly one completer sees zero.
        ``epoch``: the one :meth:`claim_tasks` read; as :meth:`finish_and_release_many`'s
        (the tasks' writes were committed asynchronously).
        """
        ...

    def release_claims(
        self, run_id: str, checkpoint_id: str, task_ids: Sequence[str], worker: str
    ) -> None:
        """Free ``worker``'s claims on open tasks (a job giving up, to be retried anywhere)."""
        ...

    def hold_for_retry(
        self, run_id: str, checkpoint_id: str, task_id: str, attempts: int, hold: float
    ) -> None:
        """Release a failed task's claim; nobody re-sends it for ``hold`` seconds."""
        ...

    # --- the sweeper ----------------------------------------------------------------------
    def orphaned_tasks(self, stale: float, unclaimed: float, limit: int) -> list[OrphanTask]:
        """Open tasks claimed by dead workers or unclaimed for ``unclaimed`` s; re-dispatched."""
        ...

    def stalled_runs(self, stale: float, idle: float, limit: int) -> list[str]:
        """Oldest runs of their threads that nothing advances; marked as nudged."""
        ...

    # --- events -----------------------------------------------------------------------------
    def add_events(self, run_id: str, chunks: Sequence[EventRow]) -> None: ...

    def events_after(self, run_id: str, after: int) -> list[Event]: ...
