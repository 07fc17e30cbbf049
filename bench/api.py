"""Approval round trips through the LangGraph Python SDK: `graphrun serve` on the workers
against `langgraph dev`, in one run.

Each round trip is one thread: ``threads.create``, ``runs.wait`` with the input (the
3-node graph of tests/api_diff/app pauses at its ``interrupt()``), ``runs.wait`` with
``command={"resume": "yes"}`` (it finishes). Measured at client concurrency 1 and 10
(threads in flight at once, each on its own SDK client), both servers in turn:
threads per second, and the p50 / p90 of each ``runs.wait`` call at concurrency 1.
Targets: at concurrency 10 at least 10x langgraph dev's threads/s; at concurrency 1 a
``runs.wait`` p50 of 30 ms or less.

    .venv/bin/python -m bench.api [--threads 40] [--workers 2]

Writes its section of bench/RESULTS.md (with the machine, the command and the load).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import _report
from tests.api_diff import servers

GRAPH = "api_approval"
INBOX_SIZE = 100_000
HEADING = "## LangGraph Server API: graphrun serve vs langgraph dev"


def round_trip(url: str, waits: list[float]) -> None:
    from langgraph_sdk import get_sync_client

    client: Any = get_sync_client(url=url)
    thread = client.threads.create()
    started = time.perf_counter()
    paused = client.runs.wait(thread["thread_id"], GRAPH, input={"topic": "bench"})
    waits.append(time.perf_counter() - started)
    if "__interrupt__" not in paused:
        raise AssertionError(f"the run did not pause: {paused}")
    started = time.perf_counter()
    done = client.runs.wait(thread["thread_id"], GRAPH, command={"resume": "yes"})
    waits.append(time.perf_counter() - started)
    if done.get("answer") != "yes":
        raise AssertionError(f"the resume did not finish: {done}")


def measure(url: str, threads: int, concurrency: int) -> dict[str, float]:
    for _ in range(3):  # warm-up: connections, imports, caches
        round_trip(url, [])
    waits: list[float] = []
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        for future in [pool.submit(round_trip, url, waits) for _ in range(threads)]:
            future.result()
    elapsed = time.perf_counter() - started
    ordered = sorted(waits)
    return {
        "threads_per_s": threads / elapsed,
        "wait_p50_ms": 1000 * statistics.median(ordered),
        "wait_p90_ms": 1000 * ordered[int(0.9 * (len(ordered) - 1))],
    }


def cpu_seconds(groups: Sequence[int]) -> float:
    """CPU seconds used so far by the live processes of these process groups (each
    server and worker is started in a session of its own), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) in groups:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


INBOX_GRAPH = "api_bench_inbox"


def fill_inbox(dsn: str, n: int) -> None:
    """``n`` threads waiting on a human, as the workers' inbox holds them (rows written
    directly: what is measured is the search, not how the waits came to be)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO graphruntime_interrupts (thread_id, interrupt_id, graph, run_id, "
            "checkpoint_id, node, namespace, value, created_at) "
            "SELECT 'inbox-' || i, md5(i::text), %s, gen_random_uuid(), '', 'review', "
            "'review', jsonb_build_object('team', CASE WHEN i %% 10 = 0 THEN 'ops' ELSE 'dev' "
            "END), now() - make_interval(secs => i) FROM generate_series(1, %s) AS i "
            "ON CONFLICT DO NOTHING",
            (INBOX_GRAPH, n),
        )
        conn.execute(
            "INSERT INTO graphruntime_threads (thread_id, graph) "
            "SELECT 'inbox-' || i, %s FROM generate_series(1, %s) AS i ON CONFLICT DO NOTHING",
            (INBOX_GRAPH, n),
        )
        conn.execute("ANALYZE graphruntime_interrupts")
        conn.execute("ANALYZE graphruntime_threads")


def clear_inbox(dsn: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM graphruntime_interrupts WHERE graph = %s", (INBOX_GRAPH,))
        conn.execute("DELETE FROM graphruntime_threads WHERE graph = %s", (INBOX_GRAPH,))


def inbox_search(url: str, samples: int = 30) -> dict[str, float]:
    """``threads.search(status="interrupted")`` pages: the newest, and one filtered by the
    graph (metadata graph_id), median ms of ``samples`` each."""
    from langgraph_sdk import get_sync_client

    client: Any = get_sync_client(url=url)
    out: dict[str, float] = {}
    cases = {
        "first_page_ms": {"status": "interrupted", "limit": 10},
        "graph_page_ms": {
            "status": "interrupted",
            "limit": 10,
            "metadata": {"graph_id": INBOX_GRAPH},
        },
        "page_at_offset_1000_ms": {"status": "interrupted", "limit": 10, "offset": 1000},
    }
    for name, query in cases.items():
        times = []
        for _ in range(samples):
            started = time.perf_counter()
            found = client.threads.search(**query)
            times.append(time.perf_counter() - started)
            if len(found) != 10:
                raise AssertionError(f"{name}: {len(found)} threads")
        out[name] = 1000 * statistics.median(times)
    return out


def run_ours(threads: int, workers: int, log: Any) -> dict[Any, Any]:
    from workers.local_cluster import LocalCluster

    with (
        tempfile.TemporaryDirectory() as data,
        LocalCluster(
            "",
            workers=workers,
            concurrency=1,
            extra_env={"GRAPHRUNTIME_CONFIG": str(servers.CONFIG)},
        ) as cluster,
        servers.serve({**cluster.env, "GRAPHRUNTIME_DATA_DIR": data}) as server,
    ):
        pids = [server.proc.pid, *(w.pid for w in cluster.workers)]
        figures: dict[Any, Any] = {}
        for concurrency in (1, 10):
            before = cpu_seconds(pids)
            figures[concurrency] = measure(server.url, threads, concurrency)
            figures[concurrency]["cpu_s"] = cpu_seconds(pids) - before
            log(f"graphrun serve, concurrency {concurrency}: {figures[concurrency]}")
        fill_inbox(cluster.env["DATABASE_URL"], INBOX_SIZE)
        try:
            figures["inbox"] = inbox_search(server.url)
        finally:
            clear_inbox(cluster.env["DATABASE_URL"])
        log(f"graphrun serve, inbox of {INBOX_SIZE}: {figures['inbox']}")
        return figures


def run_reference(threads: int, log: Any) -> dict[int, Any]:
    with tempfile.TemporaryDirectory() as logs, servers.reference(Path(logs)) as server:
        figures: dict[int, Any] = {}
        for concurrency in (1, 10):
            before = cpu_seconds([server.proc.pid])
            figures[concurrency] = measure(server.url, threads, concurrency)
            figures[concurrency]["cpu_s"] = cpu_seconds([server.proc.pid]) - before
            log(f"langgraph dev, concurrency {concurrency}: {figures[concurrency]}")
        return figures


def section(ours: dict[Any, Any], theirs: dict[Any, Any], meta: dict[str, str]) -> str:
    rows = []
    for concurrency in (1, 10):
        a, b = ours[concurrency], theirs[concurrency]
        rows.append(
            f"| {concurrency} | {b['threads_per_s']:.1f} | {a['threads_per_s']:.1f} | "
            f"{a['threads_per_s'] / b['threads_per_s']:.1f}x | {b['wait_p50_ms']:.1f} / "
            f"{b['wait_p90_ms']:.1f} | {a['wait_p50_ms']:.1f} / {a['wait_p90_ms']:.1f} | "
            f"{b['cpu_s']:.1f} | {a['cpu_s']:.1f} |"
        )
    ratio = ours[10]["threads_per_s"] / theirs[10]["threads_per_s"]
    p50 = ours[1]["wait_p50_ms"]
    return "\n".join(
        [
            HEADING,
            "",
            "Written by `bench/api.py` (replaces only this section). One approval round trip "
            "per thread through the LangGraph Python SDK (create the thread, `runs.wait` that "
            "pauses at the 3-node graph's `interrupt()`, `runs.wait` with the resume), at "
            "client concurrency 1 and 10, against `langgraph dev` (in-memory runtime) and "
            "`graphrun serve` (its runs on celery workers, embedded Postgres and Redis), one "
            "after the other in the same run. CPU: the servers' processes (graphrun: the "
            "server and the workers; not Postgres or Redis).",
            "",
            f"- Command: `{meta['command']}`",
            f"- Date: {meta['date']}",
            *(f"- {k}: {v}" for k, v in _report.machine().items()),
            f"- Load average (1/5/15 min): {meta['load_start']} at the start, "
            f"{meta['load_end']} at the end",
            f"- graphruntime: {meta['revision']}; workers: {meta['workers']} (concurrency 1 each)",
            f"- Threads per measurement: {meta['threads']} (after 3 warm-up round trips)",
            "",
            "| client concurrency | langgraph dev threads/s | graphrun serve threads/s | "
            "ratio | langgraph dev runs.wait p50 / p90 ms | graphrun serve runs.wait p50 / "
            "p90 ms | langgraph dev CPU s | graphrun CPU s |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            f'`threads.search(status="interrupted", limit=10)` with {INBOX_SIZE:,} threads '
            "waiting (inbox rows), median of 30 through the SDK: first page "
            f"{ours['inbox']['first_page_ms']:.1f} ms, filtered by graph "
            f"{ours['inbox']['graph_page_ms']:.1f} ms, at offset 1,000 "
            f"{ours['inbox']['page_at_offset_1000_ms']:.1f} ms.",
            "",
            f"Targets: at concurrency 10, 10x langgraph dev's threads/s: {ratio:.1f}x "
            f"({'met' if ratio >= 10 else 'not met'}); at concurrency 1, runs.wait p50 "
            f"≤ 30 ms: {p50:.1f} ms ({'met' if p50 <= 30 else 'not met'}).",
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--threads", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        sys.stderr.write(message + "\n")

    meta = {
        "command": _report.command_line(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_start": _report.loadavg(),
        "revision": _report.git_revision("workers"),
        "workers": str(args.workers),
        "threads": str(args.threads),
    }
    theirs = run_reference(args.threads, log)
    ours = run_ours(args.threads, args.workers, log)
    meta["load_end"] = _report.loadavg()
    text = section(ours, theirs, meta)
    sys.stdout.write(text)
    if not args.no_write:
        _report.write_section(_report.ROOT / "bench" / "RESULTS.md", text, HEADING, "api")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
