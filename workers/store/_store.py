"""The run store's rules, written once over the named queries of ``workers/sql/queries.sql``.

:class:`RunStore` decides what to run and what the rows mean: how a run is queued and
why it was refused, a coordinator's claim, a run's end with its thread's inbox and
lease (and, in :class:`~workers.store._barrier.StepBarrier`, the barrier's counts). Its
:class:`~workers.store._connector.Connector` runs the queries, on Postgres or in memory.
Every method is one statement, or one transaction, and holds no connection while it
waits for anything else, so one store can be shared by any number of threads.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import fields
from datetime import timedelta
from typing import Any

from graphruntime.errors import CheckpointError, InvalidResumeError
from workers.errors import RunNotFoundError, WorkerError
from workers.store._barrier import StepBarrier
from workers.store._connector import Row, one
from workers.store._model import (
    Claim,
    InboxQuery,
    NewRun,
    Overview,
    Released,
    Run,
    RunEnd,
    RunningTask,
    RunQuery,
    RunStatus,
    Wait,
    WaitClaim,
    canonical_run_id,
)
from workers.store._payload import RunPayload
from workers.store._refusals import refused_as

__all__ = ("RunStore",)


class RunStore(StepBarrier):
    """Runs, the step barrier, thread leases, heartbeats and stream events."""

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
        """The wait of an inbox row (every field of :class:`Wait` is a column of it)."""
        typed = row["default_type"]
        default = (typed, bytes(row["default_value"])) if typed is not None else None
        columns = {f.name: row[f.name] for f in fields(Wait) if f.name != "default"}
        return Wait(**{**columns, "run_id": str(row["run_id"]), "default": default})

    # --- runs ----------------------------------------------------------------------------

    def _new_run_params(self, new: NewRun) -> Row:
        payload_type, payload = new.stored or self.serde.dumps_typed(new.payload.stored())
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

    @staticmethod
    def _queued(new: NewRun, row: Row) -> Run:
        """The run create_run just queued: ``new`` as sent, with what the statement set
        (its status, the pause it answers, its times): nothing sent is read back."""
        resumes = row["resumes_run"]
        return Run(
            run_id=new.run_id,
            thread_id=new.thread_id,
            graph=new.graph,
            status=row["status"],
            kind=new.kind,
            payload=new.payload,
            stop=None,
            result=None,
            error=None,
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            idempotency_key=new.idempotency_key,
            request_digest=new.request_digest,
            resumes_run=str(resumes) if resumes else None,
            origin=new.origin,
        )

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
            row = one(s.all("create_run", params))
            why = None if row is not None else one(s.all("explain_refused_run", params))
        if row is not None:
            return self._queued(new, row), True
        assert why is not None
        return self.get_run(refused_as(params, why)), False

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
            if found:
                out.append((self._queued(new, found[0]), True, None))
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
        row = one(self._all("get_run", {"run_id": run_id}))
        if row is None:
            raise RunNotFoundError(f"No run {run_id}: check the id (graphrun runs lists them).")
        return self._run(row)

    def active_runs(self, thread_id: str) -> list[str]:
        rows = self._all("active_runs_of_thread", {"thread_id": thread_id})
        return [str(r["run_id"]) for r in rows]

    def set_running(self, run_id: str, stop: int) -> None:
        """Mark the run started and record the last step it may take (kept if recorded):
        what its task jobs and later coordinator jobs re-open it with."""
        self._all("set_running", {"run_id": run_id, "stop": stop})

    def touch_run(self, run_id: str) -> None:
        self._all("touch_run", {"run_id": run_id})

    def _stored_end(self, end: RunEnd) -> Row:
        """One end as the end_runs statement takes it (an object of its ``ends``, and
        ``waits``: its inbox rows); :class:`CheckpointError` if the serde refuses its
        result."""
        result_type, result = (
            self.serde.dumps_typed(end.result) if end.result is not None else (None, None)
        )
        stored = {
            "run_id": end.run_id,
            "status": end.status,
            "result_type": result_type,
            "result": _base64(result),
            "error": json.dumps(dict(end.error)) if end.error is not None else None,
            "set_inbox": end.inbox is not None,
        }
        return {"end": stored, "waits": [_columns(w) for w in end.inbox or ()]}

    def _end_runs(
        self,
        ends: Sequence[Row],
        *,
        worker: str | None = None,
        free: Sequence[str] = (),
        requeue: Sequence[str] = (),
        epoch: str | None = None,
        inbox_of: tuple[str, Sequence[Wait]] | None = None,
    ) -> tuple[set[str], dict[str, str]]:
        """The end_runs statement: ``ends`` (:meth:`_stored_end`) ended, the threads
        ``free`` freed (``worker``'s leases), ``requeue`` queued again, and ``inbox_of``'s
        thread given its waits; one statement (two with ``requeue``, in one transaction),
        one durable commit. Returns the runs it ended and, per freed thread, its next run."""
        waits = [w for end in ends for w in end["waits"]]
        if inbox_of is not None:
            waits += [_columns(w) for w in inbox_of[1]]
        # NULL (nothing to dump) where there is no element
        params = {
            "ends": json.dumps([end["end"] for end in ends]) if ends else None,
            "waits": json.dumps(waits) if waits else None,
            "inbox_thread": inbox_of[0] if inbox_of is not None else None,
            "threads": list(free) or None,
            "worker": worker,
            "epoch": epoch,
        }
        if requeue:  # rare: queued again in the end's transaction, one round trip still
            again = {"requeue": list(requeue), "epoch": epoch}
            rows = self.db.batch("end_runs", [("requeue_runs", again), ("end_runs", params)])[1]
        else:
            rows = self._all("end_runs", params)
        ended: set[str] = set()
        following: dict[str, str] = {}
        for row in rows:
            if row["ended"]:
                ended.add(str(row["run_id"]))
            else:
                following[row["thread_id"]] = str(row["run_id"])
        return ended, following

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
        # the end's thread is the run's: only the lease release needs it
        end = RunEnd(run_id, "", status, result, error, inbox)
        ended, _ = self._end_runs([self._stored_end(end)])
        return canonical_run_id(run_id) in ended

    def replace_inbox(self, thread_id: str, waits: Sequence[Wait] = ()) -> None:
        """Set the thread's inbox rows (after an edit of its state)."""
        self._end_runs([], inbox_of=(thread_id, waits))

    def finish_and_release_many(
        self,
        ends: Sequence[RunEnd],
        *,
        worker: str,
        free: Sequence[str] = (),
        requeue: Sequence[str] = (),
        epoch: str | None = None,
    ) -> list[Released]:
        """End runs of distinct threads and free their leases, and :meth:`release_thread`
        for the threads ``free`` (no run of theirs ended), all in one statement: one
        round trip and one durable commit for every run it ends, also when it ends none.
        ``requeue``: runs of the freed threads that a claim marked running and nothing
        advanced, queued again.

        One :class:`Released` per end, then per freed thread, in order. An end whose
        result cannot be stored only frees its lease (its ``Released`` says why); the
        others are not held back by it. The threads' next runs are read after the lease
        rows are locked (see end_runs in queries.sql).

        ``epoch``: the server's when the runs were claimed (:attr:`Claim.epoch`). Ending
        runs makes their earlier asynchronous commits durable, so it is refused
        (:class:`~workers.errors.StoreRecoveredError`, nothing written) if Postgres
        recovered from a crash since, which may have taken them back: the job is redone.
        """
        if not ends and not free:
            return []
        stored: list[Row] = []
        refusals: list[Exception | None] = []
        for end in ends:
            try:
                stored.append(self._stored_end(end))
            except CheckpointError as exc:  # a result the serde refuses: the lease still goes
                refusals.append(exc)
            else:
                refusals.append(None)
        threads = [end.thread_id for end in ends] + list(free)
        ended, next_of = self._end_runs(
            stored,
            worker=worker,
            free=threads,
            requeue=requeue,
            # freeing a lease alone vouches for nothing
            epoch=epoch if ends else None,
        )
        finished = [
            canonical_run_id(end.run_id) in ended and refused is None
            for end, refused in zip(ends, refusals, strict=True)
        ]
        finished += [False] * len(free)
        refusals += [None] * len(free)
        return [
            Released(done, next_of.get(thread), refused)
            for done, thread, refused in zip(finished, threads, refusals, strict=True)
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
            "any_of": [json.dumps(w) for w in query.any_of] if query.any_of else None,
            "node": query.node,
            "thread_id": query.thread_id,
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

    def claim_wait(
        self, thread_id: str, interrupt_id: str, actor: str, seconds: float, take_over: bool
    ) -> WaitClaim | None:
        """Claim a pending wait for ``seconds`` when it is free, lapsed, ``actor``'s, or
        ``take_over``; the claim after the attempt, None when the wait is not pending."""
        params = {
            "thread_id": thread_id,
            "interrupt_id": interrupt_id,
            "actor": actor,
            "seconds": seconds,
            "take_over": take_over,
        }
        row = one(self._all("claim_wait", params))
        return (
            None
            if row is None
            else WaitClaim(row["claimed_by"], row["claimed_until"], row["taken"])
        )

    def release_wait(self, thread_id: str, interrupt_id: str, actor: str) -> bool:
        """End ``actor``'s claim on the wait; whether there was one."""
        params = {"thread_id": thread_id, "interrupt_id": interrupt_id, "actor": actor}
        return bool(self._all("release_wait", params))

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
        error (a :meth:`list_runs` of the thread)."""
        keys = ("run_id", "status", "kind", "created_at", "updated_at", "error")
        rows = self.list_runs(RunQuery(thread_id=thread_id, limit=limit))
        return [{k: row[k] for k in keys} for row in rows]

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

    def claim_runs(
        self, run_ids: Sequence[str], worker: str, stale: float, token: str | None = None
    ) -> list[Claim]:
        """Start a coordinator job for each run (see :class:`Claim`): the ``claim_run``
        statement per run, in order, pipelined: one round trip and one implicit
        transaction, committed without waiting for the WAL flush (claims are soft state);
        an unknown run's claim is ended and not ``found``. Two jobs claiming the same
        threads in other orders may deadlock: Postgres aborts one, a transient error its
        job retries."""
        if not run_ids:
            return []
        params = [{"run_id": r, "worker": worker, "stale": stale, "token": token} for r in run_ids]
        with self.db.session("claim_runs") as s:
            rows = s.many("claim_run", params)
        return [self._claim(one(found)) for found in rows]

    def claim_queued_runs(
        self,
        graphs: Sequence[str],
        worker: str,
        stale: float,
        token: str | None = None,
        *,
        skip: Sequence[str] = (),
        limit: int = 32,
    ) -> list[Claim]:
        """Take runs from the table for a free coordinator job (see workers/_drain.py):
        up to ``limit`` queued runs of ``graphs`` (none of ``skip``), each first in line
        on a thread no live worker holds, oldest first; their threads leased and the runs
        marked running, as :meth:`claim_runs` would for messages naming them. One
        statement; runs another job is taking meanwhile are left to it."""
        params = {
            "graphs": list(graphs),
            "worker": worker,
            "stale": stale,
            "token": token,
            "skip": list(skip),
            "limit": limit,
        }
        return [self._claim(row) for row in self._all("claim_queued_runs", params)]

    def _claim(self, row: Row | None) -> Claim:
        if row is None:  # no such run (a claim of a single run raises instead)
            return Claim(ended=True, leased=False, run=None, found=False)
        ended = row["target_status"] not in ("queued", "running")
        run = self._run(row) if row["run_id"] is not None else None
        epoch = row["epoch"]
        return Claim(ended, bool(row["leased"]), run, epoch=None if epoch is None else str(epoch))

    def heartbeat(
        self,
        worker: str,
        hostname: str,
        pid: int,
        *,
        keep: str | None = None,
        grace: float | None = None,
        node: str | None = None,
        graphs: Sequence[str] | None = None,
    ) -> list[str]:
        """Record that ``worker`` is alive (a process of Celery node ``node``, serving
        ``graphs``); with a ``grace``, also free its task claims and thread leases not
        taken by its current job (token ``keep``; None: it runs none) and older than
        ``grace`` seconds (younger: a job that just began).

        Returns the threads whose leases it freed.
        """
        params = {
            "worker": worker,
            "hostname": hostname,
            "pid": pid,
            "node": node,
            "graphs": None if graphs is None else list(graphs),
        }
        if grace is None:
            self._all("beat", params)
            return []
        rows = self._all("heartbeat", {**params, "keep": keep, "grace": grace})
        return [row["thread_id"] for row in rows]

    def remove_worker(self, worker: str) -> None:
        self._all("remove_worker", {"worker": worker})

    def live_workers(self, stale: float) -> list[dict[str, Any]]:
        """Worker processes (and clients holding a lease) with a fresh heartbeat: worker,
        hostname, pid, started_at, heartbeat_at, node, graphs."""
        return self._all("live_workers", {"stale": stale})


def _columns(wait: Wait) -> Row:
    """A wait as the inbox's columns a run's end sets (end_runs' ``waits``), JSON-ready:
    bytes in base64, JSON values as JSON text, the deadline in ISO 8601."""
    default_type, default_value = wait.default or (None, None)
    schema = wait.response_schema
    return {
        "thread_id": wait.thread_id,
        "interrupt_id": wait.interrupt_id,
        "graph": wait.graph,
        "run_id": wait.run_id,
        "checkpoint_id": wait.checkpoint_id,
        "node": wait.node,
        "namespace": wait.namespace,
        "value": json.dumps(wait.value),
        "response_schema": None if schema is None else json.dumps(schema, default=str),
        "deadline": None if wait.deadline is None else wait.deadline.isoformat(),
        "default_type": default_type,
        "default_value": _base64(default_value),
    }


def _base64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")
