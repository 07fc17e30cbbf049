"""Graphs for the fault and bad-input tests, and the ledger they write to.

Every node appends a row ``(thread_id, node, pid)`` to ``e2e_fault_ledger`` in the
workers' Postgres *before* it returns, so a test can count how many times each node
body ran (at least once under faults) and compare it with how many times its write
landed in the final state (exactly once). A node named in the run's
``configurable["hold"]`` then blocks until the test opens its gate (a row in
``e2e_fault_gate``), so a test can kill a worker, restart Redis or Postgres, or send
duplicates while the node is known to be running.

The nodes read the database from ``DATABASE_URL`` (set for every worker) or, in the
test process, the embedded server, so the same graphs also run in-process as the
oracle. Postgres connections are retried, so nodes survive a Postgres restart.
"""

from __future__ import annotations

import operator
import os
import threading
import time
from collections import Counter
from collections.abc import Iterable
from typing import Annotated, Any, TypedDict

import psycopg

from graphruntime.config import RunnableConfig, get_config
from graphruntime.func import entrypoint, task
from graphruntime.graph import END, START, StateGraph
from graphruntime.types import Send, interrupt

LEDGER_SCHEMA = """
CREATE TABLE IF NOT EXISTS e2e_fault_ledger (
    id        bigserial PRIMARY KEY,
    thread_id text NOT NULL,
    node      text NOT NULL,
    pid       integer NOT NULL,
    at        timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS e2e_fault_ledger_thread ON e2e_fault_ledger (thread_id);
CREATE TABLE IF NOT EXISTS e2e_fault_gate (
    thread_id text NOT NULL,
    node      text NOT NULL,
    PRIMARY KEY (thread_id, node)
);
"""

GATE_TIMEOUT = 60.0  # a held node gives up (raises) after this long
RELEASE_ALL = "*"  # a gate row with this node name releases every node of the thread


def database_url() -> str:
    url = os.environ.get("DATABASE_URL")
    if url:
        return url
    from checkpoint_pg.embedded import database_url as embedded

    return embedded()


# --- the nodes' side of the ledger -------------------------------------------------------

_local = threading.local()


def _execute(sql: str, params: tuple[Any, ...], *, fetch: bool = False) -> Any:
    """Run one statement on this thread's connection; reconnect through a Postgres restart."""
    deadline = time.monotonic() + 30.0
    while True:
        conn: psycopg.Connection[Any] | None = getattr(_local, "conn", None)
        try:
            if conn is None or conn.closed:
                conn = psycopg.connect(database_url(), autocommit=True, connect_timeout=5)
                _local.conn = conn
            cur = conn.execute(sql, params)
            return cur.fetchone() if fetch else None
        except psycopg.OperationalError:
            _local.conn = None
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _current() -> tuple[str, tuple[str, ...]]:
    conf = get_config()["configurable"]
    return str(conf["thread_id"]), tuple(conf.get("hold") or ())


def visit(node: str) -> None:
    """Record that ``node`` started on this process; block at its gate if it is held."""
    thread_id, hold = _current()
    _execute(
        "INSERT INTO e2e_fault_ledger (thread_id, node, pid) VALUES (%s, %s, %s)",
        (thread_id, node, os.getpid()),
    )
    if node not in hold:
        return
    deadline = time.monotonic() + GATE_TIMEOUT
    while time.monotonic() < deadline:
        row = _execute(
            "SELECT 1 FROM e2e_fault_gate WHERE thread_id = %s AND node IN (%s, %s)",
            (thread_id, node, RELEASE_ALL),
            fetch=True,
        )
        if row is not None:
            return
        time.sleep(0.02)
    raise TimeoutError(f"gate of {node} on thread {thread_id} never opened")


# --- graphs ------------------------------------------------------------------------------


class FaultState(TypedDict, total=False):
    n: int
    items: Annotated[list[str], operator.add]
    decision: str


def plan(state: FaultState) -> dict[str, Any]:
    visit("plan")
    return {"items": ["plan"]}


def fan_out(state: FaultState) -> list[Send]:
    return [Send("work", {"i": i}) for i in range(state.get("n", 3))]


def work(arg: dict[str, Any]) -> dict[str, Any]:
    visit(f"work:{arg['i']}")
    return {"items": [f"w{arg['i']}"]}


def collect(state: FaultState) -> dict[str, Any]:
    visit("collect")
    return {"items": ["collect"]}


# plan -> Send fan-out of n "work" tasks (task jobs on the workers) -> collect
ledger_fan = StateGraph(FaultState)
ledger_fan.add_node("plan", plan)
ledger_fan.add_node("work", work)
ledger_fan.add_node("collect", collect)
ledger_fan.add_edge(START, "plan")
ledger_fan.add_conditional_edges("plan", fan_out, ["work"])
ledger_fan.add_edge("work", "collect")
ledger_fan.add_edge("collect", END)
ledger_fan_graph = ledger_fan.compile()


def _chain_node(name: str) -> Any:
    def node(state: FaultState) -> dict[str, Any]:
        visit(name)
        return {"items": [name]}

    return node


# a -> b -> c: single-task steps, which the coordinator runs inline
ledger_chain = StateGraph(FaultState)
ledger_chain.add_sequence([(name, _chain_node(name)) for name in ("a", "b", "c")])
ledger_chain.add_edge(START, "a")
ledger_chain_graph = ledger_chain.compile()


def prepare(state: FaultState) -> dict[str, Any]:
    visit("prepare")
    return {"items": ["prepare"]}


def ask(state: FaultState) -> dict[str, Any]:
    visit("ask")
    answer = interrupt({"question": "approve?"})
    return {"decision": str(answer), "items": [f"ask:{answer}"]}


def finish(state: FaultState) -> dict[str, Any]:
    visit("finish")
    return {"items": ["finish"]}


# prepare -> ask (interrupts) -> finish
ledger_approval = StateGraph(FaultState)
ledger_approval.add_sequence([("prepare", prepare), ("ask", ask), ("finish", finish)])
ledger_approval.add_edge(START, "prepare")
ledger_approval_graph = ledger_approval.compile()


@task
def part(i: int) -> str:
    visit(f"part:{i}")
    return f"p{i}"


@entrypoint()
def ledger_calls(n: int) -> dict[str, Any]:
    """A functional workflow: its ``part`` calls are task jobs (the entrypoint visits
    nothing itself: it runs again after each round of calls)."""
    parts = [f.result() for f in [part(i) for i in range(n)]]
    return {"items": [*parts, part(n).result()]}


GRAPHS = ",".join(
    [
        "ledger_fan=tests.e2e.fault_graphs:ledger_fan_graph",
        "ledger_chain=tests.e2e.fault_graphs:ledger_chain_graph",
        "ledger_approval=tests.e2e.fault_graphs:ledger_approval_graph",
        "ledger_calls=tests.e2e.fault_graphs:ledger_calls",
    ]
)


# --- the tests' side of the ledger -------------------------------------------------------


class Ledger:
    """Reads the ledger and opens gates in one database (the cluster's)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.threads: set[str] = set()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SELECT pg_advisory_lock(4242, 7001)")
            conn.execute(LEDGER_SCHEMA)
            conn.execute("SELECT pg_advisory_unlock(4242, 7001)")

    def _query(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
            cur = conn.execute(sql, params)
            return cur.fetchall() if cur.description else []

    def track(self, thread_id: str) -> str:
        self.threads.add(thread_id)
        return thread_id

    def rows(self, thread_id: str) -> list[tuple[str, int]]:
        """(node, pid) of every execution on the thread, in order."""
        return [
            (str(node), int(pid))
            for node, pid in self._query(
                "SELECT node, pid FROM e2e_fault_ledger WHERE thread_id = %s ORDER BY id",
                (thread_id,),
            )
        ]

    def counts(self, thread_id: str) -> Counter[str]:
        return Counter(node for node, _ in self.rows(thread_id))

    def wait_started(
        self, thread_id: str, node: str, *, times: int = 1, timeout: float = 20
    ) -> int:
        """Wait until ``node`` has started ``times`` times; returns the pid of the last start."""
        deadline = time.monotonic() + timeout
        while True:
            pids = [pid for n, pid in self.rows(thread_id) if n == node]
            if len(pids) >= times:
                return pids[-1]
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{node} started {len(pids)} times on {thread_id}, wanted {times} "
                    f"within {timeout}s; ledger: {self.rows(thread_id)}"
                )
            time.sleep(0.01)

    def release(self, thread_id: str, nodes: Iterable[str] = (RELEASE_ALL,)) -> None:
        for node in nodes:
            self._query(
                "INSERT INTO e2e_fault_gate (thread_id, node) VALUES (%s, %s) "
                "ON CONFLICT DO NOTHING",
                (thread_id, node),
            )

    def release_tracked(self) -> None:
        """Open every gate of every thread this test used (teardown: free blocked workers)."""
        for thread_id in self.threads:
            self.release(thread_id)
        self.threads.clear()


# --- helpers for the tests ----------------------------------------------------------------


def wait_until(predicate: Any, *, timeout: float, what: str, interval: float = 0.02) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail with ``what`` on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def worker_of(workers: Any, pid: int) -> int:
    """Index of the LocalCluster worker whose process group holds ``pid`` (a pool child)."""
    pgid = os.getpgid(pid)
    for index, worker in enumerate(workers):
        if worker.pid == pgid:
            return index
    raise AssertionError(f"pid {pid} (group {pgid}) belongs to no cluster worker")


def restore_workers(cluster: Any, *, restart: Iterable[int] = ()) -> None:
    """Leave ``cluster`` with all its workers alive: restart dead ones (and ``restart``)."""
    import signal

    again = set(restart)
    for index, worker in enumerate(list(cluster.workers)):
        if index in again and worker.proc.poll() is None:
            cluster.kill_worker(index, signal.SIGTERM)
        if worker.proc.poll() is not None:
            cluster.restart_worker(index)


def in_process(graph: Any, inputs: Iterable[Any], ledger: Ledger) -> dict[str, Any]:
    """The oracle: the same inputs in-process; its outputs, final values and ledger counts."""
    import uuid

    from graphruntime.checkpoint.memory import InMemorySaver

    local = graph.with_checkpointer(InMemorySaver())
    cfg = {"configurable": {"thread_id": f"local-{uuid.uuid4()}"}}
    outputs = [local.invoke(value, cfg) for value in inputs]
    return {
        "outputs": outputs,
        "values": local.get_state(cfg).values,
        "counts": ledger.counts(cfg["configurable"]["thread_id"]),
    }


def strip_interrupt_ids(out: Any) -> Any:
    """Interrupt ids hash checkpoint ids, which differ between runs; compare the values."""
    if isinstance(out, dict) and "__interrupt__" in out:
        return {**out, "__interrupt__": [i.value for i in out["__interrupt__"]]}
    return out


def fault_config(ledger: Ledger, *hold: str) -> RunnableConfig:
    """A config for a fresh thread (tracked, so teardown opens its gates), holding ``hold``."""
    import uuid

    thread_id = ledger.track(f"fault-{uuid.uuid4()}")
    return {"configurable": {"thread_id": thread_id, "hold": list(hold)}}


def thread_of(config: RunnableConfig) -> str:
    return str(config["configurable"]["thread_id"])


def assert_applied_once(values: dict[str, Any], expected: dict[str, Any]) -> None:
    """No write landed twice, and the state is exactly the in-process one."""
    items = values.get("items", [])
    doubled = {item: n for item, n in Counter(items).items() if n > 1}
    assert not doubled, f"writes applied more than once: {doubled}"
    assert values == expected


# --- the ops resume queue -------------------------------------------------------------------


def redis_for(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url.replace("redis+socket://", "unix://"))


def resume_message(graph: str, thread_id: str, value: Any, key: str | None = None) -> str:
    import json

    body: dict[str, Any] = {"graph": graph, "thread_id": thread_id, "resume": value}
    if key is not None:
        body["idempotency_key"] = key
    return json.dumps(body)


def dead_letters(r: Any, queue: str) -> dict[str, str]:
    """The dead-letter list as {message: reason}."""
    import json

    out: dict[str, str] = {}
    for raw in r.lrange(f"{queue}:dead", 0, -1):
        entry = json.loads(raw)
        out[entry["message"]] = entry["error"]
    return out


def pending_on(r: Any, queue: str, raw: str | bytes) -> bool:
    """Whether ``raw`` still waits on the queue or is being handled by a listener."""
    data = raw.encode() if isinstance(raw, str) else raw
    lists = [queue, *r.scan_iter(match=f"{queue}:processing:*")]
    return any(item == data for name in lists for item in r.lrange(name, 0, -1))
