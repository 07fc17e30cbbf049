"""The run store in memory, for fast unit tests: the named queries, mirrored.

:class:`InMemoryConnector` has a method per query of ``workers/sql/queries.sql`` that
does to its tables (rows with the columns of Postgres' tables) what the statement does,
under one lock, and returns copies of the rows it returns. The store's rules are the
:class:`~workers.store.RunStore` above both. ``now()`` is the clock the store is given,
one a test moves by hand (``workers.testing.ManualClock``) to make heartbeats stale or
tasks wait without sleeping. No database driver is imported.
"""

from __future__ import annotations

import copy
import itertools
import json
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from graphruntime.checkpoint import SerializerProtocol
from workers.errors import StoreRecoveredError
from workers.store._connector import Row
from workers.store._model import INBOX_COLUMNS
from workers.store._refusals import accepts
from workers.store._store import RunStore

__all__ = ("InMemoryConnector", "InMemoryRunStore")

P = Mapping[str, Any]
ACTIVE = ("queued", "running")
NO_CLAIM = {"worker": None, "claimed_at": None, "claim_token": None}
NO_DEFAULT = {"default_type": None, "default_value": None}
NO_LEASE = {"lease_holder": None, "leased_at": None, "lease_token": None}
NO_WAIT_CLAIM = {"claimed_by": None, "claimed_until": None}


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
        self.server_epoch = str(uuid.uuid4())
        """Postgres' epoch (migration 0007); nothing here is lost in a crash, so it stays,
        unless a test changes it to stand for a crash recovery."""
        self._seq = itertools.count(1)

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
        found = self.workers.get(worker or "")
        return found is not None and found["heartbeat_at"] > self._ago(stale)

    def _lease(self, thread: Row | None, p: P) -> bool:
        """Lease the thread to ``p``'s worker and job if it is free, theirs, or held by a
        dead worker."""
        if thread is None:
            return False
        holder = thread["lease_holder"]
        if holder not in (None, p["worker"]) and self._alive(holder, p["stale"]):
            return False
        thread.update(lease_holder=p["worker"], leased_at=self.clock(), lease_token=p["token"])
        return True

    def _of_thread(self, thread_id: str) -> list[Row]:
        return sorted((r for r in self.runs.values() if r["thread_id"] == thread_id), key=_order)

    def _next(self, thread_id: str) -> Row | None:
        active = [r for r in self._of_thread(thread_id) if r["status"] in ACTIVE]
        return min(active, key=lambda r: r["kind"] != "cancel", default=None)

    def _pause(self, thread_id: str) -> str | None:
        """The pause a resume answers (create_run's ``latest``)."""
        runs = self._of_thread(thread_id)
        if not runs:
            return None
        last = runs[-1]
        under_way = last["kind"] == "resume" and last["status"] in ACTIVE
        return last["resumes_run"] if under_way else last["run_id"]  # type: ignore[no-any-return]

    def _bind(self, thread_id: str, graph: str) -> Row:
        new = {"thread_id": thread_id, "graph": graph, "created_at": self.clock(), **NO_LEASE}
        return self.threads.setdefault(thread_id, new)

    def _close_unheld(self, run_ids: Sequence[str], stale: float) -> None:
        for t in self.tasks.values():
            open_ = t["run_id"] in run_ids and t["status"] == "dispatched"
            if open_ and not self._alive(t["worker"], stale):
                t.update(status="done", done_at=self.clock())

    def _open_task(self, p: P) -> Row | None:
        task = self.tasks.get((p["run_id"], p["checkpoint_id"], p["task_id"]))
        return task if task is not None and task["status"] != "done" else None

    def _claimed(self, wait: Row) -> bool:
        """An approver's claim on the wait has not lapsed."""
        until = wait["claimed_until"]
        return until is not None and until > self.clock()

    def _active_threads(self) -> set[str]:
        return {r["thread_id"] for r in self.runs.values() if r["status"] in ACTIVE}

    # --- runs ----------------------------------------------------------------------------

    def create_run(self, p: P) -> list[Row]:
        if p["kind"] not in ("resume", "cancel"):
            self._bind(p["thread_id"], p["graph"])
        if not accepts(p, self.explain_refused_run(p)[0]):
            return []
        row = {k: p[k] for k in ("run_id", "thread_id", "graph", "kind", "payload_type", "payload")}
        row |= {k: p[k] for k in ("idempotency_key", "request_digest")}
        row |= dict.fromkeys(("stop", "result_type", "result", "error"))
        row |= {"status": "queued", "origin": _json(p["origin"]), "seq": next(self._seq)}
        row |= {"created_at": self.clock(), "updated_at": self.clock()}
        row["resumes_run"] = self._pause(p["thread_id"]) if p["kind"] == "resume" else None
        self.runs[p["run_id"]] = row
        return [row]

    def explain_refused_run(self, p: P) -> list[Row]:
        runs = self._of_thread(p["thread_id"])
        key, pause = p["idempotency_key"], self._pause(p["thread_id"])
        key_run: Row = next((r for r in runs if key and r["idempotency_key"] == key), {})
        resumes = p["kind"] == "resume" and pause is not None
        pause_run: Row = next((r for r in runs if resumes and r["resumes_run"] == pause), {})
        waits = sorted(i for t, i in self.interrupts if t == p["thread_id"])
        return [
            {
                "thread_graph": self.threads.get(p["thread_id"], {}).get("graph"),
                "open_waits": waits or None,
                "latest_status": runs[-1]["status"] if runs else None,
                "same_key_run": key_run.get("run_id"),
                "same_key_digest": key_run.get("request_digest"),
                "same_pause_run": pause_run.get("run_id"),
                "same_pause_status": pause_run.get("status"),
            }
        ]

    def get_run(self, p: P) -> list[Row]:
        return [r for r in [self.runs.get(p["run_id"])] if r]

    def active_runs_of_thread(self, p: P) -> list[Row]:
        return [r for r in self._of_thread(p["thread_id"]) if r["status"] in ACTIVE]

    def set_running(self, p: P) -> list[Row]:
        if (run := self.runs.get(p["run_id"])) and run["status"] in ACTIVE:
            stop = p["stop"] if run["stop"] is None else run["stop"]
            run.update(status="running", stop=stop, updated_at=self.clock())
        return []

    def touch_run(self, p: P) -> list[Row]:
        if run := self.runs.get(p["run_id"]):
            run["updated_at"] = self.clock()
        return []

    def finish_run(self, p: P) -> list[Row]:
        run = self.runs.get(p["run_id"] or "")
        thread = p["thread_id"] if p["run_id"] is None else None
        if run is not None and run["status"] in ACTIVE:
            run.update(status=p["status"], result_type=p["result_type"], result=p["result"])
            run.update(error=_json(p["error"]), updated_at=self.clock())
            thread = run["thread_id"]
        if p["set_inbox"] and thread is not None:
            ids = p["interrupt_ids"] or []
            for key in [k for k in self.interrupts if k[0] == thread and k[1] not in ids]:
                del self.interrupts[key]
            for n, interrupt_id in enumerate(ids):
                new = {"created_at": self.clock(), **NO_WAIT_CLAIM}
                old = self.interrupts.get((thread, interrupt_id), new)
                row = {column: p[column + "s"][n] for column in INBOX_COLUMNS}
                row |= {"thread_id": thread, "value": json.loads(row["value"])}
                row["response_schema"] = _json(row["response_schema"])
                self.interrupts[(thread, interrupt_id)] = old | row  # keeps created_at, claim
        return [{"pg_notify": run["run_id"]}] if run is not None and thread else []

    def requeue_runs(self, p: P) -> list[Row]:
        for run in (self.runs[r] for r in p["run_ids"] if r in self.runs):
            run["status"] = "queued" if run["status"] == "running" else run["status"]
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
        ids = p["run_ids"]
        return [
            t for t in self.tasks.values() if t["run_id"] in ids and t["status"] == "dispatched"
        ]

    def resume_history(self, p: P) -> list[Row]:
        runs = reversed(self._of_thread(p["thread_id"]))
        return [r for r in runs if r["kind"] == "resume"][: p["limit"]]

    def runs_by_key(self, p: P) -> list[Row]:
        runs = self.runs.values()
        return [r for r in runs if r["graph"] == p["graph"] and r["idempotency_key"] == p["key"]]

    def runs_of_thread(self, p: P) -> list[Row]:
        keys = ("run_id", "status", "kind", "created_at", "updated_at", "error")
        runs = list(reversed(self._of_thread(p["thread_id"])))[: p["limit"]]
        return [{k: r[k] for k in keys} for r in runs]

    def list_runs(self, p: P) -> list[Row]:
        runs = [
            r
            for r in self.runs.values()
            if all(p[k] in (None, r[k]) for k in ("thread_id", "graph", "status"))
            and (p["age"] is None or r["created_at"] > self._ago(p["age"]))
        ]
        keys = ("run_id", "thread_id", "graph", "status", "kind", "created_at", "updated_at")
        out = []
        for run in sorted(runs, key=_order, reverse=True)[: p["limit"]]:
            mine = [t for t in self.tasks.values() if t["run_id"] == run["run_id"]]
            latest = max((t["checkpoint_id"] for t in mine), default=None)
            step = [t for t in mine if t["checkpoint_id"] == latest and run["status"] == "running"]
            done = sum(t["status"] == "done" for t in step)
            out.append({k: run[k] for k in (*keys, "error", "origin")})
            out[-1] |= {"tasks_done": done, "tasks_total": len(step)}
        return out

    def overview(self, p: P) -> list[Row]:
        statuses = [r["status"] for r in self.runs.values()]
        overdue = [w for w in self.interrupts.values() if _before(w["deadline"], self.clock())]
        live = [w for n, w in self.workers.items() if self._alive(n, p["stale"])]
        live = [w for w in live if not w["worker"].startswith("client:")]
        return [
            {
                "queued": statuses.count("queued"),
                "running": statuses.count("running"),
                "pending_interrupts": len(self.interrupts),
                "overdue": len(overdue),
                "workers": len({w["node"] or w["worker"] for w in live}),
                "processes": len(live),
            }
        ]

    # --- the inbox -----------------------------------------------------------------------

    def inbox_page(self, p: P) -> list[Row]:
        active, where = self._active_threads(), _json(p["where"])
        any_of = None if p["any_of"] is None else [json.loads(w) for w in p["any_of"]]
        threads, ids = p["thread_ids"], p["interrupt_ids"]
        pairs = None if threads is None else set(zip(threads, ids, strict=True))
        after = (p["after_at"], p["after_thread"], p["after_id"])
        rows = []
        for w in self.interrupts.values():
            key = (w["created_at"], w["thread_id"], w["interrupt_id"])
            if (
                all(p[k] in (None, w[k]) for k in ("graph", "node", "thread_id"))
                and (where is None or _contains(w["value"], where))
                and (any_of is None or any(_contains(w["value"], want) for want in any_of))
                and (p["older_than"] is None or w["created_at"] < p["older_than"])
                and (p["age"] is None or w["created_at"] < self._ago(p["age"]))
                and (p["after_at"] is None or key > after)
                and (pairs is None or key[1:] in pairs)
            ):
                claim = {} if self._claimed(w) else NO_WAIT_CLAIM
                rows.append(w | {"resuming": w["thread_id"] in active, **NO_DEFAULT, **claim})
        rows.sort(key=lambda w: (w["created_at"], w["thread_id"], w["interrupt_id"]))
        return rows[: p["limit"]]

    def claim_wait(self, p: P) -> list[Row]:
        if (wait := self.interrupts.get((p["thread_id"], p["interrupt_id"]))) is None:
            return []
        taken = not self._claimed(wait) or wait["claimed_by"] == p["actor"] or p["take_over"]
        if taken:
            until = self.clock() + timedelta(seconds=p["seconds"])
            wait.update(claimed_by=p["actor"], claimed_until=until)
        return [{k: wait[k] for k in NO_WAIT_CLAIM} | {"taken": taken}]

    def release_wait(self, p: P) -> list[Row]:
        wait = self.interrupts.get((p["thread_id"], p["interrupt_id"]))
        if wait is None or wait["claimed_by"] != p["actor"]:
            return []
        wait.update(NO_WAIT_CLAIM)
        return [{"thread_id": p["thread_id"]}]

    def expired_waits(self, p: P) -> list[Row]:
        active = self._active_threads()
        rows = [
            w | {"resuming": False}
            for w in self.interrupts.values()
            if _before(w["deadline"], self.clock())
            and w["default_type"] is not None
            and w["thread_id"] not in active
        ]
        return sorted(rows, key=lambda w: w["deadline"])[: p["limit"]]

    # --- thread leases and heartbeats ----------------------------------------------------

    def bind_thread(self, p: P) -> list[Row]:
        return [self._bind(p["thread_id"], p["graph"])]

    def acquire_thread(self, p: P) -> list[Row]:
        leased = self._lease(self.threads.get(p["thread_id"]), p)
        return [{"thread_id": p["thread_id"]}] if leased else []

    def release_leases(self, p: P) -> list[Row]:
        for thread in (self.threads.get(t) for t in p["threads"]):
            if thread and thread["lease_holder"] == p["worker"]:
                thread.update(NO_LEASE)
        return []

    def next_runs_of_threads(self, p: P) -> list[Row]:
        nexts = (self._next(t) for t in dict.fromkeys(p["threads"]))
        return [{"thread_id": r["thread_id"], "run_id": r["run_id"]} for r in nexts if r]

    def claim_run(self, p: P) -> list[Row]:
        if (target := self.runs.get(p["run_id"])) is None:
            return []
        row: Row = {"target_status": target["status"], "leased": False, "run_id": None}
        row["epoch"] = self.server_epoch
        if target["status"] in ACTIVE and self._lease(self.threads.get(target["thread_id"]), p):
            row["leased"] = True
            if run := self._next(target["thread_id"]):
                row |= run  # the run's status as it was
                if run["status"] == "queued":
                    run.update(status="running", updated_at=self.clock())
        return [row]

    def heartbeat(self, p: P) -> list[Row]:
        self.beat(p)
        worker, keep, cut = p["worker"], p["keep"], self._ago(p["grace"])
        for task in self.tasks.values():
            mine = (task["worker"], task["status"]) == (worker, "dispatched")
            if mine and task["claim_token"] != keep and _before(task["claimed_at"], cut):
                task.update(NO_CLAIM)
        freed = []
        for thread in self.threads.values():
            mine = thread["lease_holder"] == worker and thread["lease_token"] != keep
            if mine and _before(thread["leased_at"], cut):
                thread.update(NO_LEASE)
                freed.append({"thread_id": thread["thread_id"]})
        return freed

    def epoch(self, p: P) -> list[Row]:
        return [{"epoch": self.server_epoch}]

    def check_epoch(self, p: P) -> list[Row]:
        if p["epoch"] is not None and p["epoch"] != self.server_epoch:
            raise StoreRecoveredError("run store: the server recovered since this job began")
        return [{"graphruntime_check_epoch": True}]

    def beat(self, p: P) -> list[Row]:
        now = self.clock()
        new = {"worker": p["worker"], "hostname": p["hostname"], "pid": p["pid"], "started_at": now}
        said = {"heartbeat_at": now, "node": p["node"], "graphs": p["graphs"]}
        self.workers.setdefault(p["worker"], new).update(said)
        return []

    def remove_worker(self, p: P) -> list[Row]:
        self.workers.pop(p["worker"], None)
        return []

    def live_workers(self, p: P) -> list[Row]:
        return [w for name, w in sorted(self.workers.items()) if self._alive(name, p["stale"])]

    # --- the step barrier ----------------------------------------------------------------

    def register_tasks(self, p: P) -> list[Row]:
        step, new = (p["run_id"], p["checkpoint_id"]), []
        for task_id, path in zip(p["task_ids"], p["paths"], strict=True):
            if (*step, task_id) not in self.tasks:
                row = {"run_id": step[0], "checkpoint_id": step[1], "task_id": task_id, **NO_CLAIM}
                row |= {"thread_id": p["thread_id"], "status": "dispatched", "attempts": 1}
                row |= {"task_path": json.loads(path), "dispatched_at": self.clock()}
                row |= {"retry_attempts": 0, **dict.fromkeys(("hold_until", "error", "done_at"))}
                self.tasks[(*step, task_id)] = row | {"started_at": None}
                new.append({"task_id": task_id})
        self.steps[step] = self.steps.get(step, 0) + len(new)
        return new

    def step_tasks(self, p: P) -> list[Row]:
        step = (p["run_id"], p["checkpoint_id"])
        return [t for t in self.tasks.values() if (t["run_id"], t["checkpoint_id"]) == step]

    def async_commit(self, p: P) -> list[Row]:
        return []

    def claim_task(self, p: P) -> list[Row]:
        task = self._open_task(p)
        if task is None or task["task_path"] != json.loads(p["path"]):
            return []
        held = task["worker"] not in (None, p["worker"]) and self._alive(task["worker"], p["stale"])
        if held or task["retry_attempts"] > p["attempts"]:
            return []
        task.update(worker=p["worker"], claimed_at=self.clock(), claim_token=p["token"])
        task["started_at"] = task["started_at"] or self.clock()
        return [{"task_id": p["task_id"]}]

    def complete_task(self, p: P) -> list[Row]:
        if (task := self._open_task(p)) is None or task["worker"] != p["worker"]:
            return []
        task.update(status="done", done_at=self.clock(), error=_json(p["error"]))
        return [{"task_id": p["task_id"]}]

    def release_claims(self, p: P) -> list[Row]:
        for task in (self._open_task({**p, "task_id": t}) for t in p["task_ids"]):
            if task and task["worker"] == p["worker"]:
                task.update(NO_CLAIM)
        return []

    def count_down_step(self, p: P) -> list[Row]:
        if (step := (p["run_id"], p["checkpoint_id"])) not in self.steps:
            return []
        self.steps[step] -= p["done"]
        return [{"open_tasks": self.steps[step]}]

    def hold_for_retry(self, p: P) -> list[Row]:
        if task := self._open_task(p):
            hold = self.clock() + timedelta(seconds=p["hold"])
            task.update(NO_CLAIM, retry_attempts=p["attempts"], hold_until=hold)
        return []

    # --- the sweeper ---------------------------------------------------------------------

    def orphaned_tasks(self, p: P) -> list[Row]:
        found: list[Row] = []
        for task in sorted(self.tasks.values(), key=lambda t: t["dispatched_at"]):
            run = self.runs.get(task["run_id"], {"status": None})
            lost = (
                task["dispatched_at"] < self._ago(p["unclaimed"])
                if task["worker"] is None
                else not self._alive(task["worker"], p["stale"])
            )
            held = task["hold_until"] is not None and task["hold_until"] >= self.clock()
            if lost and not held and task["status"] == "dispatched" and run["status"] in ACTIVE:
                task.update(NO_CLAIM, dispatched_at=self.clock(), attempts=task["attempts"] + 1)
                found.append(task)
            if len(found) >= p["limit"]:
                break
        return found

    def stalled_runs(self, p: P) -> list[Row]:
        found: list[Row] = []
        nexts = (self._next(t) for t in dict.fromkeys(r["thread_id"] for r in self.runs.values()))
        for run in sorted((r for r in nexts if r), key=lambda r: r["updated_at"]):
            holder = self.threads.get(run["thread_id"], {}).get("lease_holder")
            tasks = (t for t in self.tasks.values() if t["run_id"] == run["run_id"])
            if (
                len(found) < p["limit"]
                and _before(run["updated_at"], self._ago(p["idle"]))
                and not any(t["status"] == "dispatched" for t in tasks)
                and not self._alive(holder, p["stale"])
            ):
                run["updated_at"] = self.clock()
                found.append({"run_id": run["run_id"]})
        return found

    # --- events --------------------------------------------------------------------------

    def add_event(self, p: P) -> list[Row]:
        self.events.append({**p, "seq": next(self._seq)})
        return []

    def lock_run_events(self, p: P) -> list[Row]:
        return []  # the connector's lock serializes every transaction

    def append_events(self, p: P) -> list[Row]:
        for ns, mode, type_, payload in zip(
            p["ns"], p["modes"], p["types"], p["payloads"], strict=True
        ):
            self.add_event(
                {
                    "run_id": p["run_id"],
                    "ns": ns,
                    "mode": mode,
                    "payload_type": type_,
                    "payload": payload,
                }
            )
        return []

    def events_after(self, p: P) -> list[Row]:
        return [e for e in self.events if e["run_id"] == p["run_id"] and e["seq"] > p["after"]]


class InMemoryRunStore(RunStore):
    """A :class:`~workers.store.RunStore` on :class:`InMemoryConnector`."""

    def __init__(
        self, serde: SerializerProtocol | None = None, clock: Callable[[], datetime] | None = None
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
            return self.memory.threads.get(thread_id, {}).get("lease_holder")
