"""The chaos tests' workload and its checks, shared by the fault and crash modes.

Workload: client threads sharing ONE ``GraphClient`` each run threads of the chaos graph
(a fan-out, a join, a human approval, a last step): start, wait for the pause, resume
(half through the client, half as JSON messages on the ops queue), wait for the end.
Every request carries an idempotency key, so a client retries after an outage without
doing the work twice, as a careful caller would.

The checks (:func:`check`): every node's entry exactly once in each thread's final state
(the ledger); every submit and resume acknowledged to a client is the one that ran
(a retry with the same key was given the same run, never a new one); no run left queued
or running, and no thread lease left held, once the workload drained.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import redis

from graphruntime.config import RunnableConfig
from graphruntime.types import Command
from tests.chaos.chaos_graphs import expected_items
from tests.e2e.fault_graphs import redis_for
from tests.e2e.private_cluster import Private
from workers.client import RunHandle
from workers.errors import NotDispatchedError, RunTimeoutError, is_transient
from workers.store import PostgresRunStore

FAN_OUT = 4
DRAIN = 240.0  # seconds the workload may take to finish once the faults stop
SETTLE = 120.0  # seconds for the last runs to end and the last leases to go, after that
POISON = "chaos-poison"


@dataclass
class Outcome:
    done: dict[str, list[str]] = field(default_factory=dict)  # thread -> final items
    failures: list[str] = field(default_factory=list)
    faults: Counter[str] = field(default_factory=Counter)
    current: dict[str, str] = field(default_factory=dict)  # client thread -> chaos thread
    failed: list[str] = field(default_factory=list)  # the chaos threads of the failures
    # (thread, idempotency key) -> the run ids the client was given for it
    acked: defaultdict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    seconds: float = 0.0  # how long the round took, faults and drain
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ack(self, thread_id: str, key: str, run_id: str) -> None:
        with self.lock:
            self.acked[(thread_id, key)].add(str(run_id))


class Workload:
    """``clients`` client threads running chaos threads until :meth:`stop`."""

    def __init__(self, p: Private, outcome: Outcome, *, clients: int, deadline: float) -> None:
        self.p = p
        self.outcome = outcome
        self.deadline = deadline
        self._stop = threading.Event()
        # set once the test stopped waiting for the client threads: one still retrying gives up
        self._abandoned = threading.Event()
        self.threads = [
            threading.Thread(target=self._loop, name=f"chaos-client-{i}", daemon=True)
            for i in range(clients)
        ]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def stop(self, patience: float | None = None) -> list[str]:
        """Stop starting threads, wait for those under way until the deadline (or for
        ``patience`` seconds); the chaos threads of the client threads still running
        then (given up)."""
        self._stop.set()
        until = self.deadline if patience is None else time.monotonic() + patience
        for t in self.threads:
            t.join(timeout=max(1.0, until - time.monotonic()))
        stuck = [self.outcome.current[t.name] for t in self.threads if t.is_alive()]
        self._abandoned.set()
        return stuck

    def _loop(self) -> None:
        via_queue = False
        while not self._stop.is_set():
            via_queue = not via_queue
            try:
                tid, items = self._one_thread(via_queue)
            except Exception as exc:  # noqa: BLE001 - collected and reported by the test
                with self.outcome.lock:
                    tid = self.outcome.current[threading.current_thread().name]
                    self.outcome.failures.append(f"{tid}: {type(exc).__name__}: {exc}")
                    self.outcome.failed.append(tid)
                return
            with self.outcome.lock:
                self.outcome.done[tid] = items

    def _retrying(self, action: Callable[[], Any]) -> Any:
        """Call ``action`` until it succeeds; outages of ours are waited out, not failures."""
        while True:
            try:
                return action()
            except Exception as exc:
                # NotDispatchedError: recorded, the sweeper sends it; asked again with the
                # same key, the client gets the same run (and waits for it)
                outage = isinstance(
                    exc, RunTimeoutError | redis.exceptions.ConnectionError | NotDispatchedError
                )
                if not (is_transient(exc) or outage):
                    raise
                if time.monotonic() > self.deadline or self._abandoned.is_set():
                    raise
                time.sleep(0.5)

    def _one_thread(self, via_queue: bool) -> tuple[str, list[str]]:
        client, outcome = self.p.client, self.outcome
        tid = f"chaos-{uuid.uuid4()}"
        with outcome.lock:
            outcome.current[threading.current_thread().name] = tid
        cfg: RunnableConfig = {"configurable": {"thread_id": tid}}

        def submit(payload: Any, key: str) -> RunHandle:
            try:
                handle = client.submit("chaos", payload, cfg, idempotency_key=key)
            except NotDispatchedError as exc:
                outcome.ack(tid, key, exc.run_id)  # recorded: acknowledged all the same
                raise
            outcome.ack(tid, key, handle.run_id)
            return handle

        def start() -> Any:
            return submit({"n": FAN_OUT}, "start").wait(timeout=30)

        paused = self._retrying(start)
        assert "__interrupt__" in paused, paused
        if via_queue:
            r = redis_for(str(client.settings.redis_url))
            raw = json.dumps(
                {"graph": "chaos", "thread_id": tid, "resume": "yes", "idempotency_key": "resume"}
            )

            def resumed() -> Any:
                runs = [x for x in client.store.runs_of_thread(tid) if x["kind"] == "resume"]
                if not runs:  # lost with a wiped Redis, or still waiting: push it again
                    r.lpush(client.settings.resume_queue, raw)
                    raise RunTimeoutError("resume not taken yet")
                for run in runs:  # taken off the queue: the listener acknowledged it
                    outcome.ack(tid, "resume", run["run_id"])
                return RunHandle(client, str(runs[0]["run_id"]), tid).wait(timeout=30)

            self._retrying(resumed)
        else:

            def resume() -> Any:
                return submit(Command(resume="yes"), "resume").wait(timeout=30)

            self._retrying(resume)
        values = self._retrying(lambda: client.get_state("chaos", cfg).values)
        return tid, list(values["items"])


def run_with_faults(
    p: Private,
    *,
    seconds: float,
    clients: int,
    rng: random.Random,
    inject: Callable[[], str],
    restore: Callable[[], None] = lambda: None,
) -> Outcome:
    """Run the workload for ``seconds``, with a fault every 1-4 s (``inject`` makes one and
    names it), then ``restore`` the cluster, let the workload drain and :func:`check`."""
    outcome = Outcome()
    started = time.monotonic()
    workload = Workload(p, outcome, clients=clients, deadline=started + seconds + DRAIN)
    workload.start()
    try:
        while time.monotonic() - started < seconds:
            time.sleep(rng.uniform(1.0, 4.0))
            outcome.faults[inject()] += 1
    except BaseException:
        workload.stop(patience=10.0)  # the test failed already: do not wait for the drain
        raise
    finally:
        restore()
    check(p, outcome, workload.stop())
    outcome.seconds = time.monotonic() - started
    return outcome


def _query(p: Private, sql: str, params: Any = None) -> list[dict[str, Any]]:
    assert isinstance(p.client.store, PostgresRunStore)
    with p.client.store.pool.connection() as conn:
        rows: list[dict[str, Any]] = conn.execute(sql, params).fetchall()
    return rows


def diagnose(p: Private, threads: Iterable[str]) -> str:
    """What the database and the workers' logs say about these threads."""
    lines = []
    workers = _query(
        p, "SELECT worker, heartbeat_at, now() - heartbeat_at AS age FROM graphruntime_workers"
    )
    lines.append(f"workers: {[(w['worker'], str(w['age'])) for w in workers]}")
    for tid in threads:
        lease = _query(
            p,
            "SELECT lease_holder, leased_at, lease_token FROM graphruntime_threads "
            "WHERE thread_id = %s",
            (tid,),
        )
        lines.append(f"thread {tid}: lease {lease}")
        for run in _query(
            p,
            "SELECT run_id, kind, status, stop, idempotency_key, created_at, updated_at, error "
            "FROM graphruntime_runs WHERE thread_id = %s ORDER BY created_at",
            (tid,),
        ):
            lines.append(f"  run {run}")
            for task in _query(
                p, "SELECT * FROM graphruntime_step_tasks WHERE run_id = %s", (run["run_id"],)
            ):
                lines.append(f"    task {task}")
            for w in p.cluster.workers:
                lines.extend(
                    f"    log w{w.index}: {ln}" for ln in list(w.log) if str(run["run_id"]) in ln
                )
        for cp in _query(
            p,
            "SELECT checkpoint_id, parent_checkpoint_id, blob_versions, metadata "
            "FROM graphruntime_checkpoints WHERE thread_id = %s ORDER BY checkpoint_id",
            (tid,),
        ):
            lines.append(f"  checkpoint {cp}")
        for write in _query(
            p,
            "SELECT checkpoint_id, task_id, task_name, idx, channel, type, value "
            "FROM graphruntime_writes WHERE thread_id = %s ORDER BY seq",
            (tid,),
        ):
            lines.append(f"  write {write}")
        for blob in _query(
            p,
            "SELECT channel, version, type, value FROM graphruntime_blobs "
            "WHERE thread_id = %s ORDER BY channel, version",
            (tid,),
        ):
            lines.append(f"  blob {blob}")
        for w in p.cluster.workers:
            lines.extend(f"  log w{w.index}: {ln}" for ln in list(w.log) if tid in ln)
    return "\n".join(lines)


def _unacknowledged(p: Private, outcome: Outcome) -> list[str]:
    """Threads whose runs are not the two acknowledged ones, each ended as it should."""
    expected = {"start": ("input", "interrupted"), "resume": ("resume", "success")}
    rows = _query(
        p,
        "SELECT thread_id, run_id::text AS run_id, kind, status, idempotency_key "
        "FROM graphruntime_runs WHERE thread_id = ANY(%s)",
        (list(outcome.done),),
    )
    runs: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        runs[row["thread_id"]].append(row)
    wrong = []
    for tid in outcome.done:
        got = {(r["idempotency_key"], r["kind"], r["status"]): r["run_id"] for r in runs[tid]}
        want = {
            (key, kind, status): outcome.acked.get((tid, key), set())
            for key, (kind, status) in expected.items()
        }
        if len(runs[tid]) != len(expected) or any(
            acked != {got.get(shape)} for shape, acked in want.items()
        ):
            wrong.append(f"{tid}: runs {runs[tid]}, acknowledged {want}")
    return wrong


def _settled(p: Private) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Runs still queued or running, and thread leases still held."""
    active = _query(
        p,
        "SELECT run_id, thread_id, kind, status, updated_at FROM graphruntime_runs "
        "WHERE status IN ('queued', 'running')",
    )
    leased = _query(
        p,
        "SELECT thread_id, lease_holder, leased_at FROM graphruntime_threads "
        "WHERE lease_holder IS NOT NULL",
    )
    return active, leased


def check(p: Private, outcome: Outcome, stuck: list[str]) -> None:
    """The ledger holds, every acknowledged request ran once, nothing is left running."""
    assert not stuck, "the workload did not finish in time:\n" + diagnose(p, stuck)
    assert outcome.failures == [], f"{outcome.failures}\n{diagnose(p, outcome.failed)}"
    assert outcome.done, "no thread finished"
    expected = Counter(expected_items(FAN_OUT))
    wrong = {tid: items for tid, items in outcome.done.items() if Counter(items) != expected}
    assert wrong == {}, f"threads whose ledger lost or doubled a write: {wrong}\n" + diagnose(
        p, wrong
    )
    unacknowledged = _unacknowledged(p, outcome)
    assert unacknowledged == [], "acknowledged runs lost or replaced:\n" + "\n".join(unacknowledged)
    # heartbeats free the leases no job holds; the sweeper ends what a crash left behind
    give_up = time.monotonic() + SETTLE
    active, leased = _settled(p)
    while (active or leased) and time.monotonic() < give_up:
        time.sleep(1.0)
        active, leased = _settled(p)
    if active or leased:
        threads = sorted({row["thread_id"] for row in active + leased})
        raise AssertionError(
            f"left after {SETTLE:.0f}s: runs still going {active}, leases still held {leased}\n"
            + diagnose(p, threads)
        )
    r = redis_for(str(p.client.settings.redis_url))
    dead = [json.loads(e) for e in r.lrange(f"{p.client.settings.resume_queue}:dead", 0, -1)]
    assert all(POISON in d["message"] for d in dead), [
        d for d in dead if POISON not in d["message"]
    ]
