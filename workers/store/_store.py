"""The run store's rules, written once over the named queries of ``workers/sql/queries.sql``.

:class:`RunStore` decides what to run and what the rows mean: how a run is queued and
why it was refused, a coordinator's claim, a run's end with its thread's inbox and
lease, the barrier's counts. A :class:`Connector` runs the named queries: on Postgres
(``workers.store.postgres``), or their in-memory mirror, one method per query
(``workers.store.memory``). Every method is one statement, or one transaction, and
holds no connection while it waits for anything else, so one store can be shared by
any number of threads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import Any, Protocol

from graphruntime.checkpoint import JsonSerializer, SerializerProtocol
from graphruntime.errors import CheckpointError, InvalidResumeError
from workers.errors import RunNotFoundError, WorkerError
from workers.store._model import (
    Claim,
    Event,
    EventRow,
    InboxQuery,
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
    Wait,
)
from workers.store._payload import RunPayload
from workers.store._refusals import refused_as

__all__ = ("Connector", "Row", "RunStore", "Session")

Row = dict[str, Any]
Params = Mapping[str, Any]


class Session(Protocol):
    """One connection (or transaction) of a :class:`Connector`: named queries on it."""

    def all(self, name: str, params: Params | None = None) -> list[Row]:
        """The query's rows (none for a statement that returns none)."""
        ...

    def many(
        self, name: str, params: Sequence[Params], *, returning: bool = True
    ) -> list[list[Row]]:
        """The query once per params, pipelined; each one's rows (``returning``)."""
        ...


class Connector(Protocol):
    """Runs the named queries: Postgres, or their in-memory mirror."""

    def session(
        self, operation: str, *, transaction: bool = False
    ) -> AbstractContextManager[Session]:
        """A connection for ``operation`` (named in errors), in one transaction if asked."""
        ...

    def batch(self, operation: str, statements: Sequence[tuple[str, Params]]) -> list[list[Row]]:
        """The statements in one transaction, sent in one round trip; each one's rows."""
        ...


def _one(rows: list[Row]) -> Row | None:
    return rows[0] if rows else None


class RunStore:
    """Runs, the step barrier, thread leases, heartbeats and stream events."""

    def __init__(self, db: Connector, serde: SerializerProtocol | None = None) -> None:
        self.db = db
        self.serde = serde or JsonSerializer()

    def _all(self, name: str, params: Params | None = None) -> list[Row]:
        """One statement on a connection of its own."""
        with self.db.session(name) as s:
            return s.all(name, params)

    # --- rows ----------------------------------------------------------------------------

    def _load(self, type_: str | None, data: bytes | None) -> Any:
        return (
            None if type_ is None or data is None else self.serde.loads_typed((type_, bytes(data)))
        )

    def _run(self, row: Row, payload: RunPayload | None = None) -> Run:
        """The run of ``row``; ``payload``: its payload if the caller has it (not decoded)."""
        payload_error = result_error = None
        if payload is None:
            try:
                payload = RunPayload.from_stored(self._load(row["payload_type"], row["payload"]))
            except CheckpointError as exc:
                payload, payload_error = RunPayload(), str(exc)
        result = None
        try:
            result = self._load(row["result_type"], row["result"])
        except CheckpointError as exc:
            result_error = str(exc)
        return Run(
            run_id=str(row["run_id"]),
            thread_id=row["thread_id"],
            graph=row["graph"],
            status=row["status"],
            kind=row["kind"],
            payload=payload,
            stop=row["stop"],
            result=result,
            error=row["error"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            idempotency_key=row["idempotency_key"],
            request_digest=row["request_digest"],
            resumes_run=str(row["resumes_run"]) if row["resumes_run"] else None,
            origin=row["origin"],
            payload_error=payload_error,
            result_error=result_error,
        )

    @staticmethod
    def _wait(row: Row) -> Wait:
        return Wait(
            graph=row["graph"],
            thread_id=row["thread_id"],
            interrupt_id=row["interrupt_id"],
            node=row["node"],
            namespace=row["namespace"],
            value=row["value"],
            run_id=str(row["run_id"]),
            checkpoint_id=row["checkpoint_id"],
            deadline=row["deadline"],
            default=(
                (row["default_type"], bytes(row["default_value"]))
                if row["default_type"] is not None
                else None
            ),
            created_at=row["created_at"],
            resuming=row["resuming"],
        )

    # --- runs ----------------------------------------------------------------------------

    def _new_run_params(self, new: NewRun) -> Row:
        payload_type, payload = self.serde.dumps_typed(new.payload.stored())
        return {
            "run_id": new.run_id,
            "thread_id": new.thread_id,
            "graph": new.graph,
            "kind": new.kind,
            "payload_type": payload_type,
            "payload": payload,
            "idempotency_key": new.idempotency_key,
            "request_digest": new.request_digest,
            "origin": json.dumps(new.origin) if new.origin is not None else None,
            "answers": new.answers,
        }

    def create_run(self, new: NewRun) -> tuple[Run, bool]:
        """Queue a run; returns (run, created).

        The same idempotency key on the thread returns the existing run (created
        False), unless its request differs: :class:`~workers.errors.ResumeConflictError`.
        A thread first run under one graph refuses others
        (:class:`~workers.errors.GraphMismatchError`); a second resume of the same
        pause raises :class:`~workers.errors.ResumeConflictError`.
        """
        params = self._new_run_params(new)
        with self.db.session("create_run") as s:
            row = _one(s.all("create_run", params))
            why = None if row is not None else _one(s.all("explain_refused_run", params))
        if row is not None:
            return self._run(row, new.payload), True
        assert why is not None
        return self.get_run(refused_as(new, why)), False

    def create_runs(
        self, news: Sequence[NewRun]
    ) -> list[tuple[Run | None, bool, Exception | None]]:
        """:meth:`create_run` for many runs in one transaction and one round trip; per run
        (run, created, error). Refusals are explained one by one."""
        if not news:
            return []
        # one transaction: the batch pays one durable commit, not one per run
        with self.db.session("create_runs", transaction=True) as s:
            rows = s.many("create_run", [self._new_run_params(new) for new in news])
        out: list[tuple[Run | None, bool, Exception | None]] = []
        for new, found in zip(news, rows, strict=True):
            if found:  # its payload is the one just stored
                out.append((self._run(found[0], new.payload), True, None))
                continue
            try:
                run, created = self.create_run(new)
            except (WorkerError, InvalidResumeError) as exc:
                out.append((None, False, exc))
            else:
                out.append((run, created, None))
        return out

    def get_run(self, run_id: str) -> Run:
        """The run; :class:`~workers.errors.RunNotFoundError` if there is none."""
        row = _one(self._all("get_run", {"run_id": run_id}))
        if row is None:
            raise RunNotFoundError(f"No run {run_id}: check the id (graphrun runs lists them).")
        return self._run(row)

    def next_run(self, thread_id: str) -> Run | None:
        """The thread's next run: its oldest still to finish, a cancel before any other."""
        row = _one(self._all("next_run", {"thread_id": thread_id}))
        return None if row is None else self._run(row)

    def active_runs(self, thread_id: str) -> list[str]:
        rows = self._all("active_runs_of_thread", {"thread_id": thread_id})
        return [str(r["run_id"]) for r in rows]

    def set_running(self, run_id: str, stop: int) -> None:
        """Mark the run started and record the last step it may take (kept if recorded):
        what its task jobs and later coordinator jobs re-open it with."""
        self._all("set_running", {"run_id": run_id, "stop": stop})

    def touch_run(self, run_id: str) -> None:
        self._all("touch_run", {"run_id": run_id})

    def _finish_params(
        self,
        run_id: str | None,
        status: RunStatus | None,
        result: Any = None,
        error: Mapping[str, Any] | None = None,
        inbox: Sequence[Wait] | None = None,
        thread_id: str | None = None,
    ) -> Row:
        """The finish_run statement's parameters: the run's end, and the inbox rows of
        its thread as parallel arrays (all NULL: no row, every wait goes)."""
        result_type, result_bytes = (
            self.serde.dumps_typed(result) if result is not None else (None, None)
        )
        waits = inbox or ()
        arrays: dict[str, list[Any] | None] = {
            "ids": [w.interrupt_id for w in waits],
            "graphs": [w.graph for w in waits],
            "run_ids": [w.run_id for w in waits],
            "checkpoint_ids": [w.checkpoint_id for w in waits],
            "nodes": [w.node for w in waits],
            "namespaces": [w.namespace for w in waits],
            "values": [json.dumps(w.value) for w in waits],
            "deadlines": [w.deadline for w in waits],
            "default_types": [w.default[0] if w.default else None for w in waits],
            "default_values": [w.default[1] if w.default else None for w in waits],
        }
        if not waits:  # NULL arrays: no array dumps
            arrays = dict.fromkeys(arrays)
        return {
            "run_id": run_id,
            "status": status,
            "result_type": result_type,
            "result": result_bytes,
            "error": json.dumps(dict(error)) if error is not None else None,
            "set_inbox": inbox is not None,
            "thread_id": thread_id,
            **arrays,
        }

    def finish_run(
        self,
        run_id: str,
        status: RunStatus,
        *,
        result: Any = None,
        error: Mapping[str, Any] | None = None,
        inbox: Sequence[Wait] | None = None,
    ) -> bool:
        """End a queued or running run; False if it had already ended.

        ``inbox``: what the thread waits on now; its rows replace the thread's, in the
        same transaction (and only if this call ended the run).
        """
        params = self._finish_params(run_id, status, result, error, inbox)
        return bool(self._all("finish_run", params))

    def replace_inbox(self, thread_id: str, waits: Sequence[Wait] = ()) -> None:
        """Set the thread's inbox rows (after an edit of its state)."""
        self._all("finish_run", self._finish_params(None, None, inbox=waits, thread_id=thread_id))

    def finish_and_release(
        self,
        run_id: str,
        status: RunStatus,
        *,
        thread_id: str,
        worker: str,
        result: Any = None,
        error: Mapping[str, Any] | None = None,
        inbox: Sequence[Wait] | None = None,
    ) -> Released:
        """:meth:`finish_run`, then :meth:`release_thread`, in one transaction."""
        end = RunEnd(run_id, thread_id, status, result, error, inbox)
        return self.finish_and_release_many([end], worker=worker)[0]

    def finish_and_release_many(
        self,
        ends: Sequence[RunEnd],
        *,
        worker: str,
        free: Sequence[str] = (),
        requeue: Sequence[str] = (),
    ) -> list[Released]:
        """:meth:`finish_and_release` for runs of distinct threads, and :meth:`release_thread`
        for the threads ``free`` (no run of theirs ended), all in one transaction in one
        round trip: one durable commit for every run it ends, also when it ends none.
        ``requeue``: runs of the freed threads that a claim marked running and nothing
        advanced, queued again.

        One :class:`Released` per end, then per freed thread, in order. An end whose
        result cannot be stored only frees its lease (its ``Released`` says why); the
        others are not held back by it. The threads' next runs are read by a statement
        of its own after the lease rows are locked (see release_leases in queries.sql).
        """
        if not ends and not free:
            return []
        statements: list[tuple[str, Params]] = []
        if requeue:
            statements.append(("requeue_runs", {"run_ids": list(requeue)}))
        heads: list[int | None] = []  # per end, the index of its finish_run statement
        refusals: list[Exception | None] = []
        for end in ends:
            try:
                params = self._finish_params(
                    end.run_id, end.status, end.result, end.error, end.inbox
                )
            except CheckpointError as exc:  # a result the serde refuses: the lease still goes
                heads.append(None)
                refusals.append(exc)
            else:
                heads.append(len(statements))
                refusals.append(None)
                statements.append(("finish_run", params))
        threads = [end.thread_id for end in ends] + list(free)
        leases = {"threads": threads, "worker": worker}
        statements += [("release_leases", leases), ("next_runs_of_threads", leases)]
        results = self.db.batch("finish_and_release", statements)
        next_of = {row["thread_id"]: str(row["run_id"]) for row in results[-1]}
        heads += [None] * len(free)
        refusals += [None] * len(free)
        return [
            Released(head is not None and bool(results[head]), next_of.get(thread), refused)
            for head, thread, refused in zip(heads, threads, refusals, strict=True)
        ]

    def cancel_thread(
        self, thread_id: str, error: Mapping[str, Any], *, cancel_run: str, stale: float
    ) -> list[str]:
        """Under the thread's lease, for its cancel run ``cancel_run``: end the thread's
        other queued and running runs as cancelled, close their open tasks that no live
        worker holds, and clear its inbox, in one transaction; returns the runs cancelled."""
        params = {
            "thread_id": thread_id,
            "error": json.dumps(dict(error)),
            "cancel_run": cancel_run,
            "stale": stale,
        }
        with self.db.session("cancel_thread", transaction=True) as s:
            rows = s.all("cancel_thread", params)
        return [str(r["run_id"]) for r in rows]

    def running_cancelled_tasks(self, run_ids: Sequence[str], stale: float) -> list[RunningTask]:
        """The tasks of cancelled runs that live workers still run; closes the others."""
        rows = self._all("running_cancelled_tasks", {"run_ids": list(run_ids), "stale": stale})
        return [RunningTask(r["task_id"], r["worker"], tuple(r["task_path"])) for r in rows]

    def inbox(self, query: InboxQuery) -> list[Wait]:
        """A page of pending interrupts, oldest first."""
        after, threads, age = query.after, query.threads, query.older_than
        params = {
            "graph": query.graph,
            "where": json.dumps(query.where) if query.where is not None else None,
            "node": query.node,
            "older_than": None if isinstance(age, timedelta) else age,
            "age": age.total_seconds() if isinstance(age, timedelta) else None,
            "after_at": after[0] if after else None,
            "after_thread": after[1] if after else None,
            "after_id": after[2] if after else None,
            "thread_ids": [t for t, _ in threads] if threads is not None else None,
            "interrupt_ids": [i for _, i in threads] if threads is not None else None,
            "limit": query.limit,
        }
        return [self._wait(r) for r in self._all("inbox_page", params)]

    def expired_waits(self, limit: int) -> list[Wait]:
        """Pending interrupts past their deadline (with a default) whose thread has no run
        under way."""
        return [self._wait(r) for r in self._all("expired_waits", {"limit": limit})]

    def runs_by_key(self, graph: str, key: str) -> list[Run]:
        """Every run of the graph created under this idempotency key (any thread)."""
        return [self._run(r) for r in self._all("runs_by_key", {"graph": graph, "key": key})]

    def resume_history(self, thread_id: str, limit: int = 50) -> list[Run]:
        """The thread's resume runs, newest first (who, when, with what, by which route)."""
        rows = self._all("resume_history", {"thread_id": thread_id, "limit": limit})
        return [self._run(r) for r in rows]

    def runs_of_thread(self, thread_id: str, limit: int = 20) -> list[dict[str, Any]]:
        """The thread's runs, newest first: run_id, status, kind, created_at, updated_at,
        error."""
        return self._all("runs_of_thread", {"thread_id": thread_id, "limit": limit})

    def list_runs(self, query: RunQuery) -> list[dict[str, Any]]:
        """Runs matching ``query``, newest first, as rows (run_id, thread_id, graph, status,
        kind, created_at, updated_at, error, origin, step_tasks: a running run's latest
        dispatched step as ``{"done": n, "total": m}``, else None)."""
        params = {
            "thread_id": query.thread_id,
            "graph": query.graph,
            "status": query.status,
            "age": query.newer_than,
            "limit": query.limit,
        }
        rows = self._all("list_runs", params)
        for row in rows:
            row["run_id"] = str(row["run_id"])
            done, total = row.pop("tasks_done"), row.pop("tasks_total")
            row["step_tasks"] = {"done": done, "total": total} if total else None
        return rows

    def overview(self, stale: float) -> Overview:
        row = self._all("overview", {"stale": stale})[0]
        return Overview(**{k: int(v) for k, v in row.items()})

    # --- thread leases and worker heartbeats --------------------------------------------

    def bind_thread(self, thread_id: str, graph: str) -> str:
        """The graph the thread belongs to; a new thread is bound to ``graph`` now."""
        return str(self._all("bind_thread", {"thread_id": thread_id, "graph": graph})[0]["graph"])

    def acquire_thread(
        self, thread_id: str, worker: str, stale: float, token: str | None = None
    ) -> bool:
        """Lease the thread to ``worker``'s job ``token`` if free, already the worker's,
        or held by a dead worker."""
        params = {"thread_id": thread_id, "worker": worker, "stale": stale, "token": token}
        return bool(self._all("acquire_thread", params))

    def release_thread(self, thread_id: str, worker: str) -> str | None:
        """Free the lease; the thread's oldest run still to finish, if any."""
        return self.finish_and_release_many([], worker=worker, free=[thread_id])[0].following

    def claim_run(self, run_id: str, worker: str, stale: float, token: str | None = None) -> Claim:
        """Start a coordinator job for ``run_id`` in one statement (see :class:`Claim`);
        ``token``: the job's, kept with the thread's lease (see :meth:`heartbeat`).

        Raises :class:`~workers.errors.RunNotFoundError` for an unknown run.
        """
        params = {"run_id": run_id, "worker": worker, "stale": stale, "token": token}
        row = _one(self._all("claim_run", params))
        if row is None:
            raise RunNotFoundError(f"No run {run_id}: check the id (graphrun runs lists them).")
        return self._claim(row)

    def claim_runs(
        self, run_ids: Sequence[str], worker: str, stale: float, token: str | None = None
    ) -> list[Claim]:
        """:meth:`claim_run` per run, in order, pipelined: one round trip and one implicit
        transaction, committed without waiting for the WAL flush (claims are soft state);
        an unknown run's claim is ended and not ``found``. Two jobs claiming the same
        threads in other orders may deadlock: Postgres aborts one, a transient error its
        job retries."""
        if not run_ids:
            return []
        params = [{"run_id": r, "worker": worker, "stale": stale, "token": token} for r in run_ids]
        with self.db.session("claim_runs") as s:
            rows = s.many("claim_run", params)
        return [self._claim(_one(found)) for found in rows]

    def _claim(self, row: Row | None) -> Claim:
        if row is None:  # no such run (a claim of a single run raises instead)
            return Claim(ended=True, leased=False, run=None, found=False)
        ended = row["target_status"] not in ("queued", "running")
        run = self._run(row) if row["run_id"] is not None else None
        return Claim(ended=ended, leased=bool(row["leased"]), run=run)

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
        params = {"worker": worker, "hostname": hostname, "pid": pid}
        if grace is None:
            self._all("beat", params)
            return []
        rows = self._all("heartbeat", {**params, "keep": keep, "grace": grace})
        return [row["thread_id"] for row in rows]

    def remove_worker(self, worker: str) -> None:
        self._all("remove_worker", {"worker": worker})

    def live_workers(self, stale: float) -> list[dict[str, Any]]:
        """Worker processes (and clients holding a lease) with a fresh heartbeat: worker,
        hostname, pid, started_at, heartbeat_at."""
        return self._all("live_workers", {"stale": stale})

    # --- the step barrier ---------------------------------------------------------------

    def register_tasks(
        self,
        run_id: str,
        thread_id: str,
        checkpoint_id: str,
        tasks: Sequence[tuple[str, Sequence[Any]]],
    ) -> list[str]:
        """Open the barrier rows of a step's (task id, path); returns the ids new here."""
        params = {
            "run_id": run_id,
            "checkpoint_id": checkpoint_id,
            "task_ids": [tid for tid, _ in tasks],
            "paths": [json.dumps(list(path)) for _, path in tasks],
            "thread_id": thread_id,
        }
        return [r["task_id"] for r in self._all("register_tasks", params)]

    def step_tasks(self, run_id: str, checkpoint_id: str) -> dict[str, StepTask]:
        rows = self._all("step_tasks", {"run_id": run_id, "checkpoint_id": checkpoint_id})
        return {r["task_id"]: StepTask(r["task_id"], r["status"], r["error"]) for r in rows}

    def claim_tasks(
        self,
        run_id: str,
        checkpoint_id: str,
        tasks: Sequence[tuple[str, Sequence[Any], int]],
        worker: str,
        stale: float,
        token: str | None = None,
    ) -> list[str]:
        """Claim the (task id, path, attempts) still open and held by nobody alive; ids in
        order. ``token`` names the job execution that claims (see :meth:`heartbeat`).

        A task whose registered path differs from the message's is not claimed, nor is
        one whose recorded retries are past the message's attempt.
        """
        base = {"run_id": run_id, "checkpoint_id": checkpoint_id, "worker": worker}
        rows = [
            {
                **base,
                "token": token,
                "stale": stale,
                "task_id": t,
                "path": json.dumps(list(p)),
                "attempts": a,
            }
            for t, p, a in tasks
        ]
        with self.db.session("claim_tasks", transaction=True) as s:
            s.all("async_commit")
            claimed = {r["task_id"] for found in s.many("claim_task", rows) for r in found}
        return [t for t, _, _ in tasks if t in claimed]

    def complete_tasks(
        self,
        run_id: str,
        checkpoint_id: str,
        outcomes: Mapping[str, Mapping[str, Any] | None],
        worker: str,
        events: Mapping[str, Sequence[EventRow]],
    ) -> tuple[int, int]:
        """Mark claimed tasks done with their error (or None), keep their events.

        Returns (how many this call completed, tasks of the step still open). The step's
        counter goes down in the same transaction, so exactly one completer sees zero.
        """
        base = {"run_id": run_id, "checkpoint_id": checkpoint_id}
        rows = [
            {
                **base,
                "task_id": tid,
                "worker": worker,
                "error": json.dumps(dict(e)) if e is not None else None,
            }
            for tid, e in outcomes.items()
        ]
        with self.db.session("complete_tasks", transaction=True) as s:
            done = {r["task_id"] for found in s.many("complete_task", rows) for r in found}
            if not done:
                return 0, -1  # other deliveries completed them: their events are the ones kept
            row = _one(s.all("count_down_step", {**base, "done": len(done)}))
            kept = [e for t in outcomes if t in done for e in events.get(t, ())]
            if kept:
                s.many("add_event", self._event_rows(run_id, kept), returning=False)
        return len(done), int(row["open_tasks"]) if row else 0

    def release_claims(
        self, run_id: str, checkpoint_id: str, task_ids: Sequence[str], worker: str
    ) -> None:
        """Free ``worker``'s claims on open tasks (a job giving up, to be retried anywhere)."""
        params = {
            "run_id": run_id,
            "checkpoint_id": checkpoint_id,
            "task_ids": list(task_ids),
            "worker": worker,
        }
        self._all("release_claims", params)

    def hold_for_retry(
        self, run_id: str, checkpoint_id: str, task_id: str, attempts: int, hold: float
    ) -> None:
        """Release a failed task's claim; nobody re-sends it for ``hold`` seconds."""
        params = {
            "run_id": run_id,
            "checkpoint_id": checkpoint_id,
            "task_id": task_id,
            "attempts": attempts,
            "hold": hold,
        }
        self._all("hold_for_retry", params)

    # --- the sweeper ---------------------------------------------------------------------

    def orphaned_tasks(self, stale: float, unclaimed: float, limit: int) -> list[OrphanTask]:
        """Open tasks claimed by dead workers or unclaimed for ``unclaimed`` s; re-dispatched."""
        rows = self._all("orphaned_tasks", {"stale": stale, "unclaimed": unclaimed, "limit": limit})
        return [
            OrphanTask(
                run_id=str(r["run_id"]),
                thread_id=r["thread_id"],
                checkpoint_id=r["checkpoint_id"],
                task_id=r["task_id"],
                path=tuple(r["task_path"]),
                retry_attempts=r["retry_attempts"],
                resends=r["attempts"],
            )
            for r in rows
            if r["task_path"] is not None
        ]

    def stalled_runs(self, stale: float, idle: float, limit: int) -> list[str]:
        """Oldest runs of their threads that nothing advances; marked as nudged."""
        rows = self._all("stalled_runs", {"stale": stale, "idle": idle, "limit": limit})
        return [str(r["run_id"]) for r in rows]

    # --- events --------------------------------------------------------------------------

    def add_events(self, run_id: str, chunks: Sequence[EventRow]) -> None:
        if chunks:
            with self.db.session("add_events") as s:
                s.many("add_event", self._event_rows(run_id, chunks), returning=False)

    def _event_rows(self, run_id: str, chunks: Sequence[EventRow]) -> list[Row]:
        rows = []
        for ns, mode, payload in chunks:
            payload_type, data = self.serde.dumps_typed(payload)
            rows.append(
                {
                    "run_id": run_id,
                    "ns": "|".join(ns),
                    "mode": mode,
                    "payload_type": payload_type,
                    "payload": data,
                }
            )
        return rows

    def events_after(self, run_id: str, after: int) -> list[Event]:
        rows = self._all("events_after", {"run_id": run_id, "after": after})
        return [
            Event(
                seq=r["seq"],
                ns=tuple(r["ns"].split("|")) if r["ns"] else (),
                mode=r["mode"],
                payload=self._load(r["payload_type"], r["payload"]),
            )
            for r in rows
        ]
