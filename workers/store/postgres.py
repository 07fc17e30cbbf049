"""The run store on Postgres: every statement in ``workers/sql/queries.sql``.

Each method borrows a pool connection for one statement (or one transaction) and
gives it back before it returns: no method holds a connection while it waits for
another, so one store (and one client) can be shared by any number of threads.
Driver errors are wrapped: :class:`~workers.errors.StoreUnavailableError` when the
database could not be reached (classified by SQLSTATE), else
:class:`~workers.errors.StoreError`.
"""

from __future__ import annotations

import json
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, LiteralString

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from checkpoint_pg import is_connection_error, missing_schema
from graphruntime.checkpoint import JsonSerializer, SerializerProtocol
from graphruntime.errors import CheckpointError, InvalidResumeError
from workers._sql import MIGRATIONS, query
from workers.errors import (
    RunNotFoundError,
    StoreError,
    StoreRecoveredError,
    StoreUnavailableError,
    WorkerError,
)
from workers.store._model import (
    Claim,
    Event,
    EventRow,
    ExpiredWait,
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

__all__ = ("PostgresRunStore", "make_pool")

EPOCH_CHANGED = "GRCRA"
"""SQLSTATE of graphruntime_check_epoch (migration 0007): see StoreRecoveredError."""


class PostgresRunStore:
    """All of the workers' SQL; the saver keeps checkpoints, this keeps everything else."""

    def __init__(self, pool: ConnectionPool[Any], serde: SerializerProtocol | None = None) -> None:
        self.pool = pool
        self.serde = serde or JsonSerializer()

    def setup(self) -> None:
        """Apply the workers' pending migrations (workers/sql/migrations)."""
        MIGRATIONS.migrate(self.pool)

    def close(self) -> None:
        """Close the pool (the store owns it when it came from ``workers.runtime.connect``)."""
        self.pool.close()

    @contextmanager
    def _conn(self, operation: str) -> Iterator[psycopg.Connection[Any]]:
        try:
            with self.pool.connection() as conn:
                yield conn
        except (psycopg.Error, OSError) as exc:
            if isinstance(exc, psycopg.Error) and exc.sqlstate == EPOCH_CHANGED:
                raise StoreRecoveredError(
                    f"run store: {operation}: {exc.diag.message_primary}"
                ) from exc
            if isinstance(exc, OSError) or is_connection_error(exc):
                raise StoreUnavailableError(
                    f"run store: {operation} could not reach Postgres: {exc}"
                ) from exc
            hint = f" The workers' tables are missing: {MIGRATIONS.setup_hint}." * missing_schema(
                exc
            )
            raise StoreError(f"run store: {operation} failed: {exc}{hint}") from exc
        except Exception as exc:
            if is_connection_error(exc):  # psycopg_pool.PoolTimeout
                raise StoreUnavailableError(
                    f"run store: {operation} got no connection: {exc}"
                ) from exc
            raise

    # --- serde ---------------------------------------------------------------------------

    def _dump(self, value: Any) -> tuple[str, bytes]:
        return self.serde.dumps_typed(value)

    def _load(self, type_: str | None, data: bytes | None) -> Any:
        if type_ is None or data is None:
            return None
        return self.serde.loads_typed((type_, bytes(data)))

    def _run(self, row: Mapping[str, Any], payload: Any = None) -> Run:
        """The run of ``row``; ``payload``: its payload if the caller has it (not decoded)."""
        payload_error = result_error = None
        if payload is None:
            try:
                payload = self._load(row["payload_type"], row["payload"])
            except CheckpointError as exc:
                payload_error = str(exc)
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
            payload=payload if isinstance(payload, dict) else {},
            stop=row["stop"],
            result=result,
            error=row["error"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            idempotency_key=row.get("idempotency_key"),
            request_digest=row.get("request_digest"),
            resumes_run=str(row["resumes_run"]) if row.get("resumes_run") else None,
            origin=row.get("origin"),
            payload_error=payload_error,
            result_error=result_error,
        )

    # --- runs ----------------------------------------------------------------------------

    def _new_run_params(self, new: NewRun) -> dict[str, Any]:
        payload_type, payload_bytes = self._dump(new.payload)
        return {
            "run_id": new.run_id,
            "thread_id": new.thread_id,
            "graph": new.graph,
            "kind": new.kind,
            "payload_type": payload_type,
            "payload": payload_bytes,
            "idempotency_key": new.idempotency_key,
            "request_digest": new.request_digest,
            "origin": json.dumps(new.origin) if new.origin is not None else None,
            "answers": new.answers,
        }

    def create_run(self, new: NewRun) -> tuple[Run, bool]:
        params = self._new_run_params(new)
        with self._conn("create_run") as conn:
            row = conn.execute(query("create_run"), params).fetchone()
            if row is None:
                why = conn.execute(query("explain_refused_run"), params).fetchone()
        if row is not None:
            return self._run(row), True
        assert why is not None
        return self.get_run(str(refused_as(new, why))), False

    def get_run(self, run_id: str) -> Run:
        with self._conn("get_run") as conn:
            row = conn.execute(query("get_run"), {"run_id": run_id}).fetchone()
        if row is None:
            raise RunNotFoundError(f"No run {run_id}: check the id (graphrun runs lists them).")
        return self._run(row)

    def next_run(self, thread_id: str) -> Run | None:
        with self._conn("next_run") as conn:
            row = conn.execute(query("next_run"), {"thread_id": thread_id}).fetchone()
        return None if row is None else self._run(row)

    def active_runs(self, thread_id: str) -> list[str]:
        with self._conn("active_runs") as conn:
            rows = conn.execute(query("active_runs_of_thread"), {"thread_id": thread_id}).fetchall()
        return [str(r["run_id"]) for r in rows]

    def set_running(self, run_id: str, stop: int) -> None:
        with self._conn("set_running") as conn:
            conn.execute(query("set_running"), {"run_id": run_id, "stop": stop})

    def touch_run(self, run_id: str) -> None:
        with self._conn("touch_run") as conn:
            conn.execute(query("touch_run"), {"run_id": run_id})

    def finish_run(
        self,
        run_id: str,
        status: RunStatus,
        *,
        result: Any = None,
        error: Mapping[str, Any] | None = None,
        inbox: InboxUpdate | None = None,
    ) -> bool:
        statement, params = self._finish(run_id, status, result, error, inbox)
        with self._conn("finish_run") as conn:
            cur = conn.execute(statement, params)
            return bool(cur.rowcount > 0)

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
        end = RunEnd(run_id, thread_id, status, result, error, inbox)
        return self.finish_and_release_many([end], worker=worker)[0]

    def finish_and_release_many(
        self,
        ends: Sequence[RunEnd],
        *,
        worker: str,
        free: Sequence[str] = (),
        requeue: Sequence[str] = (),
        epoch: str | None = None,
    ) -> list[Released]:
        """One transaction in one round trip: per end its finish statement, then
        release_leases and next_runs_of_threads for all the threads (see release_leases in
        queries.sql). A durable commit, also when it ends no run."""
        if not ends and not free:
            return []
        # per thread: its lease, the run's end (None: none, or refused) and why refused
        steps: list[
            tuple[dict[str, Any], tuple[LiteralString, dict[str, Any]] | None, Exception | None]
        ] = []
        for end in ends:
            lease = {"thread_id": end.thread_id, "worker": worker}
            try:
                statement = self._finish(end.run_id, end.status, end.result, end.error, end.inbox)
            except CheckpointError as exc:  # a result the serde refuses: the lease still goes
                steps.append((lease, None, exc))
            else:
                steps.append((lease, statement, None))
        steps += [({"thread_id": thread_id, "worker": worker}, None, None) for thread_id in free]
        heads: list[psycopg.Cursor[Any] | None] = []
        threads = {"threads": [lease["thread_id"] for lease, _, _ in steps], "worker": worker}
        with self._conn("finish_and_release") as conn:
            with conn.pipeline(), conn.transaction():
                if ends and epoch is not None:  # freeing a lease alone vouches for nothing
                    conn.execute(query("check_epoch"), {"epoch": epoch})
                if requeue:
                    conn.execute(query("requeue_runs"), {"run_ids": list(requeue)})
                heads = [
                    None if ending is None else conn.execute(*ending) for _, ending, _ in steps
                ]
                conn.execute(query("release_leases"), threads)
                following = conn.execute(query("next_runs_of_threads"), threads)
            next_of = {row["thread_id"]: str(row["run_id"]) for row in following.fetchall()}
            out = []
            for head, (lease, _, refused) in zip(heads, steps, strict=True):
                finished = head is not None and head.rowcount > 0
                out.append(Released(finished, next_of.get(lease["thread_id"]), refused))
        return out

    def _finish(
        self,
        run_id: str,
        status: RunStatus,
        result: Any,
        error: Mapping[str, Any] | None,
        inbox: InboxUpdate | None,
    ) -> tuple[LiteralString, dict[str, Any]]:
        """The statement that ends a run (and sets its thread's inbox), and its parameters."""
        result_type, result_bytes = self._dump(result) if result is not None else (None, None)
        params: dict[str, Any] = {
            "run_id": run_id,
            "status": status,
            "result_type": result_type,
            "result": result_bytes,
            "error": json.dumps(dict(error)) if error is not None else None,
        }
        if inbox is None:
            return query("finish_run"), params
        return query("finish_run_inbox"), {**params, **_inbox_params(inbox)}

    def create_runs(
        self, news: Sequence[NewRun]
    ) -> list[tuple[Run | None, bool, Exception | None]]:
        """Pipelined create_run statements, one round trip; refusals explained one by one."""
        if not news:
            return []
        params = [self._new_run_params(new) for new in news]
        # one transaction: the batch pays one durable commit, not one per run
        with self._conn("create_runs") as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany(query("create_run"), params, returning=True)
            rows: list[Any] = []
            while True:
                rows.append(cur.fetchone())
                if not cur.nextset():
                    break
        out: list[tuple[Run | None, bool, Exception | None]] = []
        for new, row in zip(news, rows, strict=True):
            if row is not None:  # its payload is the one just stored
                out.append((self._run(row, payload=new.payload), True, None))
                continue
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
        params = {
            "thread_id": thread_id,
            "error": json.dumps(dict(error)),
            "cancel_run": cancel_run,
            "stale": stale,
        }
        with self._conn("cancel_thread") as conn, conn.transaction():
            rows = conn.execute(query("cancel_thread"), params).fetchall()
        return [str(r["run_id"]) for r in rows]

    def running_cancelled_tasks(self, run_ids: Sequence[str], stale: float) -> list[RunningTask]:
        params = {"run_ids": list(run_ids), "stale": stale}
        with self._conn("running_cancelled_tasks") as conn:
            rows = conn.execute(query("running_cancelled_tasks"), params).fetchall()
        return [RunningTask(r["task_id"], r["worker"], tuple(r["task_path"])) for r in rows]

    def replace_inbox(self, update: InboxUpdate, run_id: str | None) -> None:
        params = {**_inbox_params(update), "thread_id": update.thread_id, "run_id": run_id}
        with self._conn("replace_inbox") as conn:
            conn.execute(query("replace_inbox"), params)

    def inbox(self, query_: InboxQuery) -> list[InboxRow]:
        after = query_.after
        threads = query_.threads
        age = query_.older_than
        params = {
            "graph": query_.graph,
            "where": json.dumps(query_.where) if query_.where is not None else None,
            "any_of": [json.dumps(w) for w in query_.any_of] if query_.any_of else None,
            "node": query_.node,
            "thread_id": query_.thread_id,
            "older_than": None if isinstance(age, timedelta) else age,
            "age": age.total_seconds() if isinstance(age, timedelta) else None,
            "after_at": after[0] if after else None,
            "after_thread": after[1] if after else None,
            "after_id": after[2] if after else None,
            "thread_ids": [t for t, _ in threads] if threads is not None else None,
            "interrupt_ids": [i for _, i in threads] if threads is not None else None,
            "limit": query_.limit,
        }
        with self._conn("inbox") as conn:
            rows = conn.execute(query("inbox_page"), params, prepare=False).fetchall()
        return [
            InboxRow(
                graph=r["graph"],
                thread_id=r["thread_id"],
                interrupt_id=r["interrupt_id"],
                node=r["node"],
                namespace=r["namespace"],
                value=r["value"],
                created_at=r["created_at"],
                deadline=r["deadline"],
                run_id=str(r["run_id"]),
                checkpoint_id=r["checkpoint_id"],
                resuming=r["resuming"],
                response_schema=r["response_schema"],
                claimed_by=r["claimed_by"],
                claimed_until=r["claimed_until"],
            )
            for r in rows
        ]

    def claim_wait(
        self, thread_id: str, interrupt_id: str, actor: str, seconds: float, take_over: bool
    ) -> WaitClaim | None:
        params = {
            "thread_id": thread_id,
            "interrupt_id": interrupt_id,
            "actor": actor,
            "seconds": seconds,
            "take_over": take_over,
        }
        with self._conn("claim_wait") as conn:
            row = conn.execute(query("claim_wait"), params).fetchone()
        if row is None:
            return None
        return WaitClaim(row["claimed_by"], row["claimed_until"], row["taken"])

    def release_wait(self, thread_id: str, interrupt_id: str, actor: str) -> bool:
        params = {"thread_id": thread_id, "interrupt_id": interrupt_id, "actor": actor}
        with self._conn("release_wait") as conn:
            return conn.execute(query("release_wait"), params).fetchone() is not None

    def expired_waits(self, limit: int) -> list[ExpiredWait]:
        with self._conn("expired_waits") as conn:
            rows = conn.execute(query("expired_waits"), {"limit": limit}).fetchall()
        return [
            ExpiredWait(
                r["graph"],
                r["thread_id"],
                r["interrupt_id"],
                (r["default_type"], bytes(r["default_value"])),
            )
            for r in rows
        ]

    def runs_by_key(self, graph: str, key: str) -> list[Run]:
        with self._conn("runs_by_key") as conn:
            rows = conn.execute(query("runs_by_key"), {"graph": graph, "key": key}).fetchall()
        return [self._run(r) for r in rows]

    def resume_history(self, thread_id: str, limit: int = 50) -> list[Run]:
        with self._conn("resume_history") as conn:
            rows = conn.execute(
                query("resume_history"), {"thread_id": thread_id, "limit": limit}
            ).fetchall()
        return [self._run(r) for r in rows]

    def list_runs(self, query_: RunQuery) -> list[dict[str, Any]]:
        params = {
            "thread_id": query_.thread_id,
            "graph": query_.graph,
            "status": query_.status,
            "age": query_.newer_than,
            "limit": query_.limit,
        }
        with self._conn("list_runs") as conn:
            rows: list[dict[str, Any]] = conn.execute(
                query("list_runs"), params, prepare=False
            ).fetchall()
        for row in rows:
            row["run_id"] = str(row["run_id"])
            done, total = row.pop("tasks_done"), row.pop("tasks_total")
            row["step_tasks"] = {"done": done, "total": total} if total else None
        return rows

    def overview(self, stale: float) -> Overview:
        with self._conn("overview") as conn:
            row = conn.execute(query("overview"), {"stale": stale}).fetchone()
        assert row is not None
        return Overview(**{k: int(v) for k, v in row.items()})

    def runs_of_thread(self, thread_id: str, limit: int = 20) -> list[dict[str, Any]]:
        with self._conn("runs_of_thread") as conn:
            rows: list[dict[str, Any]] = conn.execute(
                query("runs_of_thread"), {"thread_id": thread_id, "limit": limit}
            ).fetchall()
        return rows

    # --- thread leases and heartbeats ----------------------------------------------------

    def bind_thread(self, thread_id: str, graph: str) -> str:
        with self._conn("bind_thread") as conn:
            row = conn.execute(
                query("bind_thread"), {"thread_id": thread_id, "graph": graph}
            ).fetchone()
        assert row is not None
        return str(row["graph"])

    def acquire_thread(
        self, thread_id: str, worker: str, stale: float, token: str | None = None
    ) -> bool:
        params = {"thread_id": thread_id, "worker": worker, "stale": stale, "token": token}
        with self._conn("acquire_thread") as conn:
            return conn.execute(query("acquire_thread"), params).fetchone() is not None

    def release_thread(self, thread_id: str, worker: str) -> str | None:
        return self.finish_and_release_many([], worker=worker, free=[thread_id])[0].following

    def claim_run(self, run_id: str, worker: str, stale: float, token: str | None = None) -> Claim:
        params = {"run_id": run_id, "worker": worker, "stale": stale, "token": token}
        with self._conn("claim_run") as conn:
            row = conn.execute(query("claim_run"), params).fetchone()
        if row is None:
            raise RunNotFoundError(f"No run {run_id}: check the id (graphrun runs lists them).")
        return self._claim(row)

    def claim_runs(
        self, run_ids: Sequence[str], worker: str, stale: float, token: str | None = None
    ) -> list[Claim]:
        """claim_run per run, pipelined: one round trip and one implicit transaction (one
        Sync), committed without waiting for the WAL flush (claims are soft state). Two
        jobs claiming the same threads in other orders may deadlock: Postgres aborts one,
        a transient error its job retries."""
        if not run_ids:
            return []
        params = [{"run_id": r, "worker": worker, "stale": stale, "token": token} for r in run_ids]
        rows: list[Any] = []
        with self._conn("claim_runs") as conn, conn.cursor() as cur:
            cur.executemany(query("claim_run"), params, returning=True)
            while True:
                rows.append(cur.fetchone())
                if not cur.nextset():
                    break
        return [self._claim(row) for row in rows]

    def _claim(self, row: Mapping[str, Any] | None) -> Claim:
        if row is None:  # no such run (a claim of a single run raises instead)
            return Claim(ended=True, leased=False, run=None, found=False)
        ended = row["target_status"] not in ("queued", "running")
        run = self._run(row) if row["run_id"] is not None else None
        return Claim(ended=ended, leased=bool(row["leased"]), run=run, epoch=str(row["epoch"]))

    def heartbeat(
        self,
        worker: str,
        hostname: str,
        pid: int,
        *,
        keep: str | None = None,
        grace: float | None = None,
    ) -> list[str]:
        if grace is None:
            with self._conn("heartbeat") as conn:
                conn.execute(query("beat"), {"worker": worker, "hostname": hostname, "pid": pid})
            return []
        params = {
            "worker": worker,
            "hostname": hostname,
            "pid": pid,
            "keep": keep,
            "grace": grace,
        }
        with self._conn("heartbeat") as conn:
            rows = conn.execute(query("heartbeat"), params).fetchall()
        return [row["thread_id"] for row in rows]

    def remove_worker(self, worker: str) -> None:
        with self._conn("remove_worker") as conn:
            conn.execute(query("remove_worker"), {"worker": worker})

    def live_workers(self, stale: float) -> list[dict[str, Any]]:
        with self._conn("live_workers") as conn:
            rows: list[dict[str, Any]] = conn.execute(
                query("live_workers"), {"stale": stale}
            ).fetchall()
        return rows

    # --- the step barrier ----------------------------------------------------------------

    def register_tasks(
        self,
        run_id: str,
        thread_id: str,
        checkpoint_id: str,
        tasks: Sequence[tuple[str, Sequence[Any]]],
        epoch: str | None = None,
    ) -> list[str]:
        params = {
            "run_id": run_id,
            "checkpoint_id": checkpoint_id,
            "task_ids": [tid for tid, _ in tasks],
            "paths": [json.dumps(list(path)) for _, path in tasks],
            "thread_id": thread_id,
        }
        with self._conn("register_tasks") as conn:
            if epoch is None:
                rows = conn.execute(query("register_tasks"), params).fetchall()
            else:
                with conn.pipeline(), conn.transaction():
                    conn.execute(query("check_epoch"), {"epoch": epoch})
                    cur = conn.execute(query("register_tasks"), params)
                rows = cur.fetchall()
        return [r["task_id"] for r in rows]

    def step_tasks(self, run_id: str, checkpoint_id: str) -> dict[str, StepTask]:
        params = {"run_id": run_id, "checkpoint_id": checkpoint_id}
        with self._conn("step_tasks") as conn:
            rows = conn.execute(query("step_tasks"), params).fetchall()
        return {r["task_id"]: StepTask(r["task_id"], r["status"], r["error"]) for r in rows}

    def claim_tasks(
        self,
        run_id: str,
        checkpoint_id: str,
        tasks: Sequence[tuple[str, Sequence[Any], int]],
        worker: str,
        stale: float,
        token: str | None = None,
    ) -> TaskClaims:
        base = {
            "run_id": run_id,
            "checkpoint_id": checkpoint_id,
            "worker": worker,
            "token": token,
        }
        rows = [
            {**base, "task_id": t, "path": json.dumps(list(p)), "attempts": a, "stale": stale}
            for t, p, a in tasks
        ]
        with self._conn("claim_tasks") as conn, conn.transaction(), conn.cursor() as cur:
            cur.execute(query("async_commit"))
            claimed = _each_returning(cur, query("claim_task"), rows)
            epoch = cur.execute(query("epoch")).fetchone() if claimed else None
        ids = [t for t, _, _ in tasks if t in claimed]
        return TaskClaims(ids, str(epoch["epoch"]) if epoch else None)

    def complete_tasks(
        self,
        run_id: str,
        checkpoint_id: str,
        outcomes: Mapping[str, Mapping[str, Any] | None],
        worker: str,
        events: Mapping[str, Sequence[EventRow]],
        epoch: str | None = None,
    ) -> tuple[int, int]:
        base = {"run_id": run_id, "checkpoint_id": checkpoint_id}
        rows = [
            {
                **base,
                "task_id": tid,
                "worker": worker,
                "error": json.dumps(dict(error)) if error is not None else None,
            }
            for tid, error in outcomes.items()
        ]
        with self._conn("complete_tasks") as conn, conn.transaction():
            if epoch is not None:
                conn.execute(query("check_epoch"), {"epoch": epoch})
            with conn.cursor() as cur:
                done = _each_returning(cur, query("complete_task"), rows)
            if not done:
                return 0, -1  # other deliveries completed them: their events are the ones kept
            row = conn.execute(query("count_down_step"), {**base, "done": len(done)}).fetchone()
            kept = [e for t in outcomes if t in done for e in events.get(t, ())]
            if kept:
                with conn.cursor() as cur:
                    cur.executemany(query("add_event"), self._event_rows(run_id, kept))
        return len(done), int(row["open_tasks"]) if row else 0

    def release_claims(
        self, run_id: str, checkpoint_id: str, task_ids: Sequence[str], worker: str
    ) -> None:
        params = {
            "run_id": run_id,
            "checkpoint_id": checkpoint_id,
            "task_ids": list(task_ids),
            "worker": worker,
        }
        with self._conn("release_claims") as conn:
            conn.execute(query("release_claims"), params)

    def hold_for_retry(
        self, run_id: str, checkpoint_id: str, task_id: str, attempts: int, hold: float
    ) -> None:
        params = {
            "run_id": run_id,
            "checkpoint_id": checkpoint_id,
            "task_id": task_id,
            "attempts": attempts,
            "hold": hold,
        }
        with self._conn("hold_for_retry") as conn:
            conn.execute(query("hold_for_retry"), params)

    # --- the sweeper ---------------------------------------------------------------------

    def orphaned_tasks(self, stale: float, unclaimed: float, limit: int) -> list[OrphanTask]:
        params = {"stale": stale, "unclaimed": unclaimed, "limit": limit}
        with self._conn("orphaned_tasks") as conn:
            rows = conn.execute(query("orphaned_tasks"), params).fetchall()
        return [
            OrphanTask(
                run_id=str(r["run_id"]),
                thread_id=r["thread_id"],
                checkpoint_id=r["checkpoint_id"],
                task_id=r["task_id"],
                path=tuple(r["task_path"] or ()),
                retry_attempts=r["retry_attempts"],
                resends=r["attempts"],
            )
            for r in rows
            if r["task_path"] is not None
        ]

    def stalled_runs(self, stale: float, idle: float, limit: int) -> list[str]:
        params = {"stale": stale, "idle": idle, "limit": limit}
        with self._conn("stalled_runs") as conn:
            rows = conn.execute(query("stalled_runs"), params).fetchall()
        return [str(r["run_id"]) for r in rows]

    # --- events --------------------------------------------------------------------------

    def add_events(self, run_id: str, chunks: Sequence[EventRow]) -> None:
        if not chunks:
            return
        with self._conn("add_events") as conn, conn.cursor() as cur:
            cur.executemany(query("add_event"), self._event_rows(run_id, chunks))

    def _event_rows(self, run_id: str, chunks: Sequence[EventRow]) -> list[dict[str, Any]]:
        rows = []
        for ns, mode, payload in chunks:
            ptype, pbytes = self._dump(payload)
            rows.append(
                {
                    "run_id": run_id,
                    "ns": "|".join(ns),
                    "mode": mode,
                    "payload_type": ptype,
                    "payload": pbytes,
                }
            )
        return rows

    def events_after(self, run_id: str, after: int) -> list[Event]:
        with self._conn("events_after") as conn:
            rows = conn.execute(
                query("events_after"), {"run_id": run_id, "after": after}
            ).fetchall()
        return [
            Event(
                seq=r["seq"],
                ns=tuple(r["ns"].split("|")) if r["ns"] else (),
                mode=r["mode"],
                payload=self._load(r["payload_type"], r["payload"]),
            )
            for r in rows
        ]


def _inbox_params(update: InboxUpdate) -> dict[str, Any]:
    """The inbox rows of an update as the statements' parallel arrays."""
    entries = update.entries
    if not entries:  # NULL arrays: nothing to add, every wait goes (no array dumps)
        return {
            "graph": update.graph,
            "checkpoint_id": update.checkpoint_id,
            **dict.fromkeys(
                ("ids", "nodes", "nss", "values", "deadlines", "dtypes", "dvalues", "schemas")
            ),
        }
    return {
        "graph": update.graph,
        "checkpoint_id": update.checkpoint_id,
        "ids": [e.interrupt_id for e in entries],
        "nodes": [e.node for e in entries],
        "nss": [e.namespace for e in entries],
        "values": [e.value for e in entries],
        "deadlines": [e.deadline for e in entries],
        "dtypes": [e.default[0] if e.default else None for e in entries],
        "dvalues": [e.default[1] if e.default else None for e in entries],
        "schemas": [e.response_schema for e in entries],
    }


def _each_returning(
    cur: psycopg.Cursor[Any], statement: LiteralString, rows: Sequence[Mapping[str, Any]]
) -> set[str]:
    """Run a one-row ``RETURNING task_id`` statement per params, pipelined; the ids returned."""
    found: set[str] = set()
    if not rows:
        return found
    cur.executemany(statement, rows, returning=True)
    while True:
        found.update(r["task_id"] for r in cur.fetchall())
        if not cur.nextset():
            return found


class _CheckWhenIdle:
    """A pool check that pings only connections idle for a while.

    Checking every checkout costs a round trip per statement on the hot path; a
    connection returned moments ago is almost surely alive, while one that sat
    idle through a Postgres restart is not. ``reset`` stamps the return time.
    """

    def __init__(self, idle: float) -> None:
        self.idle = idle
        self._returned: weakref.WeakKeyDictionary[psycopg.Connection[Any], float] = (
            weakref.WeakKeyDictionary()
        )

    def check(self, conn: psycopg.Connection[Any]) -> None:
        returned = self._returned.get(conn)
        if returned is None or time.monotonic() - returned > self.idle:
            ConnectionPool.check_connection(conn)

    def reset(self, conn: psycopg.Connection[Any]) -> None:
        self._returned[conn] = time.monotonic()


def make_pool(
    url: str, max_size: int = 4, *, prepare: bool = True, check_idle: float = 1.0
) -> ConnectionPool[Any]:
    """A pool of autocommit dict-row connections, opened and checked when idle.

    ``prepare=False`` turns server-side prepared statements off (a pooler in
    transaction mode that cannot keep them).
    """
    idle_check = _CheckWhenIdle(check_idle)
    pool: ConnectionPool[Any] = ConnectionPool(
        url,
        min_size=1,
        max_size=max_size,
        kwargs={
            "autocommit": True,
            "row_factory": dict_row,
            **({} if prepare else {"prepare_threshold": None}),
        },
        open=False,
        check=idle_check.check,
        reset=idle_check.reset,
    )
    pool.open(wait=True, timeout=30)
    return pool
