"""Approvals that arrive one at a time: the cluster's cost per run against LangGraph's.

Every thread of the approval graph (draft -> review, which interrupts -> publish) is
started with one call and resumed with another, by client threads that each take the
next thread: no ``submit_many`` or ``resume_many``.

* ``concurrent``: N threads (default 2,000) by 8 client threads. graphruntime: 2 workers
  of 2 pool processes (``graphrun worker``'s default on 2 cores), one ``GraphClient``
  shared by the 8 threads, each calling ``client.invoke``. LangGraph: the same 8 threads
  in one process calling ``app.invoke`` on a ``PostgresSaver`` over a pool of 8
  connections, on the same Postgres server. Threads per second, and CPU seconds per run
  (a run is one invoke: two per thread): graphruntime's client and workers together,
  LangGraph's process; Postgres' CPU apart, for both.
* ``latency``: the same with 1 client thread; p50 and p99 of the resume call (resume ->
  the run's end), against LangGraph's in-process ``invoke`` of the resume.
* ``scaling``: ``concurrent`` again on 4 workers; graphruntime's CPU per run must not rise.

Run: ``python -m bench.one_by_one_bench`` (``--quick`` for small sizes, printed only).
Targets (issue #19): >= 3x LangGraph's threads/s and <= 0.5x its CPU per run at 8 client
threads; the resume p50 at 1 client thread <= LangGraph's.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import os
import queue
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._report import command_line, git_revision, loadavg, machine, write_section
from bench.approvals_bench import CpuMeter, build_approval, postmaster_pid
from bench.workers_bench import (
    Env,
    PrivateRedis,
    fresh_database,
    graph_client,
    redis_client,
    versions,
)

RESULTS = Path(__file__).with_name("RESULTS.md")
HEADING = "## Approvals one at a time (issue #19)"
MARK = "one-by-one-bench"

THROUGHPUT_TARGET = 3.0
CPU_TARGET = 0.5
GRAPH = "bench_approval"
POSTMASTER: list[int] = []  # the run's Postgres server: its CPU alone is counted


@dataclass
class Side:
    """One runtime's figures for one phase."""

    threads: int = 0
    wall: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)  # process kind -> CPU seconds
    resume_ms: list[float] = field(default_factory=list)
    deliveries: int = 0  # Celery messages delivered to the workers (graphruntime)

    @property
    def per_second(self) -> float:
        return self.threads / self.wall if self.wall else 0.0

    def cpu_per_run_ms(self, *kinds: str) -> float:
        runs = 2 * self.threads
        return 1000 * sum(self.cpu.get(k, 0.0) for k in kinds) / runs if runs else 0.0


def _drive(
    ids: Sequence[str], clients: int, start: Callable[[str], None], resume: Callable[[str], None]
) -> tuple[float, list[float]]:
    """Start then resume every thread, ``clients`` at a time; wall seconds, resume ms."""
    todo: queue.SimpleQueue[str] = queue.SimpleQueue()
    for tid in ids:
        todo.put(tid)
    resumes: list[float] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def client() -> None:
        while True:
            try:
                tid = todo.get_nowait()
            except queue.Empty:
                return
            try:
                start(tid)
                t0 = time.perf_counter()
                resume(tid)
                took = (time.perf_counter() - t0) * 1000
                with lock:
                    resumes.append(took)
            except BaseException as exc:  # noqa: BLE001 - re-raised after the run
                with lock:
                    errors.append(exc)
                return

    t0 = time.perf_counter()
    workers = [threading.Thread(target=client) for _ in range(clients)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    wall = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return wall, resumes


class _Cpu:
    """CPU seconds by process kind between two points: this process (all its threads),
    the celery workers and Postgres (from /proc)."""

    def __init__(self, workers: Sequence[int] | None = None) -> None:
        self.meter = CpuMeter(workers, POSTMASTER[0] if POSTMASTER else None)
        self.own = time.process_time()

    def spent(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for part in self.meter.spent().split(", "):
            if part:
                kind, value = part.rsplit(" ", 1)
                out[kind] = float(value)
        out["client"] = time.process_time() - self.own  # precise, threads included
        return out


def graphruntime_side(env: Env, n: int, clients: int, workers: int, log: Any) -> Side:
    with env.graph_cluster(workers, 2) as cluster:
        client = graph_client(cluster)
        # --profile with 1 client thread: cProfile the client's calls (one thread only)
        prof = _client_profiler(env, clients)
        try:

            def start(tid: str) -> None:
                with prof:
                    out = client.invoke(GRAPH, {"request": f"r{tid}"}, _cfg(tid), timeout=300)
                assert "__interrupt__" in out, out

            def resume(tid: str) -> None:
                from graphruntime.types import Command

                with prof:
                    out = client.invoke(GRAPH, Command(resume="yes"), _cfg(tid), timeout=300)
                assert out["result"].endswith(": yes"), out

            warm = [f"warm-{uuid.uuid4()}" for _ in range(16)]
            _drive(warm, clients, start, resume)
            ids = [f"t-{i}-{uuid.uuid4().hex[:8]}" for i in range(n)]
            redis = redis_client(env)
            delivered = _deliveries(redis)
            cpu = _Cpu([w.pid for w in cluster.workers])  # this run's, not the machine's
            wall, resumes = _drive(ids, clients, start, resume)
            side = Side(n, wall, cpu.spent(), resumes, _deliveries(redis) - delivered)
            redis.close()
        finally:
            client.close()
            if isinstance(prof, cProfile.Profile) and env.profile_dir:
                prof.dump_stats(os.path.join(env.profile_dir, f"client-{os.getpid()}.prof"))
    log(
        f"  graphruntime, {clients} client threads, {workers} workers: {side.per_second:.1f} "
        f"threads/s, CPU/run {side.cpu_per_run_ms('client', 'workers'):.2f} ms "
        f"(client {side.cpu_per_run_ms('client'):.2f}, workers "
        f"{side.cpu_per_run_ms('workers'):.2f}, postgres {side.cpu_per_run_ms('postgres'):.2f}), "
        f"Celery deliveries per run {side.deliveries / (2 * n):.2f}"
    )
    return side


def _deliveries(redis: Any) -> int:
    """Messages Celery's Redis transport delivered and acked so far: each ack takes the
    message out of kombu's unacked hash (one HDEL; a run uses HDEL for nothing else)."""
    stats = redis.info("commandstats").get("cmdstat_hdel")
    return int(stats["calls"]) if stats else 0


def _client_profiler(env: Env, clients: int) -> AbstractContextManager[Any]:
    if env.profile_dir and clients == 1:
        os.makedirs(env.profile_dir, exist_ok=True)
        return cProfile.Profile(time.process_time)
    return nullcontext()


@contextmanager
def langgraph_app(url: str, size: int) -> Iterator[Any]:
    import langgraph.graph as lg_graph
    import langgraph.types as lg_types
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    with ConnectionPool(url, min_size=size, max_size=size, kwargs=kwargs) as pool:
        saver = PostgresSaver(pool)  # type: ignore[arg-type]
        saver.setup()
        yield build_approval(lg_graph, lg_types).compile(checkpointer=saver)


def langgraph_side(env: Env, n: int, clients: int, log: Any) -> Side:
    from langgraph.types import Command

    with langgraph_app(env.langgraph_db, 8) as app:

        def start(tid: str) -> None:
            out = app.invoke({"request": f"r{tid}"}, _cfg(tid))
            assert "__interrupt__" in out

        def resume(tid: str) -> None:
            out = app.invoke(Command(resume="yes"), _cfg(tid))
            assert out["result"].endswith(": yes"), out

        _drive([f"warm-{uuid.uuid4()}" for _ in range(16)], clients, start, resume)
        ids = [f"t-{i}-{uuid.uuid4().hex[:8]}" for i in range(n)]
        cpu = _Cpu()
        wall, resumes = _drive(ids, clients, start, resume)
        side = Side(n, wall, cpu.spent(), resumes)
    log(
        f"  LangGraph, {clients} client threads: {side.per_second:.1f} threads/s, CPU/run "
        f"{side.cpu_per_run_ms('client'):.2f} ms (postgres {side.cpu_per_run_ms('postgres'):.2f})"
    )
    return side


def _cfg(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def _pct(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


@dataclass
class Figures:
    gr: Side | None = None
    lg: Side | None = None
    gr_one: Side | None = None
    lg_one: Side | None = None
    gr_four: Side | None = None


# What carries a run, and where its CPU goes: mechanisms only; the numbers are the table's.
NOTES = """
How a single submit travels (issue #19):

- **The run table is the queue, the broker the wake-up** (`workers/_drain.py`). A
  coordinator job that finds coordinator messages waiting when it is done claims queued
  runs from the table (`claim_queued_runs`: pick, lease, mark running in one statement,
  `SKIP LOCKED` between drainers) and advances them as a batch, until none is left. While
  it drains, a Redis flag per graph is up and `submit` sends no Celery message (the client
  commits the run, then reads the flag; the drainer lowers the flag, then looks one last
  time). Under load most runs travel without a message: no publish in the client, no
  Celery delivery, prefork hand-off and ack in the worker, one claim statement per batch.
- **Coordinator messages written straight to Redis** (`workers/_celery_wire.py`): the
  same bytes as `send_task` (pinned by a test), one `LPUSH` pipeline, without kombu's
  per-publish client and declarations.
- **The run's end notifies how it ended** (status, stored result, error, when under 5000
  bytes), and `invoke` LISTENs before it queues its run: it takes the result from the
  notification and never reads the run (a bigger result is read once).
- **Residents** (`workers/_drain.py`, `workers/_drain_flag.py`): a coordinator job that
  finds nothing queued stays (1 s idle, 60 s in all, less if its worker shuts down)
  asleep on Redis wake-up lists, its flag up; a client that finds the flag up wakes the
  resident that went to sleep last in the same round trip as its read and sends no
  message. Woken, the resident claims and advances, its flag still up, and sleeps again.
  A host has a resident per two cores (one per worker): at 1 client thread a run costs
  no Celery message and no broker hop; at 8, the resident takes runs in batches, still
  without messages (Celery deliveries per run: printed), and 4 workers make no more
  residents than 2.
- **One connection per job** (`workers/_pinned_pool.py`): the run store's, the saver's,
  the store's and the cache's borrows in a job reuse the one connection the job pinned,
  instead of a pool checkout each (about 0.1 ms each, 8 a run).
- The client's listener keeps listening 1 s after its last waiter, so a client that
  invokes one run after another LISTENs once; a retry schedule's first try runs outside
  tenacity (building its loop cost 0.14 ms a call).

Where the CPU goes now. A run's coordinator statements are: the claim (one
statement), the checkpoint's load (one), the round's checkpoints, blobs and writes
(one `put_batch` statement, checkpoint_pg migrations 4 and 5) and the run's end
(`end_runs`: epoch check, end, inbox, NOTIFY, lease, next run; one statement in its own
durable commit, workers migrations 9 and 10); `bench.statement_count`: a resume 15 -> 5
statements. Issue 19's last steps (session of 2026-11-27 17:30-20:30 UTC):

- Residents keep their flag up while they work, one per two cores of a host: at 8
  client threads no Celery message goes out (0.33 a run before), runs are claimed in
  batches, and the workers' main processes idle. A claim skips only its last claim's
  runs (it sent up to 256 run ids as a parameter at every claim).
- The client: one listener thread wakes only the waiter of the notified run (waiters
  took turns reading and woke each other); one Redis script reads the flag and, if no
  job drains, pushes the run's message; `create_run` returns only what it set; the
  pool's idle check no longer routes every returned connection through its worker thread.
- Postgres: `graphruntime_next_runs` on a generic plan in PL/pgSQL (an SQL function was
  parsed and planned at each call); the epoch read without a PL/pgSQL call; `end_runs`
  finds its runs by run id (its generic plan scanned the status index, dead versions
  included); `put_batch` does the fenced puts' work in place.
- In-process (issue 20's figures): one JSON C encoder per serializer, environment read
  once per process, a leaner sync save path.
"""


def section(f: Figures, meta: dict[str, str]) -> str:
    lines = [HEADING, ""]
    lines.append(
        f"`{meta['command']}` on {meta['machine']}; {meta['date']}, {meta['revision']}; "
        f"load {meta['load_start']} at start, {meta['load_end']} at the end. "
        f"{meta['versions']}. Both sides use the same embedded Postgres server (one "
        "database each); Redis is private to the run. graphruntime: `graphrun worker`s of 2 "
        "pool processes (the default on 2 cores), one `GraphClient` shared by the client "
        "threads, one `invoke` per call. LangGraph: `PostgresSaver` on a pool of 8 "
        "connections, the client threads in one process. A run is one invoke (a thread "
        "is two: its start and its resume). CPU per run: graphruntime's client and workers, "
        "LangGraph's process; Postgres' apart."
    )
    lines.append("")
    lines.append("| figure | graphruntime | LangGraph + PostgresSaver | ratio | target | met |")
    lines.append("|---|---|---|---|---|---|")
    if f.gr and f.lg:
        tput = f.gr.per_second / f.lg.per_second
        gr_cpu, lg_cpu = f.gr.cpu_per_run_ms("client", "workers"), f.lg.cpu_per_run_ms("client")
        lines.append(
            f"| {f.gr.threads:,} threads, 8 client threads: threads/s | "
            f"{f.gr.per_second:.1f} ({f.gr.wall:.1f} s) | {f.lg.per_second:.1f} "
            f"({f.lg.wall:.1f} s) | {tput:.2f}x | >= {THROUGHPUT_TARGET:.0f}x | "
            f"{'yes' if tput >= THROUGHPUT_TARGET else 'no'} |"
        )
        lines.append(
            f"| the same: CPU ms per run | {gr_cpu:.2f} (client "
            f"{f.gr.cpu_per_run_ms('client'):.2f}, workers "
            f"{f.gr.cpu_per_run_ms('workers'):.2f}) | {lg_cpu:.2f} | {gr_cpu / lg_cpu:.2f}x | "
            f"<= {CPU_TARGET}x | {'yes' if gr_cpu / lg_cpu <= CPU_TARGET else 'no'} |"
        )
        lines.append(
            f"| the same: Postgres CPU ms per run | {f.gr.cpu_per_run_ms('postgres'):.2f} | "
            f"{f.lg.cpu_per_run_ms('postgres'):.2f} | - | - | - |"
        )
    if f.gr_one and f.lg_one:
        gp50, lp50 = _pct(f.gr_one.resume_ms, 0.5), _pct(f.lg_one.resume_ms, 0.5)
        lines.append(
            f"| {f.gr_one.threads:,} threads, 1 client thread: resume p50 / p99 ms | "
            f"{gp50:.2f} / {_pct(f.gr_one.resume_ms, 0.99):.2f} | {lp50:.2f} / "
            f"{_pct(f.lg_one.resume_ms, 0.99):.2f} | {gp50 / lp50:.2f}x | <= 1x | "
            f"{'yes' if gp50 <= lp50 else 'no'} |"
        )
        lines.append(
            f"| the same: threads/s, CPU ms per run | {f.gr_one.per_second:.1f}, "
            f"{f.gr_one.cpu_per_run_ms('client', 'workers'):.2f} | {f.lg_one.per_second:.1f}, "
            f"{f.lg_one.cpu_per_run_ms('client'):.2f} | - | - | - |"
        )
    if f.gr and f.gr_four:
        two, four = (
            f.gr.cpu_per_run_ms("client", "workers"),
            f.gr_four.cpu_per_run_ms("client", "workers"),
        )
        lines.append(
            f"| 4 workers vs 2, 8 client threads: CPU ms per run (threads/s) | {four:.2f} "
            f"({f.gr_four.per_second:.1f}) vs {two:.2f} ({f.gr.per_second:.1f}) | - | "
            f"{four / two:.2f}x | not above 1x plus noise | "
            f"{'yes' if four <= two * 1.1 else 'no'} |"
        )
    return "\n".join(lines) + "\n" + NOTES


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, printed only")
    parser.add_argument("--threads", type=int, default=None, help="threads per figure")
    parser.add_argument("--only", choices=["concurrent", "latency", "scaling"], action="append")
    parser.add_argument("--no-langgraph", action="store_true", help="graphruntime only, printed")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--profile",
        metavar="DIR",
        help="cProfile (CPU time) the workers' pool processes, and the client at 1 client "
        "thread, into DIR; printed only",
    )
    args = parser.parse_args(argv)
    n = args.threads if args.threads is not None else (100 if args.quick else 2000)
    phases = set(args.only or ["concurrent", "latency", "scaling"])
    write = not (args.no_write or args.quick or args.no_langgraph or args.only or args.profile)

    def log(msg: str) -> None:
        sys.stdout.write(msg + "\n")
        sys.stdout.flush()

    from checkpoint_pg.embedded import embedded_url

    m = machine()
    meta = {
        "command": command_line(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_start": loadavg(),
        "revision": git_revision("workers", "graphruntime", "checkpoint_pg"),
        "machine": f"{m['nproc']} cores ({m['CPU']}), {m['RAM']}, {m['Python']}",
    }
    server = embedded_url()
    meta["versions"] = versions(server)
    found = postmaster_pid(server)
    POSTMASTER[:] = [] if found is None else [found]
    redis = PrivateRedis()
    saved = {k: os.environ.get(k) for k in ("DATABASE_URL", "REDIS_URL")}
    f = Figures()
    one = max(1, n // 4)  # the latency figure's threads: one client is slow
    try:
        with (
            fresh_database(server, "one_by_one") as workers_db,
            fresh_database(server, "one_by_one_lg") as lg_db,
        ):
            os.environ["DATABASE_URL"] = workers_db
            os.environ["REDIS_URL"] = redis.url
            env = Env(redis, server, workers_db, lg_db, lg_db, args.profile, log)
            if "concurrent" in phases:
                log(f"concurrent: {n} threads, 8 client threads ...")
                f.gr = graphruntime_side(env, n, 8, 2, log)
                if not args.no_langgraph:
                    f.lg = langgraph_side(env, n, 8, log)
            if "latency" in phases:
                log(f"latency: {one} threads, 1 client thread ...")
                f.gr_one = graphruntime_side(env, one, 1, 2, log)
                if not args.no_langgraph:
                    f.lg_one = langgraph_side(env, one, 1, log)
            if "scaling" in phases:
                log(f"scaling: {n} threads, 8 client threads, 4 workers ...")
                f.gr_four = graphruntime_side(env, n, 8, 4, log)
    finally:
        redis.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    meta["load_end"] = loadavg()
    text = section(f, meta)
    log(text)
    if write:
        write_section(RESULTS, text, HEADING, MARK)
    return 0


if __name__ == "__main__":
    sys.exit(main())
