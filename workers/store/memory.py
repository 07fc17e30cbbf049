"""The run store in memory: the Postgres store's semantics, for fast unit tests.

Every method does under one lock what the matching statement in
``workers/sql/queries.sql`` does in one transaction. Time comes from a clock the
test can move (:class:`ManualClock`), so heartbeats going stale and tasks waiting
for a worker are decided without sleeping. Values go through the serde, as in
Postgres, so nothing a caller holds aliases what is stored.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from graphruntime.checkpoint import JsonSerializer, SerializerProtocol
from graphruntime.errors import CheckpointError, InvalidResumeError
from workers.errors import RunNotFoundError, WorkerError
from workers.store._model import (
    TERMINAL,
    Claim,
    Event,
    EventRow,
    ExpiredWait,
    InboxEntry,
    InboxQuery,
    InboxRow,
    InboxUpdate,
    NewRun,
    OrphanTask,
    Overview,
    Released,
    Run,
    RunEnd,
    RunningTask,
    RunQuery,
    RunStatus,
    StepTask,
    TaskClaims,
    WaitClaim,
)
from workers.store._refusals import refused_as

__all__ = ("InMemoryRunStore", "ManualClock")


class ManualClock:
    """A clock tests move by hand (``advance``); starts at a fixed instant."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class _RunRow:
    run_id: str
    thread_id: str
    graph: str
    status: str
    kind: str
    payload: tuple[str, bytes]
    idempotency_key: str | None
    request_digest: str | None
    origin: dict[str, Any] | None
    resumes_run: str | None
    created_at: datetime
    updated_at: datetime
    seq: int
    stop: int | None = None
    result: tuple[str, bytes] | None = None
    error: dict[str, Any] | None = None


@dataclass
class _TaskRow:
    run_id: str
    checkpoint_id: str
    task_id: str
    thread_id: str
    path: tuple[Any, ...]
    dispatched_at: datetime
    status: str = "dispatched"
    worker: str | None = None
    claimed_at: datetime | None = None
    claim_token: str | None = None
    hold_until: datetime | None = None
    retry_attempts: int = 0
    resends: int = 1
    error: dict[str, Any] | None = None


@dataclass
class _Thread:
    graph: str
    lease_holder: str | None = None
    leased_at: datetime | None = None
    lease_token: str | None = None

    def lease(self, worker: str | None, at: datetime | None, token: str | None) -> None:
        self.lease_holder, self.leased_at, self.lease_token = worker, at, token


@dataclass
class _Wait:
    graph: str
    run_id: str
    checkpoint_id: str
    entry: InboxEntry
    created_at: datetime
    claimed_by: str | None = None
    claimed_until: datetime | None = None


@dataclass
class _State:
    runs: dict[str, _RunRow] = field(default_factory=dict)
    threads: dict[str, _Thread] = field(default_factory=dict)
    workers: dict[str, tuple[str, int, datetime, datetime]] = field(default_factory=dict)
    tasks: dict[tuple[str, str, str], _TaskRow] = field(default_factory=dict)
    open_tasks: dict[tuple[str, str], int] = field(default_factory=dict)
    events: list[tuple[int, str, tuple[str, ...], str, tuple[str, bytes]]] = field(
        default_factory=list
    )
    inbox: dict[tuple[str, str], _Wait] = field(default_factory=dict)


class InMemoryRunStore:
    """A :class:`~workers.store.RunStore` in memory (see the module docstring)."""

    def __init__(
        self,
        serde: SerializerProtocol | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.serde = serde or JsonSerializer()
        self.clock = clock or (lambda: datetime.now(UTC))
        self._lock = threading.RLock()
        self._state = _State()
        self._seq = itertools.count(1)

    # --- helpers -------------------------------------------------------------------------

    def _alive(self, worker: str | None, stale: float) -> bool:
        found = self._state.workers.get(worker) if worker is not None else None
        return found is not None and found[3] > self.clock() - timedelta(seconds=stale)

    def _load(self, typed: tuple[str, bytes] | None) -> Any:
        return None if typed is None else self.serde.loads_typed(typed)

    def _run(self, row: _RunRow) -> Run:
        payload: Any = {}
        payload_error = result_error = None
        try:
            payload = self._load(row.payload)
        except CheckpointError as exc:
            payload_error = str(exc)
        result = None
        try:
            result = self._load(row.result)
        except CheckpointError as exc:
            result_error = str(exc)
        return Run(
            run_id=row.run_id,
            thread_id=row.thread_id,
            graph=row.graph,
            status=row.status,
            kind=row.kind,
            payload=payload if isinstance(payload, dict) else {},
            stop=row.stop,
            result=result,
            error=dict(row.error) if row.error is not None else None,
            created_at=row.created_at,
            updated_at=row.updated_at,
            idempotency_key=row.idempotency_key,
            request_digest=row.request_digest,
            resumes_run=row.resumes_run,
            origin=dict(row.origin) if row.origin is not None else None,
            payload_error=payload_error,
            result_error=result_error,
        )

    def _thread_runs(self, thread_id: str) -> list[_RunRow]:
        return sorted(
            (r for r in self._state.runs.values() if r.thread_id == thread_id),
            key=lambda r: (r.created_at, r.seq),
        )

    def _next(self, thread_id: str) -> _RunRow | None:
        """The thread's next run: its oldest still to finish, a cancel before any other."""
        active = [r for r in self._thread_runs(thread_id) if r.status not in TERMINAL]
        return min(active, key=lambda r: r.kind != "cancel", default=None)

    # --- runs ----------------------------------------------------------------------------

    def create_run(self, new: NewRun) -> tuple[Run, bool]:
        payload = self.serde.dumps_typed(new.payload)
        with self._lock:
            state = self._state
            thread = state.threads.get(new.thread_id)
            if thread is None and new.kind not in ("resume", "cancel"):
                thread = state.threads[new.thread_id] = _Thread(new.graph)
            runs = self._thread_runs(new.thread_id)
            latest: str | None = None
            if runs:
                last = runs[-1]
                under_way = last.kind == "resume" and last.status not in TERMINAL
                latest = last.resumes_run if under_way else last.run_id
            resumes = latest if new.kind == "resume" else None
            same_key = next(
                (
                    r
                    for r in runs
                    if new.idempotency_key is not None and r.idempotency_key == new.idempotency_key
                ),
                None,
            )
            same_pause = next(
                (r for r in runs if resumes is not None and r.resumes_run == resumes), None
            )
            fits = thread is not None and thread.graph == new.graph
            open_waits = [i for t, i in state.inbox if t == new.thread_id]
            latest_status = runs[-1].status if runs else None
            if new.kind == "resume":
                answers = new.answers
                if answers is not None:
                    fits = fits and bool(answers) and set(answers) <= set(open_waits)
                else:
                    fits = fits and (
                        bool(open_waits) or latest_status in ("interrupted", "queued", "running")
                    )
            if fits and same_key is None and same_pause is None:
                now = self.clock()
                row = _RunRow(
                    run_id=new.run_id,
                    thread_id=new.thread_id,
                    graph=new.graph,
                    status="queued",
                    kind=new.kind,
                    payload=payload,
                    idempotency_key=new.idempotency_key,
                    request_digest=new.request_digest,
                    origin=dict(new.origin) if new.origin is not None else None,
                    resumes_run=resumes,
                    created_at=now,
                    updated_at=now,
                    seq=next(self._seq),
                )
                state.runs[row.run_id] = row
                return self._run(row), True
            why = {
                "thread_graph": thread.graph if thread is not None else None,
                "same_key_run": same_key.run_id if same_key else None,
                "same_key_digest": same_key.request_digest if same_key else None,
                "same_pause_run": same_pause.run_id if same_pause else None,
                "same_pause_status": same_pause.status if same_pause else None,
                "open_waits": open_waits,
                "latest_status": latest_status,
            }
        return self.get_run(refused_as(new, why)), False

    def get_run(self, run_id: str) -> Run:
        with self._lock:
            row = self._state.runs.get(run_id)
            if row is None:
                raise RunNotFoundError(f"No run {run_id}: check the id (graphrun runs lists them).")
            return self._run(row)

    def next_run(self, thread_id: str) -> Run | None:
        with self._lock:
            row = self._next(thread_id)
            return None if row is None else self._run(row)

    def active_runs(self, thread_id: str) -> list[str]:
        with self._lock:
            return [r.run_id for r in self._thread_runs(thread_id) if r.status not in TERMINAL]

    def set_running(self, run_id: str, stop: int) -> None:
        with self._lock:
            row = self._state.runs[run_id]
            if row.status not in TERMINAL:
                row.status, row.updated_at = "running", self.clock()
                row.stop = row.stop if row.stop is not None else stop

    def touch_run(self, run_id: str) -> None:
        with self._lock:
            self._state.runs[run_id].updated_at = self.clock()

    def finish_run(
        self,
        run_id: str,
        status: RunStatus,
        *,
        result: Any = None,
        error: Mapping[str, Any] | None = None,
        inbox: InboxUpdate | None = None,
    ) -> bool:
        typed = self.serde.dumps_typed(result) if result is not None else None
        with self._lock:
            row = self._state.runs[run_id]
            if row.status in TERMINAL:
                return False
            row.status, row.result, row.updated_at = status, typed, self.clock()
            row.error = dict(error) if error is not None else None
            if inbox is not None:
                self._replace_inbox(inbox, run_id)
            return True

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
        with self._lock:
            finished = self.finish_run(run_id, status, result=result, error=error, inbox=inbox)
            return Released(finished, self.release_thread(thread_id, worker))

    def finish_and_release_many(
        self,
        ends: Sequence[RunEnd],
        *,
        worker: str,
        free: Sequence[str] = (),
        requeue: Sequence[str] = (),
        epoch: str | None = None,
    ) -> list[Released]:
        out: list[Released] = []
        with self._lock:
            for run_id in requeue:
                row = self._state.runs[run_id]
                if row.status == "running":
                    row.status = "queued"
            for e in ends:
                try:
                    out.append(
                        self.finish_and_release(
                            e.run_id,
                            e.status,
                            thread_id=e.thread_id,
                            worker=worker,
                            result=e.result,
                            error=e.error,
                            inbox=e.inbox,
                        )
                    )
                except CheckpointError as exc:  # a result the serde refuses: the lease goes
                    out.append(Released(False, self.release_thread(e.thread_id, worker), exc))
            return out + [Released(False, self.release_thread(t, worker)) for t in free]

    def _replace_inbox(self, update: InboxUpdate, run_id: str | None) -> None:
        keep = {e.interrupt_id for e in update.entries}
        inbox = self._state.inbox
        for key in [k for k in inbox if k[0] == update.thread_id and k[1] not in keep]:
            del inbox[key]
        for entry in update.entries:
            key = (update.thread_id, entry.interrupt_id)
            old = inbox.get(key)
            inbox[key] = _Wait(
                update.graph,
                run_id or "",
                update.checkpoint_id,
                entry,
                old.created_at if old else self.clock(),
                old.claimed_by if old else None,  # a wait still pending keeps its claim
                old.claimed_until if old else None,
            )

    def replace_inbox(self, update: InboxUpdate, run_id: str | None) -> None:
        with self._lock:
            self._replace_inbox(update, run_id)

    def create_runs(
        self, news: Sequence[NewRun]
    ) -> list[tuple[Run | None, bool, Exception | None]]:
        out: list[tuple[Run | None, bool, Exception | None]] = []
        for new in news:
            try:
                run, created = self.create_run(new)
            except (WorkerError, InvalidResumeError) as exc:
                out.append((None, False, exc))
            else:
                out.append((run, created, None))
        return out

    def cancel_thread(
        self, thread_id: str, error: Mapping[str, Any], *, cancel_run: str, stale: float
    ) -> list[str]:
        with self._lock:
            cancelled = []
            made = self._state.runs[cancel_run].seq
            for row in self._thread_runs(thread_id):
                if row.status in TERMINAL or row.kind == "cancel" or row.seq > made:
                    continue
                row.status, row.error, row.updated_at = "cancelled", dict(error), self.clock()
                cancelled.append(row.run_id)
            self._close_unheld(cancelled, stale)
            for key in [k for k in self._state.inbox if k[0] == thread_id]:
                del self._state.inbox[key]
            return cancelled

    def running_cancelled_tasks(self, run_ids: Sequence[str], stale: float) -> list[RunningTask]:
        with self._lock:
            self._close_unheld(run_ids, stale)
            return [
                RunningTask(row.task_id, row.worker, tuple(row.path))
                for row in self._state.tasks.values()
                if row.run_id in run_ids and row.status == "dispatched" and row.worker is not None
            ]

    def _close_unheld(self, run_ids: Sequence[str], stale: float) -> None:
        """Close the runs' open tasks that no live worker holds."""
        for task in self._state.tasks.values():
            if (
                task.run_id in run_ids
                and task.status == "dispatched"
                and (task.worker is None or not self._alive(task.worker, stale))
            ):
                task.status = "done"

    def inbox(self, query: InboxQuery) -> list[InboxRow]:
        with self._lock:
            active = {r.thread_id for r in self._state.runs.values() if r.status not in TERMINAL}
            wanted = set(query.threads) if query.threads is not None else None
            cutoff = query.older_than
            if isinstance(cutoff, timedelta):
                cutoff = self.clock() - cutoff
            rows = []
            for (thread_id, interrupt_id), wait in self._state.inbox.items():
                key = (wait.created_at, thread_id, interrupt_id)
                value = json.loads(wait.entry.value)
                live = wait.claimed_until is not None and wait.claimed_until > self.clock()
                if query.graph is not None and wait.graph != query.graph:
                    continue
                if query.where is not None and not _contains(value, query.where):
                    continue
                if query.any_of and not any(_contains(value, w) for w in query.any_of):
                    continue
                if query.thread_id is not None and thread_id != query.thread_id:
                    continue
                if query.node is not None and wait.entry.node != query.node:
                    continue
                if cutoff is not None and wait.created_at >= cutoff:
                    continue
                if query.after is not None and key <= query.after:
                    continue
                if wanted is not None and (thread_id, interrupt_id) not in wanted:
                    continue
                rows.append(
                    (
                        key,
                        InboxRow(
                            graph=wait.graph,
                            thread_id=thread_id,
                            interrupt_id=interrupt_id,
                            node=wait.entry.node,
                            namespace=wait.entry.namespace,
                            value=value,
                            created_at=wait.created_at,
                            deadline=wait.entry.deadline,
                            run_id=wait.run_id,
                            checkpoint_id=wait.checkpoint_id,
                            resuming=thread_id in active,
                            response_schema=(
                                json.loads(wait.entry.response_schema)
                                if wait.entry.response_schema is not None
                                else None
                            ),
                            claimed_by=wait.claimed_by if live else None,
                            claimed_until=wait.claimed_until if live else None,
                        ),
                    )
                )
            rows.sort(key=lambda r: r[0])
            return [row for _, row in rows[: query.limit]]

    def claim_wait(
        self, thread_id: str, interrupt_id: str, actor: str, seconds: float, take_over: bool
    ) -> WaitClaim | None:
        with self._lock:
            wait = self._state.inbox.get((thread_id, interrupt_id))
            if wait is None:
                return None
            now = self.clock()
            free = wait.claimed_until is None or wait.claimed_until <= now
            if free or wait.claimed_by == actor or take_over:
                wait.claimed_by, wait.claimed_until = actor, now + timedelta(seconds=seconds)
                return WaitClaim(actor, wait.claimed_until, True)
            return WaitClaim(wait.claimed_by, wait.claimed_until, False)

    def release_wait(self, thread_id: str, interrupt_id: str, actor: str) -> bool:
        with self._lock:
            wait = self._state.inbox.get((thread_id, interrupt_id))
            if wait is None or wait.claimed_by != actor:
                return False
            wait.claimed_by = wait.claimed_until = None
            return True

    def expired_waits(self, limit: int) -> list[ExpiredWait]:
        with self._lock:
            now = self.clock()
            active = {r.thread_id for r in self._state.runs.values() if r.status not in TERMINAL}
            found = [
                ExpiredWait(wait.graph, thread_id, interrupt_id, wait.entry.default)
                for (thread_id, interrupt_id), wait in sorted(
                    self._state.inbox.items(), key=lambda kv: kv[1].entry.deadline or now
                )
                if wait.entry.deadline is not None
                and wait.entry.deadline < now
                and wait.entry.default is not None
                and thread_id not in active
            ]
            return found[:limit]

    def runs_by_key(self, graph: str, key: str) -> list[Run]:
        with self._lock:
            return [
                self._run(r)
                for r in self._state.runs.values()
                if r.graph == graph and r.idempotency_key == key
            ]

    def resume_history(self, thread_id: str, limit: int = 50) -> list[Run]:
        with self._lock:
            rows = [r for r in reversed(self._thread_runs(thread_id)) if r.kind == "resume"]
            return [self._run(r) for r in rows[:limit]]

    def list_runs(self, query: RunQuery) -> list[dict[str, Any]]:
        with self._lock:
            now = self.clock()
            rows = [
                r
                for r in self._state.runs.values()
                if (query.thread_id is None or r.thread_id == query.thread_id)
                and (query.graph is None or r.graph == query.graph)
                and (query.status is None or r.status == query.status)
                and (
                    query.newer_than is None
                    or r.created_at > now - timedelta(seconds=query.newer_than)
                )
            ]
            rows.sort(key=lambda r: (r.created_at, r.run_id), reverse=True)
            return [
                {
                    "run_id": r.run_id,
                    "thread_id": r.thread_id,
                    "graph": r.graph,
                    "status": r.status,
                    "kind": r.kind,
                    "created_at": r.created_at,
                    "updated_at": r.updated_at,
                    "error": r.error,
                    "origin": r.origin,
                    "step_tasks": self._step_progress(r.run_id) if r.status == "running" else None,
                }
                for r in rows[: query.limit]
            ]

    def _step_progress(self, run_id: str) -> dict[str, int] | None:
        """The tasks of the run's latest dispatched step, done and in all."""
        mine = [t for t in self._state.tasks.values() if t.run_id == run_id]
        if not mine:
            return None
        latest = max(t.checkpoint_id for t in mine)
        step = [t for t in mine if t.checkpoint_id == latest]
        return {"done": sum(t.status == "done" for t in step), "total": len(step)}

    def overview(self, stale: float) -> Overview:
        with self._lock:
            now = self.clock()
            runs = self._state.runs.values()
            return Overview(
                queued=sum(r.status == "queued" for r in runs),
                running=sum(r.status == "running" for r in runs),
                pending_interrupts=len(self._state.inbox),
                overdue=sum(
                    w.entry.deadline is not None and w.entry.deadline < now
                    for w in self._state.inbox.values()
                ),
                workers=sum(
                    1
                    for name, (_host, _pid, _started, beat) in self._state.workers.items()
                    if not name.startswith("client:") and beat > now - timedelta(seconds=stale)
                ),
            )

    def runs_of_thread(self, thread_id: str, limit: int = 20) -> list[dict[str, Any]]:
        with self._lock:
            rows = list(reversed(self._thread_runs(thread_id)))[:limit]
            return [
                {
                    "run_id": r.run_id,
                    "status": r.status,
                    "kind": r.kind,
                    "created_at": r.created_at,
                    "updated_at": r.updated_at,
                    "error": r.error,
                }
                for r in rows
            ]

    # --- thread leases and heartbeats ----------------------------------------------------

    def bind_thread(self, thread_id: str, graph: str) -> str:
        with self._lock:
            return self._state.threads.setdefault(thread_id, _Thread(graph)).graph

    def acquire_thread(
        self, thread_id: str, worker: str, stale: float, token: str | None = None
    ) -> bool:
        with self._lock:
            thread = self._state.threads.get(thread_id)
            if thread is None:
                return False
            holder = thread.lease_holder
            if holder is None or holder == worker or not self._alive(holder, stale):
                thread.lease(worker, self.clock(), token)
                return True
            return False

    def release_thread(self, thread_id: str, worker: str) -> str | None:
        with self._lock:
            thread = self._state.threads.get(thread_id)
            if thread is not None and thread.lease_holder == worker:
                thread.lease(None, None, None)
            row = self._next(thread_id)
            return None if row is None else row.run_id

    def claim_runs(
        self, run_ids: Sequence[str], worker: str, stale: float, token: str | None = None
    ) -> list[Claim]:
        claims = []
        for run_id in run_ids:
            try:
                claims.append(self.claim_run(run_id, worker, stale, token))
            except RunNotFoundError:
                claims.append(Claim(ended=True, leased=False, run=None, found=False))
        return claims

    def claim_run(self, run_id: str, worker: str, stale: float, token: str | None = None) -> Claim:
        with self._lock:
            target = self._state.runs.get(run_id)
            if target is None:
                raise RunNotFoundError(f"No run {run_id}: check the id (graphrun runs lists them).")
            if target.status in TERMINAL:
                return Claim(ended=True, leased=False, run=None)
            thread = self._state.threads.get(target.thread_id)
            holder = thread.lease_holder if thread is not None else None
            if thread is None or not (
                holder is None or holder == worker or not self._alive(holder, stale)
            ):
                return Claim(ended=False, leased=False, run=None)
            thread.lease(worker, self.clock(), token)
            row = self._next(target.thread_id)
            if row is None:
                return Claim(ended=False, leased=True, run=None)
            before = self._run(row)
            if row.status == "queued":
                row.status, row.updated_at = "running", self.clock()
            return Claim(ended=False, leased=True, run=before)

    def heartbeat(
        self,
        worker: str,
        hostname: str,
        pid: int,
        *,
        keep: str | None = None,
        grace: float | None = None,
    ) -> list[str]:
        with self._lock:
            now = self.clock()
            freed: list[str] = []
            started = self._state.workers.get(worker, (hostname, pid, now, now))[2]
            self._state.workers[worker] = (hostname, pid, started, now)
            if grace is None:
                return freed
            for thread_id, thread in self._state.threads.items():
                if (
                    thread.lease_holder == worker
                    and thread.lease_token != keep
                    and thread.leased_at is not None
                    and thread.leased_at < now - timedelta(seconds=grace)
                ):
                    thread.lease(None, None, None)
                    freed.append(thread_id)
            for row in self._state.tasks.values():
                if (
                    row.worker == worker
                    and row.status == "dispatched"
                    and row.claim_token != keep
                    and row.claimed_at is not None
                    and row.claimed_at < now - timedelta(seconds=grace)
                ):
                    row.worker = row.claimed_at = row.claim_token = None
            return freed

    def remove_worker(self, worker: str) -> None:
        with self._lock:
            self._state.workers.pop(worker, None)

    def live_workers(self, stale: float) -> list[dict[str, Any]]:
        with self._lock:
            return [
                {"worker": w, "hostname": h, "pid": p, "started_at": s, "heartbeat_at": b}
                for w, (h, p, s, b) in sorted(self._state.workers.items())
                if self._alive(w, stale)
            ]

    # --- the step barrier ----------------------------------------------------------------

    def register_tasks(
        self,
        run_id: str,
        thread_id: str,
        checkpoint_id: str,
        tasks: Sequence[tuple[str, Sequence[Any]]],
        epoch: str | None = None,  # nothing here is lost in a crash: no epoch to check
    ) -> list[str]:
        with self._lock:
            new: list[str] = []
            for task_id, path in tasks:
                key = (run_id, checkpoint_id, task_id)
                if key in self._state.tasks:
                    continue
                self._state.tasks[key] = _TaskRow(
                    run_id, checkpoint_id, task_id, thread_id, tuple(path), self.clock()
                )
                new.append(task_id)
            step = (run_id, checkpoint_id)
            self._state.open_tasks[step] = self._state.open_tasks.get(step, 0) + len(new)
            return new

    def step_tasks(self, run_id: str, checkpoint_id: str) -> dict[str, StepTask]:
        with self._lock:
            return {
                t.task_id: StepTask(t.task_id, t.status, t.error)  # type: ignore[arg-type]
                for t in self._state.tasks.values()
                if t.run_id == run_id and t.checkpoint_id == checkpoint_id
            }

    def claim_tasks(
        self,
        run_id: str,
        checkpoint_id: str,
        tasks: Sequence[tuple[str, Sequence[Any], int]],
        worker: str,
        stale: float,
        token: str | None = None,
    ) -> TaskClaims:
        claimed: list[str] = []
        with self._lock:
            for task_id, path, attempts in tasks:
                row = self._state.tasks.get((run_id, checkpoint_id, task_id))
                if row is None or row.status == "done" or row.retry_attempts > attempts:
                    continue
                if list(row.path) != list(path):
                    continue
                if row.worker not in (None, worker) and self._alive(row.worker, stale):
                    continue
                row.worker, row.claimed_at, row.claim_token = worker, self.clock(), token
                claimed.append(task_id)
        return TaskClaims(claimed, None)

    def complete_tasks(
        self,
        run_id: str,
        checkpoint_id: str,
        outcomes: Mapping[str, Mapping[str, Any] | None],
        worker: str,
        events: Mapping[str, Sequence[EventRow]],
        epoch: str | None = None,
    ) -> tuple[int, int]:
        with self._lock:
            done = []
            for task_id, error in outcomes.items():
                row = self._state.tasks.get((run_id, checkpoint_id, task_id))
                if row is None or row.status == "done" or row.worker != worker:
                    continue
                row.status, row.error = "done", dict(error) if error is not None else None
                done.append(task_id)
            if not done:
                return 0, -1
            step = (run_id, checkpoint_id)
            self._state.open_tasks[step] = self._state.open_tasks.get(step, 0) - len(done)
            self.add_events(run_id, [e for t in done for e in events.get(t, ())])
            return len(done), self._state.open_tasks[step]

    def release_claims(
        self, run_id: str, checkpoint_id: str, task_ids: Sequence[str], worker: str
    ) -> None:
        with self._lock:
            for task_id in task_ids:
                row = self._state.tasks.get((run_id, checkpoint_id, task_id))
                if row is not None and row.worker == worker and row.status != "done":
                    row.worker = row.claimed_at = row.claim_token = None

    def hold_for_retry(
        self, run_id: str, checkpoint_id: str, task_id: str, attempts: int, hold: float
    ) -> None:
        with self._lock:
            row = self._state.tasks.get((run_id, checkpoint_id, task_id))
            if row is not None and row.status != "done":
                row.retry_attempts = attempts
                row.hold_until = self.clock() + timedelta(seconds=hold)
                row.worker = row.claimed_at = row.claim_token = None

    # --- the sweeper ---------------------------------------------------------------------

    def orphaned_tasks(self, stale: float, unclaimed: float, limit: int) -> list[OrphanTask]:
        with self._lock:
            now = self.clock()
            found: list[OrphanTask] = []
            rows = sorted(self._state.tasks.values(), key=lambda t: t.dispatched_at)
            for row in rows:
                if len(found) >= limit:
                    break
                run = self._state.runs.get(row.run_id)
                if row.status != "dispatched" or run is None or run.status in TERMINAL:
                    continue
                if row.hold_until is not None and row.hold_until >= now:
                    continue
                if row.worker is None:
                    orphaned = row.dispatched_at < now - timedelta(seconds=unclaimed)
                else:
                    orphaned = not self._alive(row.worker, stale)
                if not orphaned:
                    continue
                row.dispatched_at, row.worker, row.claimed_at, row.claim_token = (
                    now,
                    None,
                    None,
                    None,
                )
                row.resends += 1
                found.append(
                    OrphanTask(
                        run_id=row.run_id,
                        thread_id=row.thread_id,
                        checkpoint_id=row.checkpoint_id,
                        task_id=row.task_id,
                        path=row.path,
                        retry_attempts=row.retry_attempts,
                        resends=row.resends,
                    )
                )
            return found

    def stalled_runs(self, stale: float, idle: float, limit: int) -> list[str]:
        with self._lock:
            now = self.clock()
            found: list[str] = []
            nexts = (self._next(t) for t in {r.thread_id for r in self._state.runs.values()})
            oldest = [row for row in nexts if row is not None]
            for row in sorted(oldest, key=lambda r: r.updated_at):
                if len(found) >= limit:
                    break
                if row.updated_at >= now - timedelta(seconds=idle):
                    continue
                if any(
                    t.run_id == row.run_id and t.status == "dispatched"
                    for t in self._state.tasks.values()
                ):
                    continue
                thread = self._state.threads.get(row.thread_id)
                holder = thread.lease_holder if thread is not None else None
                if holder is not None and self._alive(holder, stale):
                    continue
                row.updated_at = now
                found.append(row.run_id)
            return found

    # --- events --------------------------------------------------------------------------

    def add_events(self, run_id: str, chunks: Sequence[EventRow]) -> None:
        typed = [(ns, mode, self.serde.dumps_typed(payload)) for ns, mode, payload in chunks]
        with self._lock:
            for ns, mode, payload in typed:
                self._state.events.append((next(self._seq), run_id, tuple(ns), mode, payload))

    def events_after(self, run_id: str, after: int) -> list[Event]:
        with self._lock:
            rows = [e for e in self._state.events if e[1] == run_id and e[0] > after]
        return [Event(seq, ns, mode, self._load(payload)) for seq, _, ns, mode, payload in rows]

    # --- test helpers --------------------------------------------------------------------

    def task_row(self, run_id: str, checkpoint_id: str, task_id: str) -> _TaskRow:
        """A copy of a barrier row, for assertions."""
        with self._lock:
            return replace(self._state.tasks[(run_id, checkpoint_id, task_id)])

    def thread_lease(self, thread_id: str) -> str | None:
        with self._lock:
            thread = self._state.threads.get(thread_id)
            return thread.lease_holder if thread is not None else None


def _contains(value: Any, where: Any) -> bool:
    """JSON containment, as Postgres' ``@>`` decides it."""
    if isinstance(where, dict):
        return isinstance(value, dict) and all(
            k in value and _contains(value[k], v) for k, v in where.items()
        )
    if isinstance(where, list):
        return isinstance(value, list) and all(
            any(_contains(item, want) for item in value) for want in where
        )
    return bool(value == where and type(value) is type(where))
