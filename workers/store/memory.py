"""The run store in memory, for fast unit tests: the named queries, mirrored.

:class:`InMemoryConnector` has a method per query of ``workers/sql/queries.sql`` that
does to its tables (rows with the columns of Postgres' tables) what the statement does,
under one lock, and returns copies of the rows it returns. The store's rules are the
:class:`~workers.store.RunStore` above both; a query made of others' parts (a claim
leases as ``acquire_thread`` does, a cancel closes tasks as ``running_cancelled_tasks``)
is made of the same methods here, and the statements' WHERE and SET clauses are two
helpers (:func:`_where`, :func:`_set`). ``now()`` is the clock the store is given, one a
test moves by hand (``workers.testing.ManualClock``). No database driver is imported.
"""

from __future__ import annotations

import base64
import copy
import itertools
import json
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from graphruntime.checkpoint import SerializerProtocol
from workers.errors import StoreRecoveredError
from workers.store._connector import Row
from workers.store._refusals import refusal
from workers.store._store import RunStore

__all__ = ("InMemoryConnector", "InMemoryRunStore")

P = Mapping[str, Any]
ACTIVE = ("queued", "running")
NO_CLAIM = {"worker": None, "claimed_at": None, "claim_token": None}
NO_LEASE = {"lease_holder": None, "leased_at": None, "lease_token": None}
NO_WAIT_CLAIM = {"claimed_by": None, "claimed_until": None}
EVENT_COLUMNS = ("ns", "mode", "payload_type", "payload")
LISTED = ("run_id", "thread_id", "graph", "status", "kind", "created_at", "updated_at", "error")
# the columns' defaults (the migrations'), of a row an INSERT does not give them
NEW_RUN = {"status": "queued"} | dict.fromkeys(("stop", "result_type", "result", "error"))
NEW_TASK = {**NO_CLAIM, "status": "dispatched", "attempts": 1, "retry_attempts": 0} | dict.fromkeys(
    ("hold_until", "error", "done_at", "started_at")
)


def _json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _where(rows: Iterable[Row], **values: Any) -> list[Row]:
    """The rows with these values (a tuple: one of its values), as SQL's WHERE."""
    return [
        r
        for r in rows
        if all(r[c] in v if isinstance(v, tuple) else r[c] == v for c, v in values.items())
    ]


def _set(rows: Iterable[Row], **values: Any) -> list[Row]:
    """The rows, given these values, as SQL's UPDATE ... SET ... RETURNING."""
    rows = list(rows)
    for row in rows:
        row.update(values)
    return rows


def _row(table: Mapping[Any, Row], key: Any) -> list[Row]:
    """The table's row of this key, if there is one (a WHERE on its primary key)."""
    return [table[key]] if key in table else []


def _given(p: P, *columns: str) -> dict[str, Any]:
    """``p``'s values of these columns, those it gives (a NULL parameter matches any row)."""
    return {c: p[c] for c in columns if p[c] is not None}


def _order(run: Row) -> tuple[datetime, int]:
    """created_at, then the order of creation (Postgres' clock_timestamp() never ties)."""
    return run["created_at"], run["seq"]


def _place(wait: Row) -> tuple[datetime, str, str]:
    """A wait's place in the inbox's order."""
    return wait["created_at"], wait["thread_id"], wait["interrupt_id"]


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


def _waits(p: P) -> list[Row]:
    """end_runs' waits, as the table's columns."""
    rows: list[Row] = json.loads(p["waits"] or "[]")
    for row in rows:
        row |= {column: _json(row[column]) for column in ("value", "response_schema")}
        row["default_value"] = _bytes(row["default_value"])
        if row["deadline"] is not None:
            row["deadline"] = datetime.fromisoformat(row["deadline"])
    return rows


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _nothing(self: InMemoryConnector, p: P) -> None:
    """A statement with nothing to do here (one lock serializes every transaction)."""


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
            # a statement that returns no rows returns None here
            return [copy.deepcopy(getattr(self, name)(params) or []) for name, params in statements]

    def all(self, name: str, params: P | None = None) -> list[Row]:
        return self.batch(name, [(name, params or {})])[0]

    def many(self, name: str, params: Sequence[P], *, returning: bool = True) -> list[list[Row]]:
        out = self.batch(name, [(name, p) for p in params])
        return out if returning else []

    # --- what the statements share -------------------------------------------------------

    def _ago(self, seconds: float) -> datetime:
        return self.clock() - timedelta(seconds=seconds)

    def _alive(self, worker: str | None, stale: float) -> bool:
        found = self.workers.get(worker or "")
        return found is not None and found["heartbeat_at"] > self._ago(stale)

    def _held(self, holder: str | None, p: P) -> bool:
        """A live worker other than ``p``'s holds it (a lease, a claim): not to be taken."""
        return holder not in (None, p["worker"]) and self._alive(holder, p["stale"])

    def _of_thread(self, thread_id: str, **where: Any) -> list[Row]:
        """The thread's runs (``where``), in order."""
        return sorted(_where(self.runs.values(), thread_id=thread_id, **where), key=_order)

    def _next(self, thread_id: str) -> Row | None:
        runs = self._of_thread(thread_id, status=ACTIVE)
        return min(runs, key=lambda r: r["kind"] != "cancel", default=None)

    def _heads(self) -> list[Row]:
        """Each thread's next run, the least recently moved first."""
        nexts = (self._next(t) for t in dict.fromkeys(r["thread_id"] for r in self.runs.values()))
        return sorted((r for r in nexts if r), key=lambda r: r["updated_at"])

    def _pause(self, thread_id: str) -> str | None:
        """The pause a resume answers (create_run's ``latest``)."""
        runs = self._of_thread(thread_id)
        if not runs:
            return None
        under_way = runs[-1]["kind"] == "resume" and runs[-1]["status"] in ACTIVE
        return runs[-1]["resumes_run" if under_way else "run_id"]  # type: ignore[no-any-return]

    def _open_tasks(self, p: P, *task_ids: str) -> list[Row]:
        """The step's tasks of these ids (``p``'s task_id), those not done."""
        keys = ((p["run_id"], p["checkpoint_id"], t) for t in task_ids or [p["task_id"]])
        return [t for key in keys for t in _row(self.tasks, key) if t["status"] != "done"]

    def _claimed(self, wait: Row) -> bool:
        """An approver's claim on the wait has not lapsed."""
        until = wait["claimed_until"]
        return until is not None and until > self.clock()

    def _active_threads(self) -> set[str]:
        return {r["thread_id"] for r in _where(self.runs.values(), status=ACTIVE)}

    def _set_inbox(self, thread: str, waits: Sequence[Row]) -> None:
        """end_runs' inbox: the thread's waits are those of ``waits`` (rows of
        :func:`_waits`) of the thread; a wait kept keeps its created_at and claim."""
        rows = {w["interrupt_id"]: w for w in waits if w["thread_id"] == thread}
        for key in [k for k in self.interrupts if k[0] == thread and k[1] not in rows]:
            del self.interrupts[key]
        for interrupt_id, row in rows.items():
            new = {"created_at": self.clock(), **NO_WAIT_CLAIM}
            key = (thread, interrupt_id)
            self.interrupts[key] = self.interrupts.get(key, new) | row

    # --- runs ----------------------------------------------------------------------------

    def create_run(self, p: P) -> list[Row]:
        if p["kind"] not in ("resume", "cancel"):
            self.bind_thread(p)
        if refusal(p, self.explain_refused_run(p)[0]) is not None:
            return []
        given = ("run_id", "thread_id", "graph", "kind", "payload_type", "payload")
        row = NEW_RUN | {k: p[k] for k in (*given, "idempotency_key", "request_digest")}
        row |= {"origin": _json(p["origin"]), "seq": next(self._seq)}
        row |= {"created_at": self.clock(), "updated_at": self.clock()}
        row["resumes_run"] = self._pause(p["thread_id"]) if p["kind"] == "resume" else None
        self.runs[p["run_id"]] = row
        return [row]

    def explain_refused_run(self, p: P) -> list[Row]:
        runs, key = self._of_thread(p["thread_id"]), p["idempotency_key"]
        pause = self._pause(p["thread_id"]) if p["kind"] == "resume" else None
        key_run: Row = next((r for r in runs if key and r["idempotency_key"] == key), {})
        pause_run: Row = next((r for r in runs if pause and r["resumes_run"] == pause), {})
        why = {
            "thread_graph": self.threads.get(p["thread_id"], {}).get("graph"),
            "open_waits": sorted(i for t, i in self.interrupts if t == p["thread_id"]) or None,
            "latest_status": runs[-1]["status"] if runs else None,
            "same_key_run": key_run.get("run_id"),
            "same_key_digest": key_run.get("request_digest"),
            "same_pause_run": pause_run.get("run_id"),
            "same_pause_status": pause_run.get("status"),
        }
        return [why]

    def get_run(self, p: P) -> list[Row]:
        return _row(self.runs, p["run_id"])

    def active_runs_of_thread(self, p: P) -> list[Row]:
        return self._of_thread(p["thread_id"], status=ACTIVE)

    def set_running(self, p: P) -> None:
        for run in _where(self.get_run(p), status=ACTIVE):
            stop = p["stop"] if run["stop"] is None else run["stop"]
            run.update(status="running", stop=stop, updated_at=self.clock())

    def touch_run(self, p: P) -> None:
        _set(self.get_run(p), updated_at=self.clock())

    def end_runs(self, p: P) -> list[Row]:
        self.check_epoch(p)  # first: a refusal writes nothing
        ended: list[Row] = []
        waits = _waits(p)
        for end in json.loads(p["ends"] or "[]"):
            run = self.runs.get(end["run_id"])
            if run is None or run["status"] not in ACTIVE:
                continue
            run.update(status=end["status"], result_type=end["result_type"])
            run.update(result=_bytes(end["result"]), error=_json(end["error"]))
            run.update(updated_at=self.clock())
            ended.append(run)
            if end["set_inbox"]:
                self._set_inbox(run["thread_id"], waits)
        if p["inbox_thread"] is not None:
            self._set_inbox(p["inbox_thread"], waits)
        threads = p["threads"] or []
        leased = (self.threads[t] for t in threads if t in self.threads)
        _set(_where(leased, lease_holder=p["worker"]), **NO_LEASE)
        nexts = [n for n in (self._next(t) for t in dict.fromkeys(threads)) if n]
        return [
            {"thread_id": r["thread_id"], "run_id": r["run_id"], "ended": True} for r in ended
        ] + [{"thread_id": r["thread_id"], "run_id": r["run_id"], "ended": False} for r in nexts]

    def requeue_runs(self, p: P) -> None:
        # end_runs' epoch check, first: in Postgres its refusal rolls both back
        self.check_epoch(p)
        requeued = (self.runs[r] for r in p["requeue"] if r in self.runs)
        _set(_where(requeued, status="running"), status="queued")

    def cancel_thread(self, p: P) -> list[Row]:
        made, runs = _order(self.runs[p["cancel_run"]]), self.active_runs_of_thread(p)
        cancelled = [r for r in runs if r["kind"] != "cancel" and _order(r) < made]
        _set(cancelled, status="cancelled", error=_json(p["error"]), updated_at=self.clock())
        self.running_cancelled_tasks({**p, "run_ids": [r["run_id"] for r in cancelled]})
        self._set_inbox(p["thread_id"], [])
        return [{"run_id": r["run_id"]} for r in cancelled]

    def running_cancelled_tasks(self, p: P) -> list[Row]:
        tasks = (t for t in self.tasks.values() if t["run_id"] in p["run_ids"])
        open_ = _where(tasks, status="dispatched")
        unheld = [t for t in open_ if not self._alive(t["worker"], p["stale"])]
        _set(unheld, status="done", done_at=self.clock())
        return _where(open_, status="dispatched")

    def resume_history(self, p: P) -> list[Row]:
        return self._of_thread(p["thread_id"], kind="resume")[::-1][: p["limit"]]

    def runs_by_key(self, p: P) -> list[Row]:
        return _where(self.runs.values(), graph=p["graph"], idempotency_key=p["key"])

    def list_runs(self, p: P) -> list[Row]:
        runs = _where(self.runs.values(), **_given(p, "thread_id", "graph", "status"))
        runs = [r for r in runs if p["age"] is None or r["created_at"] > self._ago(p["age"])]
        out = []
        for run in sorted(runs, key=_order, reverse=True)[: p["limit"]]:
            mine = _where(self.tasks.values(), run_id=run["run_id"])
            latest = max((t["checkpoint_id"] for t in mine), default=None)
            step = _where(mine, checkpoint_id=latest) if run["status"] == "running" else []
            progress = {"tasks_done": len(_where(step, status="done")), "tasks_total": len(step)}
            out.append({k: run[k] for k in (*LISTED, "origin")} | progress)
        return out

    def overview(self, p: P) -> list[Row]:
        overdue = [w for w in self.interrupts.values() if _before(w["deadline"], self.clock())]
        live = [w for w in self.live_workers(p) if not w["worker"].startswith("client:")]
        row = {s: len(_where(self.runs.values(), status=s)) for s in ACTIVE}
        row |= {"overdue": len(overdue), "pending_interrupts": len(self.interrupts)}
        row |= {"processes": len(live), "workers": len({w["node"] or w["worker"] for w in live})}
        return [row]

    # --- the inbox -----------------------------------------------------------------------

    def inbox_page(self, p: P) -> list[Row]:
        active, where = self._active_threads(), _json(p["where"])
        wants = None if p["any_of"] is None else [json.loads(w) for w in p["any_of"]]
        threads, ids = p["thread_ids"], p["interrupt_ids"]
        pairs = None if threads is None else set(zip(threads, ids, strict=True))
        after = (p["after_at"], p["after_thread"], p["after_id"])
        waits = [
            w | {"default_type": None, "default_value": None, "resuming": w["thread_id"] in active}
            for w in _where(self.interrupts.values(), **_given(p, "graph", "node", "thread_id"))
            if (where is None or _contains(w["value"], where))
            and (wants is None or any(_contains(w["value"], want) for want in wants))
            and (p["older_than"] is None or w["created_at"] < p["older_than"])
            and (p["age"] is None or w["created_at"] < self._ago(p["age"]))
            and (p["after_at"] is None or _place(w) > after)
            and (pairs is None or _place(w)[1:] in pairs)
        ]
        page = sorted(waits, key=_place)[: p["limit"]]
        return [w | ({} if self._claimed(w) else NO_WAIT_CLAIM) for w in page]

    def claim_wait(self, p: P) -> list[Row]:
        if (wait := self.interrupts.get((p["thread_id"], p["interrupt_id"]))) is None:
            return []
        taken = not self._claimed(wait) or wait["claimed_by"] == p["actor"] or p["take_over"]
        if taken:
            until = self.clock() + timedelta(seconds=p["seconds"])
            wait.update(claimed_by=p["actor"], claimed_until=until)
        return [{k: wait[k] for k in NO_WAIT_CLAIM} | {"taken": taken}]

    def release_wait(self, p: P) -> list[Row]:
        wait = _row(self.interrupts, (p["thread_id"], p["interrupt_id"]))
        return _set(_where(wait, claimed_by=p["actor"]), **NO_WAIT_CLAIM)

    def expired_waits(self, p: P) -> list[Row]:
        due = [w for w in self.interrupts.values() if _before(w["deadline"], self.clock())]
        active = self._active_threads()
        rows = [w | {"resuming": False} for w in due if w["default_type"] is not None]
        rows = [w for w in rows if w["thread_id"] not in active]
        return sorted(rows, key=lambda w: w["deadline"])[: p["limit"]]

    # --- thread leases and heartbeats ----------------------------------------------------

    def bind_thread(self, p: P) -> list[Row]:
        new = {"thread_id": p["thread_id"], "graph": p["graph"], "created_at": self.clock()}
        return [self.threads.setdefault(p["thread_id"], new | NO_LEASE)]

    def acquire_thread(self, p: P) -> list[Row]:
        """Lease the thread to ``p``'s worker and job if it is free, theirs, or held by a
        dead worker."""
        thread = self.threads.get(p["thread_id"])
        if thread is None or self._held(thread["lease_holder"], p):
            return []
        thread.update(lease_holder=p["worker"], leased_at=self.clock(), lease_token=p["token"])
        return [{"thread_id": p["thread_id"]}]

    def claim_queued_runs(self, p: P) -> list[Row]:
        """claim_run of each thread's next run that is queued, of the graphs, not skipped,
        on a thread it leases, up to the limit."""
        claimed: list[Row] = []
        for run in self._heads():
            wanted = run["status"] == "queued" and run["graph"] in p["graphs"]
            if wanted and run["run_id"] not in p["skip"] and len(claimed) < p["limit"]:
                claimed += _where(self.claim_run({**p, "run_id": run["run_id"]}), leased=True)
        return claimed

    def claim_run(self, p: P) -> list[Row]:
        if (target := self.runs.get(p["run_id"])) is None:
            return []
        thread = {**p, "thread_id": target["thread_id"]}
        leased = target["status"] in ACTIVE and bool(self.acquire_thread(thread))
        run = self._next(target["thread_id"]) if leased else None
        row = {"target_status": target["status"], "leased": leased, "epoch": self.server_epoch}
        row |= run or {"run_id": None}  # the run's status as it was
        if run and run["status"] == "queued":
            run.update(status="running", updated_at=self.clock())
        return [row]

    def heartbeat(self, p: P) -> list[Row]:
        self.beat(p)
        worker, keep, cut = p["worker"], p["keep"], self._ago(p["grace"])
        for task in _where(self.tasks.values(), worker=worker, status="dispatched"):
            if task["claim_token"] != keep and _before(task["claimed_at"], cut):
                task.update(NO_CLAIM)
        leases = _where(self.threads.values(), lease_holder=worker)
        freed = [t for t in leases if t["lease_token"] != keep and _before(t["leased_at"], cut)]
        return [{"thread_id": t["thread_id"]} for t in _set(freed, **NO_LEASE)]

    def epoch(self, p: P) -> list[Row]:
        return [{"epoch": self.server_epoch}]

    def check_epoch(self, p: P) -> list[Row]:
        if p["epoch"] is not None and p["epoch"] != self.server_epoch:
            raise StoreRecoveredError("run store: the server recovered since this job began")
        return [{"graphruntime_check_epoch": True}]

    def beat(self, p: P) -> None:
        new = {k: p[k] for k in ("worker", "hostname", "pid")} | {"started_at": self.clock()}
        said = {"heartbeat_at": self.clock(), "node": p["node"], "graphs": p["graphs"]}
        self.workers.setdefault(p["worker"], new).update(said)

    def remove_worker(self, p: P) -> None:
        self.workers.pop(p["worker"], None)

    def live_workers(self, p: P) -> list[Row]:
        return [w for name, w in sorted(self.workers.items()) if self._alive(name, p["stale"])]

    # --- the step barrier ----------------------------------------------------------------

    def register_tasks(self, p: P) -> list[Row]:
        step, new = (p["run_id"], p["checkpoint_id"]), []
        for task_id, path in zip(p["task_ids"], p["paths"], strict=True):
            if (*step, task_id) not in self.tasks:
                row = {"run_id": step[0], "checkpoint_id": step[1], "task_id": task_id}
                row |= {"thread_id": p["thread_id"], "task_path": json.loads(path)}
                self.tasks[(*step, task_id)] = NEW_TASK | row | {"dispatched_at": self.clock()}
                new.append({"task_id": task_id})
        self.steps[step] = self.steps.get(step, 0) + len(new)
        return new

    def step_tasks(self, p: P) -> list[Row]:
        return _where(self.tasks.values(), run_id=p["run_id"], checkpoint_id=p["checkpoint_id"])

    async_commit = lock_run_events = _nothing

    def claim_task(self, p: P) -> list[Row]:
        claimed = [
            t
            for t in _where(self._open_tasks(p), task_path=json.loads(p["path"]))
            if not self._held(t["worker"], p) and t["retry_attempts"] <= p["attempts"]
        ]
        for task in claimed:
            task["started_at"] = task["started_at"] or self.clock()
        return _set(claimed, worker=p["worker"], claimed_at=self.clock(), claim_token=p["token"])

    def complete_task(self, p: P) -> list[Row]:
        mine = _where(self._open_tasks(p), worker=p["worker"])
        return _set(mine, status="done", done_at=self.clock(), error=_json(p["error"]))

    def release_claims(self, p: P) -> None:
        _set(_where(self._open_tasks(p, *p["task_ids"]), worker=p["worker"]), **NO_CLAIM)

    def count_down_step(self, p: P) -> list[Row]:
        if (step := (p["run_id"], p["checkpoint_id"])) not in self.steps:
            return []
        self.steps[step] -= p["done"]
        return [{"open_tasks": self.steps[step]}]

    def hold_for_retry(self, p: P) -> None:
        hold = self.clock() + timedelta(seconds=p["hold"])
        _set(self._open_tasks(p), **NO_CLAIM, retry_attempts=p["attempts"], hold_until=hold)

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
        busy = {t["run_id"] for t in _where(self.tasks.values(), status="dispatched")}
        stalled = [
            r
            for r in self._heads()
            if _before(r["updated_at"], self._ago(p["idle"]))
            and r["run_id"] not in busy
            and not self._alive(self.threads[r["thread_id"]]["lease_holder"], p["stale"])
        ]
        return _set(stalled[: p["limit"]], updated_at=self.clock())

    # --- events --------------------------------------------------------------------------

    def add_event(self, p: P) -> None:
        self.events.append({**p, "seq": next(self._seq)})

    def append_events(self, p: P) -> None:
        for values in zip(p["ns"], p["modes"], p["types"], p["payloads"], strict=True):
            self.add_event({"run_id": p["run_id"], **dict(zip(EVENT_COLUMNS, values, strict=True))})

    def events_after(self, p: P) -> list[Row]:
        return [e for e in _where(self.events, run_id=p["run_id"]) if e["seq"] > p["after"]]


class InMemoryRunStore(RunStore):
    """A :class:`~workers.store.RunStore` on :class:`InMemoryConnector` (its tables:
    ``memory``, for tests to read)."""

    def __init__(
        self, serde: SerializerProtocol | None = None, clock: Callable[[], datetime] | None = None
    ) -> None:
        self.clock = clock or (lambda: datetime.now(UTC))
        self.memory = InMemoryConnector(self.clock)
        super().__init__(self.memory, serde)
