"""The run store in memory, for fast unit tests: the named queries, mirrored.

:class:`InMemoryConnector` has one method per query of ``workers/sql/queries.sql``,
doing to its tables (dicts of rows, with the columns of Postgres' tables) what the
statement does, under one lock (a transaction), and returning the rows it returns
(copies: nothing a caller holds aliases what is stored). The store's rules are the
same :class:`~workers.store.RunStore` above both. ``now()`` is a clock the test can
move (:class:`ManualClock`), so heartbeats going stale and tasks waiting for a worker
are decided without sleeping. It imports no database driver.
"""

from __future__ import annotations

import copy
import itertools
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from graphruntime.checkpoint import SerializerProtocol
from workers.store._store import Row, RunStore

__all__ = ("InMemoryConnector", "InMemoryRunStore", "ManualClock")

P = Mapping[str, Any]
ACTIVE = ("queued", "running")
_INBOX = (  # the inbox row's columns, and the arrays of finish_run that carry them
    ("interrupt_id", "ids"),
    ("graph", "graphs"),
    ("run_id", "run_ids"),
    ("checkpoint_id", "checkpoint_ids"),
    ("node", "nodes"),
    ("namespace", "namespaces"),
    ("value", "values"),
    ("deadline", "deadlines"),
    ("default_type", "default_types"),
    ("default_value", "default_values"),
)
_NO_CLAIM = {"worker": None, "claimed_at": None, "claim_token": None}
_NO_LEASE = {"lease_holder": None, "leased_at": None, "lease_token": None}


class ManualClock:
    """A clock tests move by hand (``advance``); starts at a fixed instant."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def _json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _order(run: Row) -> tuple[datetime, int]:
    """created_at, then the order of creation (Postgres' clock_timestamp() never ties)."""
    return run["created_at"], run["seq"]


def _before(at: datetime | None, cut: datetime) -> bool:
    return at is not None and at < cut


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


class InMemoryConnector:
    """The store's named queries in memory (see the module docstring)."""

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self.clock = clock
        self.lock = threading.RLock()
        self.runs: dict[str, Row] = {}
        self.threads: dict[str, Row] = {}
        self.workers: dict[str, Row] = {}
        self.tasks: dict[tuple[str, str, str], Row] = {}
        self.steps: dict[tuple[str, str], int] = {}
        self.events: list[Row] = []
        self.interrupts: dict[tuple[str, str], Row] = {}
        self._seq = itertools.count(1)

    # --- the connector -------------------------------------------------------------------

    @contextmanager
    def session(self, operation: str, *, transaction: bool = False) -> Iterator[InMemoryConnector]:
        with self.lock:
            yield self

    def batch(self, operation: str, statements: Sequence[tuple[str, P]]) -> list[list[Row]]:
        with self.lock:
            return [self.all(name, params) for name, params in statements]

    def all(self, name: str, params: P | None = None) -> list[Row]:
        with self.lock:
            rows: list[Row] = getattr(self, name)(params or {})
            return copy.deepcopy(rows)

    def many(self, name: str, params: Sequence[P], *, returning: bool = True) -> list[list[Row]]:
        with self.lock:
            out = [self.all(name, p) for p in params]
        return out if returning else []

    # --- helpers -------------------------------------------------------------------------

    def _ago(self, seconds: float) -> datetime:
        return self.clock() - timedelta(seconds=seconds)

    def _alive(self, worker: str | None, stale: float) -> bool:
        found = self.workers.get(worker) if worker is not None else None
        return found is not None and found["heartbeat_at"] > self._ago(stale)

    def _free(self, thread: Row, worker: str, stale: float) -> bool:
        holder = thread["lease_holder"]
        return holder is None or holder == worker or not self._alive(holder, stale)

    def _of_thread(self, thread_id: str) -> list[Row]:
        return sorted((r for r in self.runs.values() if r["thread_id"] == thread_id), key=_order)

    def _next(self, thread_id: str) -> Row | None:
        active = [r for r in self._of_thread(thread_id) if r["status"] in ACTIVE]
        return min(active, key=lambda r: r["kind"] != "cancel", default=None)

    def _pause(self, thread_id: str) -> str | None:
        """The pause a resume answers (see create_run's ``latest``)."""
        runs = self._of_thread(thread_id)
        if not runs:
            return None
        last = runs[-1]
        under_way = last["kind"] == "resume" and last["status"] in ACTIVE
        return str(last["resumes_run"] if under_way else last["run_id"])

    def _bind(self, thread_id: str, graph: str) -> Row:
        new = {"thread_id": thread_id, "graph": graph, "created_at": self.clock(), **_NO_LEASE}
        return self.threads.setdefault(thread_id, new)

    def _close_unheld(self, run_ids: Sequence[str], stale: float) -> None:
        for task in self.tasks.values():
            if task["run_id"] in run_ids and task["status"] == "dispatched":
                if task["worker"] is None or not self._alive(task["worker"], stale):
                    task.update(status="done", done_at=self.clock())

    def _set_inbox(self, thread_id: str, p: P) -> None:
        ids = p["ids"] or []
        for key in [k for k in self.interrupts if k[0] == thread_id and k[1] not in ids]:
            del self.interrupts[key]
        for n, interrupt_id in enumerate(ids):
            old = self.interrupts.get((thread_id, interrupt_id))
            row = {column: p[array][n] for column, array in _INBOX}
            row["value"] = json.loads(row["value"])
            created = old["created_at"] if old else self.clock()
            self.interrupts[(thread_id, interrupt_id)] = {
                **(old or {}),
                **row,
                "thread_id": thread_id,
                "created_at": created,
            }

    # --- runs ----------------------------------------------------------------------------

    def create_run(self, p: P) -> list[Row]:
        if p["kind"] not in ("resume", "cancel"):
            self._bind(p["thread_id"], p["graph"])
        why = self.explain_refused_run(p)[0]
        waits, answers = why["open_waits"] or [], p["answers"]
        accepted = why["thread_graph"] == p["graph"]
        if p["kind"] == "resume":
            accepted = accepted and (
                bool(answers) and set(answers) <= set(waits)
                if answers is not None
                else bool(waits) or why["latest_status"] in ("interrupted", *ACTIVE)
            )
        if not accepted or why["same_key_run"] or why["same_pause_run"]:
            return []
        now = self.clock()
        row = {
            **{k: p[k] for k in ("run_id", "thread_id", "graph", "kind", "payload_type")},
            **{k: p[k] for k in ("payload", "idempotency_key", "request_digest")},
            "status": "queued",
            "origin": _json(p["origin"]),
            "resumes_run": self._pause(p["thread_id"]) if p["kind"] == "resume" else None,
            "created_at": now,
            "updated_at": now,
            "seq": next(self._seq),
            **dict.fromkeys(("stop", "result_type", "result", "error")),
        }
        self.runs[row["run_id"]] = row
        return [row]

    def explain_refused_run(self, p: P) -> list[Row]:
        runs = self._of_thread(p["thread_id"])
        thread = self.threads.get(p["thread_id"])
        key, pause = p["idempotency_key"], None
        if p["kind"] == "resume":
            pause = self._pause(p["thread_id"])
        same_key = next((r for r in runs if key is not None and r["idempotency_key"] == key), None)
        same_pause = next(
            (r for r in runs if pause is not None and r["resumes_run"] == pause), None
        )
        waits = sorted(i for t, i in self.interrupts if t == p["thread_id"])
        return [
            {
                "thread_graph": thread["graph"] if thread else None,
                "open_waits": waits or None,
                "latest_status": runs[-1]["status"] if runs else None,
                "same_key_run": same_key and same_key["run_id"],
                "same_key_digest": same_key and same_key["request_digest"],
                "same_pause_run": same_pause and same_pause["run_id"],
                "same_pause_status": same_pause and same_pause["status"],
            }
        ]

    def get_run(self, p: P) -> list[Row]:
        run = self.runs.get(p["run_id"])
        return [run] if run else []

    def next_run(self, p: P) -> list[Row]:
        run = self._next(p["thread_id"])
        return [run] if run else []

    def active_runs_of_thread(self, p: P) -> list[Row]:
        return [r for r in self._of_thread(p["thread_id"]) if r["status"] in ACTIVE]

    def set_running(self, p: P) -> list[Row]:
        run = self.runs.get(p["run_id"])
        if run and run["status"] in ACTIVE:
            stop = p["stop"] if run["stop"] is None else run["stop"]
            run.update(status="running", stop=stop, updated_at=self.clock())
        return []

    def touch_run(self, p: P) -> list[Row]:
        if run := self.runs.get(p["run_id"]):
            run["updated_at"] = self.clock()
        return []

    def finish_run(self, p: P) -> list[Row]:
        run = self.runs.get(p["run_id"]) if p["run_id"] is not None else None
        thread = p["thread_id"] if p["run_id"] is None else None
        if run is not None and run["status"] in ACTIVE:
            run.update(status=p["status"], result_type=p["result_type"], result=p["result"])
            run.update(error=_json(p["error"]), updated_at=self.clock())
            thread = run["thread_id"]
        if p["set_inbox"] and thread is not None:
            self._set_inbox(thread, p)
        return [{"pg_notify": run["run_id"]}] if run is not None and thread else []

    def requeue_runs(self, p: P) -> list[Row]:
        for run_id in p["run_ids"]:
            run = self.runs.get(run_id)
            if run and run["status"] == "running":
                run["status"] = "queued"
        return []

    def cancel_thread(self, p: P) -> list[Row]:
        made = _order(self.runs[p["cancel_run"]])
        cancelled = []
        for run in self._of_thread(p["thread_id"]):
            if run["status"] in ACTIVE and run["kind"] != "cancel" and _order(run) < made:
                run.update(status="cancelled", error=_json(p["error"]), updated_at=self.clock())
                cancelled.append(run["run_id"])
        self._close_unheld(cancelled, p["stale"])
        for key in [k for k in self.interrupts if k[0] == p["thread_id"]]:
            del self.interrupts[key]
        return [{"run_id": r} for r in cancelled]

    def running_cancelled_tasks(self, p: P) -> list[Row]:
        self._close_unheld(p["run_ids"], p["stale"])
        return [
            t
            for t in self.tasks.values()
            if t["run_id"] in p["run_ids"] and t["status"] == "dispatched" and t["worker"]
        ]

    def resume_history(self, p: P) -> list[Row]:
        runs = reversed(self._of_thread(p["thread_id"]))
        return [r for r in runs if r["kind"] == "resume"][: p["limit"]]

    def runs_by_key(self, p: P) -> list[Row]:
        return [
            r
            for r in self.runs.values()
            if r["graph"] == p["graph"] and r["idempotency_key"] == p["key"]
        ]

    def runs_of_thread(self, p: P) -> list[Row]:
        runs = list(reversed(self._of_thread(p["thread_id"])))[: p["limit"]]
        keys = ("run_id", "status", "kind", "created_at", "updated_at", "error")
        return [{k: r[k] for k in keys} for r in runs]

    def list_runs(self, p: P) -> list[Row]:
        runs = [
            r
            for r in self.runs.values()
            if all(p[k] is None or r[k] == p[k] for k in ("thread_id", "graph", "status"))
            and (p["age"] is None or r["created_at"] > self._ago(p["age"]))
        ]
        keys = ("run_id", "thread_id", "graph", "status", "kind", "created_at", "updated_at")
        out = []
        for run in sorted(runs, key=_order, reverse=True)[: p["limit"]]:
            mine = [t for t in self.tasks.values() if t["run_id"] == run["run_id"]]
            latest = max((t["checkpoint_id"] for t in mine), default=None)
            step = [t for t in mine if t["checkpoint_id"] == latest and run["status"] == "running"]
            out.append(
                {k: run[k] for k in (*keys, "error", "origin")}
                | {"tasks_done": sum(t["status"] == "done" for t in step), "tasks_total": len(step)}
            )
        return out

    def overview(self, p: P) -> list[Row]:
        runs, now = self.runs.values(), self.clock()
        waits = self.interrupts.values()
        return [
            {
                "queued": sum(r["status"] == "queued" for r in runs),
                "running": sum(r["status"] == "running" for r in runs),
                "pending_interrupts": len(self.interrupts),
                "overdue": sum(w["deadline"] is not None and w["deadline"] < now for w in waits),
                "workers": sum(
                    self._alive(w, p["stale"]) and not w.startswith("client:") for w in self.workers
                ),
            }
        ]

    # --- the inbox -----------------------------------------------------------------------

    def inbox_page(self, p: P) -> list[Row]:
        active = {r["thread_id"] for r in self.runs.values() if r["status"] in ACTIVE}
        where = _json(p["where"])
        pairs = None if p["thread_ids"] is None else set(zip(p["thread_ids"], p["interrupt_ids"]))
        after = (p["after_at"], p["after_thread"], p["after_id"])
        rows = []
        for w in self.interrupts.values():
            key = (w["created_at"], w["thread_id"], w["interrupt_id"])
            if (
                (p["graph"] is None or w["graph"] == p["graph"])
                and (where is None or _contains(w["value"], where))
                and (p["node"] is None or w["node"] == p["node"])
                and (p["older_than"] is None or w["created_at"] < p["older_than"])
                and (p["age"] is None or w["created_at"] < self._ago(p["age"]))
                and (p["after_at"] is None or key > after)
                and (pairs is None or key[1:] in pairs)
            ):
                rows.append({**w, "resuming": w["thread_id"] in active})
        rows.sort(key=lambda w: (w["created_at"], w["thread_id"], w["interrupt_id"]))
        return rows[: p["limit"]]

    def expired_waits(self, p: P) -> list[Row]:
        active = {r["thread_id"] for r in self.runs.values() if r["status"] in ACTIVE}
        rows = [
            {**w, "resuming": False}
            for w in self.interrupts.values()
            if w["deadline"] is not None
            and w["deadline"] < self.clock()
            and w["default_type"] is not None
            and w["thread_id"] not in active
        ]
        return sorted(rows, key=lambda w: w["deadline"])[: p["limit"]]

    # --- thread leases and heartbeats ----------------------------------------------------

    def bind_thread(self, p: P) -> list[Row]:
        return [self._bind(p["thread_id"], p["graph"])]

    def acquire_thread(self, p: P) -> list[Row]:
        thread = self.threads.get(p["thread_id"])
        if thread is None or not self._free(thread, p["worker"], p["stale"]):
            return []
        thread.update(lease_holder=p["worker"], leased_at=self.clock(), lease_token=p["token"])
        return [{"thread_id": p["thread_id"]}]

    def release_leases(self, p: P) -> list[Row]:
        for thread_id in p["threads"]:
            thread = self.threads.get(thread_id)
            if thread and thread["lease_holder"] == p["worker"]:
                thread.update(_NO_LEASE)
        return []

    def next_runs_of_threads(self, p: P) -> list[Row]:
        nexts = (self._next(t) for t in dict.fromkeys(p["threads"]))
        return [{"thread_id": r["thread_id"], "run_id": r["run_id"]} for r in nexts if r]

    def claim_run(self, p: P) -> list[Row]:
        target = self.runs.get(p["run_id"])
        if target is None:
            return []
        row: Row = {"target_status": target["status"], "leased": False, "run_id": None}
        thread = self.threads.get(target["thread_id"])
        if target["status"] in ACTIVE and thread and self._free(thread, p["worker"], p["stale"]):
            thread.update(lease_holder=p["worker"], leased_at=self.clock(), lease_token=p["token"])
            row["leased"] = True
            if run := self._next(target["thread_id"]):
                row.update(run)  # the run's status as it was
                if run["status"] == "queued":
                    run.update(status="running", updated_at=self.clock())
        return [row]

    def heartbeat(self, p: P) -> list[Row]:
        self.beat(p)
        worker, keep, cut = p["worker"], p["keep"], self._ago(p["grace"])
        for task in self.tasks.values():
            if task["worker"] == worker and task["status"] == "dispatched":
                if task["claim_token"] != keep and _before(task["claimed_at"], cut):
                    task.update(_NO_CLAIM)
        freed = []
        for thread in self.threads.values():
            if thread["lease_holder"] == worker and thread["lease_token"] != keep:
                if _before(thread["leased_at"], cut):
                    thread.update(_NO_LEASE)
                    freed.append({"thread_id": thread["thread_id"]})
        return freed

    def beat(self, p: P) -> list[Row]:
        now = self.clock()
        new = {"worker": p["worker"], "hostname": p["hostname"], "pid": p["pid"], "started_at": now}
        self.workers.setdefault(p["worker"], new)["heartbeat_at"] = now
        return []

    def remove_worker(self, p: P) -> list[Row]:
        self.workers.pop(p["worker"], None)
        return []

    def live_workers(self, p: P) -> list[Row]:
        return [w for name, w in sorted(self.workers.items()) if self._alive(name, p["stale"])]

    # --- the step barrier ----------------------------------------------------------------

    def register_tasks(self, p: P) -> list[Row]:
        run_id, checkpoint_id, new = p["run_id"], p["checkpoint_id"], []
        for task_id, path in zip(p["task_ids"], p["paths"], strict=True):
            if (run_id, checkpoint_id, task_id) not in self.tasks:
                self.tasks[(run_id, checkpoint_id, task_id)] = {
                    "run_id": run_id,
                    "checkpoint_id": checkpoint_id,
                    "task_id": task_id,
                    "thread_id": p["thread_id"],
                    "status": "dispatched",
                    "task_path": json.loads(path),
                    "dispatched_at": self.clock(),
                    "attempts": 1,
                    "retry_attempts": 0,
                    **_NO_CLAIM,
                    **dict.fromkeys(("hold_until", "error", "started_at", "done_at")),
                }
                new.append({"task_id": task_id})
        step = (run_id, checkpoint_id)
        self.steps[step] = self.steps.get(step, 0) + len(new)
        return new

    def step_tasks(self, p: P) -> list[Row]:
        step = (p["run_id"], p["checkpoint_id"])
        return [t for t in self.tasks.values() if (t["run_id"], t["checkpoint_id"]) == step]

    def async_commit(self, p: P) -> list[Row]:
        return []

    def _task(self, p: P) -> Row | None:
        task = self.tasks.get((p["run_id"], p["checkpoint_id"], p["task_id"]))
        return task if task is not None and task["status"] != "done" else None

    def claim_task(self, p: P) -> list[Row]:
        task = self._task(p)
        if task is None or task["task_path"] != json.loads(p["path"]):
            return []
        if task["retry_attempts"] > p["attempts"]:
            return []
        if task["worker"] not in (None, p["worker"]) and self._alive(task["worker"], p["stale"]):
            return []
        now = self.clock()
        task.update(worker=p["worker"], claimed_at=now, claim_token=p["token"])
        task["started_at"] = task["started_at"] or now
        return [{"task_id": p["task_id"]}]

    def complete_task(self, p: P) -> list[Row]:
        task = self._task(p)
        if task is None or task["worker"] != p["worker"]:
            return []
        task.update(status="done", done_at=self.clock(), error=_json(p["error"]))
        return [{"task_id": p["task_id"]}]

    def release_claims(self, p: P) -> list[Row]:
        for task_id in p["task_ids"]:
            task = self._task({**p, "task_id": task_id})
            if task is not None and task["worker"] == p["worker"]:
                task.update(_NO_CLAIM)
        return []

    def count_down_step(self, p: P) -> list[Row]:
        step = (p["run_id"], p["checkpoint_id"])
        if step not in self.steps:
            return []
        self.steps[step] -= p["done"]
        return [{"open_tasks": self.steps[step]}]

    def hold_for_retry(self, p: P) -> list[Row]:
        if task := self._task(p):
            hold = self.clock() + timedelta(seconds=p["hold"])
            task.update(_NO_CLAIM, retry_attempts=p["attempts"], hold_until=hold)
        return []

    # --- the sweeper ---------------------------------------------------------------------

    def orphaned_tasks(self, p: P) -> list[Row]:
        now, found = self.clock(), list[Row]()
        for task in sorted(self.tasks.values(), key=lambda t: t["dispatched_at"]):
            if len(found) >= p["limit"]:
                break
            run = self.runs.get(task["run_id"])
            if task["status"] != "dispatched" or run is None or run["status"] not in ACTIVE:
                continue
            if task["hold_until"] is not None and task["hold_until"] >= now:
                continue
            if task["worker"] is None:
                if task["dispatched_at"] >= self._ago(p["unclaimed"]):
                    continue
            elif self._alive(task["worker"], p["stale"]):
                continue
            task.update(_NO_CLAIM, dispatched_at=now, attempts=task["attempts"] + 1)
            found.append(task)
        return found

    def stalled_runs(self, p: P) -> list[Row]:
        nexts = (self._next(t) for t in dict.fromkeys(r["thread_id"] for r in self.runs.values()))
        found: list[Row] = []
        for run in sorted((r for r in nexts if r), key=lambda r: r["updated_at"]):
            thread = self.threads.get(run["thread_id"])
            if len(found) >= p["limit"]:
                break
            if thread is None or run["updated_at"] >= self._ago(p["idle"]):
                continue
            if any(
                t["run_id"] == run["run_id"] and t["status"] == "dispatched"
                for t in self.tasks.values()
            ):
                continue
            if thread["lease_holder"] is None or not self._alive(
                thread["lease_holder"], p["stale"]
            ):
                run["updated_at"] = self.clock()
                found.append({"run_id": run["run_id"]})
        return found

    # --- events --------------------------------------------------------------------------

    def add_event(self, p: P) -> list[Row]:
        self.events.append({**p, "seq": next(self._seq)})
        return []

    def events_after(self, p: P) -> list[Row]:
        return [e for e in self.events if e["run_id"] == p["run_id"] and e["seq"] > p["after"]]


class InMemoryRunStore(RunStore):
    """A :class:`~workers.store.RunStore` on :class:`InMemoryConnector`."""

    def __init__(
        self,
        serde: SerializerProtocol | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.clock = clock or (lambda: datetime.now(UTC))
        self.memory = InMemoryConnector(self.clock)
        super().__init__(self.memory, serde)

    def task_row(self, run_id: str, checkpoint_id: str, task_id: str) -> Row:
        """A copy of a barrier row, for assertions."""
        with self.memory.lock:
            return dict(self.memory.tasks[(run_id, checkpoint_id, task_id)])

    def thread_lease(self, thread_id: str) -> str | None:
        with self.memory.lock:
            thread = self.memory.threads.get(thread_id)
            return thread["lease_holder"] if thread is not None else None
