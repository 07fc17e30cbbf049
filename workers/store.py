"""Run bookkeeping in Postgres: runs, the step barrier, stream events, thread locks."""

from __future__ import annotations

import contextlib
import json
import time
import uuid
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, LiteralString

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from graphruntime.checkpoint import JsonSerializer, SerializerProtocol
from workers._sql import MIGRATIONS, query
from workers.errors import ResumeConflictError

Status = str  # queued | running | interrupted | success | error
TERMINAL = frozenset({"interrupted", "success", "error"})
EventRow = tuple[tuple[str, ...], str, Any]  # (namespace, stream mode, payload)


@dataclass(frozen=True)
class Run:
    """One ``invoke``/``submit`` of a graph on a thread."""

    run_id: str
    thread_id: str
    graph: str
    status: Status
    kind: str
    payload: dict[str, Any]
    stop: int | None
    result: Any
    error: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime

    @property
    def done(self) -> bool:
        return self.status in TERMINAL


@dataclass(frozen=True)
class Event:
    seq: int
    ns: tuple[str, ...]
    mode: str
    payload: Any


class RunStore:
    """All of the workers' SQL; the saver keeps checkpoints, this keeps everything else."""

    def __init__(self, pool: ConnectionPool[Any], serde: SerializerProtocol | None = None) -> None:
        self.pool = pool
        self.serde = serde or JsonSerializer()

    def setup(self) -> None:
        """Apply the workers' pending migrations (workers/sql/migrations)."""
        MIGRATIONS.migrate(self.pool)

    # --- serde ---------------------------------------------------------------------------

    def _dump(self, value: Any) -> tuple[str, bytes]:
        return self.serde.dumps_typed(value)

    def _load(self, type_: str | None, data: bytes | None) -> Any:
        if type_ is None or data is None:
            return None
        return self.serde.loads_typed((type_, bytes(data)))

    def _run(self, row: dict[str, Any]) -> Run:
        return Run(
            run_id=str(row["run_id"]),
            thread_id=row["thread_id"],
            graph=row["graph"],
            status=row["status"],
            kind=row["kind"],
            payload=self._load(row["payload_type"], row["payload"]),
            stop=row["stop"],
            result=self._load(row["result_type"], row["result"]),
            error=row["error"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )

    # --- runs ----------------------------------------------------------------------------

    def create_run(
        self,
        *,
        thread_id: str,
        graph: str,
        kind: str,
        payload: dict[str, Any],
        idempotency_key: str | None = None,
        resumes_checkpoint: str | None = None,
    ) -> tuple[Run, bool]:
        """Insert a queued run; returns (run, created). Same idempotency key → same run."""
        payload_type, payload_bytes = self._dump(payload)
        run_id = str(uuid.uuid4())
        with self.pool.connection() as conn:
            row = conn.execute(
                query("insert_run"),
                {
                    "run_id": run_id,
                    "thread_id": thread_id,
                    "graph": graph,
                    "kind": kind,
                    "payload_type": payload_type,
                    "payload": payload_bytes,
                    "idempotency_key": idempotency_key,
                    "resumes_checkpoint": resumes_checkpoint,
                },
            ).fetchone()
            if row is not None:
                return self.get_run(run_id), True
            if idempotency_key is not None:
                existing = conn.execute(
                    query("run_by_idempotency_key"),
                    {"thread_id": thread_id, "key": idempotency_key},
                ).fetchone()
                if existing is not None:
                    return self._run(existing), False
            if resumes_checkpoint is not None:
                other = conn.execute(
                    query("run_by_resumed_checkpoint"),
                    {"thread_id": thread_id, "checkpoint_id": resumes_checkpoint},
                ).fetchone()
                if other is not None:
                    raise ResumeConflictError(
                        f"Thread {thread_id!r} is already being resumed by run {other['run_id']} "
                        f"(status {other['status']}). This resume was not applied; read the "
                        "thread's state and resume its next interrupt if there is one."
                    )
        raise RuntimeError("run insert conflicted on an unknown constraint")  # pragma: no cover

    def find_by_idempotency_key(self, thread_id: str, key: str) -> Run | None:
        with self.pool.connection() as conn:
            row = conn.execute(
                query("run_by_idempotency_key"), {"thread_id": thread_id, "key": key}
            ).fetchone()
        return self._run(row) if row else None

    def get_run(self, run_id: str) -> Run:
        with self.pool.connection() as conn:
            row = conn.execute(query("get_run"), {"run_id": run_id}).fetchone()
        if row is None:
            raise LookupError(f"No run {run_id}")
        return self._run(row)

    def earlier_active_run(self, run: Run) -> str | None:
        with self.pool.connection() as conn:
            row = conn.execute(
                query("earlier_active_run"),
                {"thread_id": run.thread_id, "created_at": run.created_at, "run_id": run.run_id},
            ).fetchone()
        return str(row["run_id"]) if row else None

    def active_runs(self, thread_id: str) -> list[str]:
        with self.pool.connection() as conn:
            rows = conn.execute(query("active_runs_of_thread"), {"thread_id": thread_id}).fetchall()
        return [str(r["run_id"]) for r in rows]

    def set_running(self, run_id: str, stop: int) -> None:
        with self.pool.connection() as conn:
            conn.execute(query("set_running"), {"run_id": run_id, "stop": stop})

    def touch(self, run_id: str) -> None:
        with self.pool.connection() as conn:
            conn.execute(query("touch_run"), {"run_id": run_id})

    def finish(
        self,
        run_id: str,
        status: Status,
        *,
        result: Any = None,
        error: dict[str, Any] | None = None,
    ) -> bool:
        result_type, result_bytes = self._dump(result) if result is not None else (None, None)
        with self.pool.connection() as conn:
            cur = conn.execute(
                query("finish_run"),
                {
                    "run_id": run_id,
                    "status": status,
                    "result_type": result_type,
                    "result": result_bytes,
                    "error": json.dumps(error) if error is not None else None,
                },
            )
            return bool(cur.rowcount > 0)

    def runs_of_thread(self, thread_id: str, limit: int = 20) -> list[dict[str, Any]]:
        with self.pool.connection() as conn:
            rows: list[dict[str, Any]] = conn.execute(
                query("runs_of_thread"), {"thread_id": thread_id, "limit": limit}
            ).fetchall()
        return rows

    # --- the step barrier ----------------------------------------------------------------

    def register_tasks(
        self,
        run_id: str,
        thread_id: str,
        checkpoint_id: str,
        tasks: Sequence[tuple[str, Sequence[Any]]],
    ) -> list[str]:
        """Open the step's barrier rows for (task id, path); returns the ids new here."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                query("register_tasks"),
                {
                    "run_id": run_id,
                    "checkpoint_id": checkpoint_id,
                    "task_ids": [tid for tid, _ in tasks],
                    "paths": [json.dumps(list(path)) for _, path in tasks],
                    "thread_id": thread_id,
                },
            ).fetchall()
        return [r["task_id"] for r in rows]

    def step_states(self, run_id: str, checkpoint_id: str) -> dict[str, str]:
        """Barrier state of a step's dispatched tasks: task id → 'dispatched' | 'done'."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                query("step_task_states"), {"run_id": run_id, "checkpoint_id": checkpoint_id}
            ).fetchall()
        return {r["task_id"]: r["status"] for r in rows}

    def claim_tasks(
        self,
        run_id: str,
        checkpoint_id: str,
        tasks: Sequence[tuple[str, int]],
        worker: str,
        lease: float,
    ) -> list[str]:
        """Start the lease of the (task id, attempts) still open; returns their ids in order.

        A message for an earlier attempt than the task's recorded retries claims nothing:
        the task is waiting out its backoff for a later job.
        """
        params = {"run_id": run_id, "checkpoint_id": checkpoint_id, "worker": worker}
        rows = [{**params, "task_id": t, "attempts": a, "lease": lease} for t, a in tasks]
        with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.execute(query("async_commit"))
            claimed = _each_returning(cur, query("claim_task"), rows)
        return [t for t, _ in tasks if t in claimed]

    def complete_tasks(
        self,
        run_id: str,
        checkpoint_id: str,
        task_ids: Sequence[str],
        worker: str | None = None,
        events: Mapping[str, Sequence[EventRow]] | None = None,
    ) -> tuple[int, int]:
        """Mark tasks done; returns (how many this call completed, tasks of the step open).

        The step row's counter is decremented in the same transaction, and its row lock
        serializes finishers, so exactly one of them sees zero. Only the events of the
        tasks this call completed are kept: a duplicate delivery's are dropped.
        """
        params = {"run_id": run_id, "checkpoint_id": checkpoint_id}
        with self.pool.connection() as conn, conn.transaction():
            with conn.cursor() as cur:
                done = _each_returning(
                    cur,
                    query("complete_task"),
                    [{**params, "task_id": t, "worker": worker} for t in task_ids],
                )
            if not done:
                return 0, -1  # other deliveries completed them: their events are the ones kept
            row = conn.execute(query("count_down_step"), {**params, "done": len(done)}).fetchone()
            kept = [e for t in task_ids if t in done for e in (events or {}).get(t, ())]
            if kept:
                with conn.cursor() as cur:
                    cur.executemany(query("add_event"), self._event_rows(run_id, kept))
        return len(done), int(row["open_tasks"]) if row else 0

    def renew_leases(
        self, run_id: str, checkpoint_id: str, task_ids: Sequence[str], lease: float
    ) -> None:
        params = {"run_id": run_id, "checkpoint_id": checkpoint_id, "lease": lease}
        with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany(query("renew_lease"), [{**params, "task_id": t} for t in task_ids])

    def schedule_retry(
        self, run_id: str, checkpoint_id: str, task_id: str, attempts: int, hold: float
    ) -> None:
        """Record a task's failed attempts; nobody re-sends it for ``hold`` seconds."""
        params = {
            "run_id": run_id,
            "checkpoint_id": checkpoint_id,
            "task_id": task_id,
            "attempts": attempts,
            "hold": hold,
        }
        with self.pool.connection() as conn:
            conn.execute(query("schedule_retry"), params)

    def stale_tasks(self, age: float, limit: int = 100) -> list[dict[str, Any]]:
        with self.pool.connection() as conn:
            rows: list[dict[str, Any]] = conn.execute(
                query("stale_tasks"), {"age": age, "limit": limit}
            ).fetchall()
        return rows

    def stalled_runs(self, age: float, limit: int = 100) -> list[str]:
        with self.pool.connection() as conn:
            rows = conn.execute(query("stalled_runs"), {"age": age, "limit": limit}).fetchall()
        return [str(r["run_id"]) for r in rows]

    # --- events --------------------------------------------------------------------------

    def add_events(self, run_id: str, chunks: Sequence[EventRow]) -> None:
        if not chunks:
            return
        with self.pool.connection() as conn, conn.cursor() as cur:
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

    def step_errors(self, run_id: str, checkpoint_id: str) -> list[dict[str, Any]]:
        """Errors recorded by this run's executions of the step that started at checkpoint."""
        with self.pool.connection() as conn:
            rows = conn.execute(query("error_events"), {"run_id": run_id}).fetchall()
        errors = [self._load(r["payload_type"], r["payload"]) for r in rows]
        return [
            e for e in errors if isinstance(e, dict) and e.get("checkpoint_id") == checkpoint_id
        ]

    def events_after(self, run_id: str, after: int) -> list[Event]:
        with self.pool.connection() as conn:
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

    # --- one coordinator per thread ------------------------------------------------------

    @contextmanager
    def thread_lock(self, thread_id: str) -> Iterator[bool]:
        """Try the thread's session advisory lock; yields whether we hold it."""
        with self.pool.connection() as conn:
            row = conn.execute(query("thread_lock"), {"thread_id": thread_id}).fetchone()
            locked = bool(row and row["locked"])
            try:
                yield locked
            finally:
                if locked:
                    # a broken connection releases the lock with its session anyway
                    with contextlib.suppress(psycopg.Error):
                        conn.execute(query("thread_unlock"), {"thread_id": thread_id})


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
