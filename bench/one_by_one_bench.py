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
from functools import partial
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


@dataclass
class Rounds:
    """A side's rounds of one phase, and the figures of them all together."""

    rounds: list[Side] = field(default_factory=list)

    @property
    def total(self) -> Side:
        out = Side()
        for side in self.rounds:
            out.threads += side.threads
            out.wall += side.wall
            for kind, spent in side.cpu.items():
                out.cpu[kind] = out.cpu.get(kind, 0.0) + spent
            out.resume_ms.extend(side.resume_ms)
            out.deliveries += side.deliveries
        return out


Driver = Callable[[Sequence[str]], Side]
"""Starts then resumes the given threads; that round's figures."""


def _ids(n: int, label: str) -> list[str]:
    return [f"{label}-{i}-{uuid.uuid4().hex[:8]}" for i in range(n)]


@contextmanager
def graphruntime_side(env: Env, clients: int, workers: int, warm: int) -> Iterator[Driver]:
    """A cluster of ``workers`` and one client, warmed with ``warm`` threads; yields a
    driver that runs a round of threads on them."""
    with env.graph_cluster(workers, 2) as cluster:
        client = graph_client(cluster)
        # --profile with 1 client thread: cProfile the client's calls (one thread only)
        prof = _client_profiler(env, clients)
        redis = redis_client(env)
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

            def run(ids: Sequence[str]) -> Side:
                delivered = _deliveries(redis)
                cpu = _Cpu([w.pid for w in cluster.workers])  # this run's, not the machine's
                wall, resumes = _drive(ids, clients, start, resume)
                return Side(len(ids), wall, cpu.spent(), resumes, _deliveries(redis) - delivered)

            _drive(_ids(warm, "warm"), clients, start, resume)
            yield run
        finally:
            redis.close()
            client.close()
            if isinstance(prof, cProfile.Profile) and env.profile_dir:
                prof.dump_stats(os.path.join(env.profile_dir, f"client-{os.getpid()}.prof"))


def _gr_line(side: Side, clients: int, workers: int) -> str:
    return (
        f"graphruntime, {clients} client threads, {workers} workers: {side.per_second:.1f} "
        f"threads/s, CPU/run {side.cpu_per_run_ms('client', 'workers'):.2f} ms "
        f"(client {side.cpu_per_run_ms('client'):.2f}, workers "
        f"{side.cpu_per_run_ms('workers'):.2f}, postgres {side.cpu_per_run_ms('postgres'):.2f}), "
        f"Celery deliveries per run {side.deliveries / (2 * side.threads):.2f}"
        + (
            f", resume p50 {_pct(side.resume_ms, 0.5):.2f} ms"
            if clients == 1 and side.resume_ms
            else ""
        )
    )


def _lg_line(side: Side, clients: int) -> str:
    return (
        f"LangGraph, {clients} client threads: {side.per_second:.1f} threads/s, CPU/run "
        f"{side.cpu_per_run_ms('client'):.2f} ms (postgres {side.cpu_per_run_ms('postgres'):.2f})"
        + (
            f", resume p50 {_pct(side.resume_ms, 0.5):.2f} ms"
            if clients == 1 and side.resume_ms
            else ""
        )
    )


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


@contextmanager
def langgraph_side(env: Env, clients: int, warm: int) -> Iterator[Driver]:
    """LangGraph's app on PostgresSaver, warmed with ``warm`` threads; yields a driver."""
    from langgraph.types import Command

    with langgraph_app(env.langgraph_db, 8) as app:

        def start(tid: str) -> None:
            out = app.invoke({"request": f"r{tid}"}, _cfg(tid))
            assert "__interrupt__" in out

        def resume(tid: str) -> None:
            out = app.invoke(Command(resume="yes"), _cfg(tid))
            assert out["result"].endswith(": yes"), out

        def run(ids: Sequence[str]) -> Side:
            cpu = _Cpu()
            wall, resumes = _drive(ids, clients, start, resume)
            return Side(len(ids), wall, cpu.spent(), resumes)

        _drive(_ids(warm, "warm"), clients, start, resume)
        yield run


def alternate(
    drivers: Sequence[Driver], n: int, rounds: int, log: Any, lines: Sequence[Callable[[Side], str]]
) -> list[Rounds]:
    """``n`` threads per driver in ``rounds`` rounds, the drivers taking turns (their order
    reversed every other round), so that a machine's drift weighs on each alike."""
    out = [Rounds() for _ in drivers]
    for r in range(rounds):
        share = n // rounds + (1 if r < n % rounds else 0)
        order = list(range(len(drivers)))
        for i in order if r % 2 == 0 else order[::-1]:
            side = drivers[i](_ids(share, f"r{r}"))
            out[i].rounds.append(side)
            log(f"  round {r + 1}/{rounds}: {lines[i](side)}")
    for rs, line in zip(out, lines, strict=True):
        log(f"  all rounds: {line(rs.total)}")
    return out


def alternate_clusters(
    env: Env, n: int, rounds: int, warm: int, workers: Sequence[int], log: Any
) -> list[Rounds]:
    """:func:`alternate` over clusters of ``workers`` each, one cluster up at a time (they
    share the queues): each round starts and warms its cluster again."""

    def cluster(size: int) -> Driver:
        def run(ids: Sequence[str]) -> Side:
            with graphruntime_side(env, 8, size, warm) as in_cluster:
                return in_cluster(ids)

        return run

    lines = [partial(_gr_line, clients=8, workers=w) for w in workers]
    return alternate([cluster(w) for w in workers], n, rounds, log, lines)


def phase(
    env: Env, clients: int, n: int, rounds: int, warm: int, log: Any, *, lg: bool
) -> tuple[Rounds, Rounds | None]:
    """One phase on 2 workers against LangGraph (unless not ``lg``): each side warmed,
    then :func:`alternate`; graphruntime's rounds and LangGraph's."""
    with (
        graphruntime_side(env, clients, 2, warm) as gr_run,
        langgraph_side(env, clients, warm) if lg else nullcontext(None) as lg_run,
    ):
        both = alternate(
            [gr_run] if lg_run is None else [gr_run, lg_run],
            n,
            rounds,
            log,
            [partial(_gr_line, clients=clients, workers=2), partial(_lg_line, clients=clients)],
        )
    return both[0], both[1] if lg_run is not None else None


def _cfg(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def _pct(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


@dataclass
class Figures:
    gr: Rounds | None = None
    lg: Rounds | None = None
    gr_one: Rounds | None = None
    lg_one: Rounds | None = None
    gr_two: Rounds | None = None  # the scaling phase's 2 workers
    gr_four: Rounds | None = None


def _spread(ratios: Sequence[float]) -> str:
    """The per-round ratios' range, for the table's reader to see the noise."""
    return f"{min(ratios):.2f}-{max(ratios):.2f}x" if ratios else "-"


def _paired(a: Rounds, b: Rounds, figure: Callable[[Side], float]) -> list[float]:
    return [figure(x) / figure(y) for x, y in zip(a.rounds, b.rounds, strict=True) if figure(y)]


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
  A host has a resident per core (one per worker): at 1 client thread a run costs
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
statements. Issue 19's steps of the session of 2026-11-27 20:35-23:35 UTC:

- A resident per core of a host (one per two cores before): at 8 client threads a
  second resident works while the first waits on its round's commits (more runs a
  second, a little more CPU per run: smaller batches).
- Two residents that leave at once lower the flag (before, each saw the other alive:
  the flag stayed up with nobody asleep, and the next run waited for the sweeper, about
  12 s; this bench's 1-thread phase met it after the warm-up's idle pause).
- `end_runs` carries no UPDATE for runs queued again (a separate statement in its
  transaction when there are any): its generic plan opened the runs table's indexes at
  every end, rows or none (backend CPU of an end 1.87 -> 1.43 ms, `bench.pg_cpu`).
- The bench runs each phase in rounds, the sides taking turns, after a warm-up of 100
  threads each: the shared machine's drift weighs on both sides alike.
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
        "LangGraph's process; Postgres' apart. Each phase runs in "
        f"{meta['rounds']} rounds, the two sides taking turns (the order reversed every other "
        "round) after a warm-up of "
        f"{meta['warm']} threads each, so that the shared machine's drift weighs on both; a "
        "figure is the rounds' together (threads over wall seconds, CPU over runs, "
        "percentiles over every resume), and 'per round' gives the range of the rounds' "
        "own ratios."
    )
    lines.append("")
    lines.append(
        "| figure | graphruntime | LangGraph + PostgresSaver | ratio (per round) | target | met |"
    )
    lines.append("|---|---|---|---|---|---|")
    if f.gr and f.lg:
        gr, lg = f.gr.total, f.lg.total
        tput = gr.per_second / lg.per_second
        gr_cpu, lg_cpu = gr.cpu_per_run_ms("client", "workers"), lg.cpu_per_run_ms("client")
        tputs = _paired(f.gr, f.lg, lambda side: side.per_second)
        cpus = _paired(
            f.gr,
            f.lg,
            lambda side: side.cpu_per_run_ms("client", "workers") or side.cpu_per_run_ms("client"),
        )
        lines.append(
            f"| {gr.threads:,} threads, 8 client threads: threads/s | "
            f"{gr.per_second:.1f} ({gr.wall:.1f} s) | {lg.per_second:.1f} "
            f"({lg.wall:.1f} s) | {tput:.2f}x ({_spread(tputs)}) | >= {THROUGHPUT_TARGET:.0f}x | "
            f"{'yes' if tput >= THROUGHPUT_TARGET else 'no'} |"
        )
        lines.append(
            f"| the same: CPU ms per run | {gr_cpu:.2f} (client "
            f"{gr.cpu_per_run_ms('client'):.2f}, workers "
            f"{gr.cpu_per_run_ms('workers'):.2f}) | {lg_cpu:.2f} | {gr_cpu / lg_cpu:.2f}x "
            f"({_spread(cpus)}) | <= {CPU_TARGET}x | "
            f"{'yes' if gr_cpu / lg_cpu <= CPU_TARGET else 'no'} |"
        )
        lines.append(
            f"| the same: Postgres CPU ms per run | {gr.cpu_per_run_ms('postgres'):.2f} | "
            f"{lg.cpu_per_run_ms('postgres'):.2f} | - | - | - |"
        )
    if f.gr_one and f.lg_one:
        gr, lg = f.gr_one.total, f.lg_one.total
        gp50, lp50 = _pct(gr.resume_ms, 0.5), _pct(lg.resume_ms, 0.5)
        p50s = _paired(f.gr_one, f.lg_one, lambda side: _pct(side.resume_ms, 0.5))
        lines.append(
            f"| {gr.threads:,} threads, 1 client thread: resume p50 / p99 ms | "
            f"{gp50:.2f} / {_pct(gr.resume_ms, 0.99):.2f} | {lp50:.2f} / "
            f"{_pct(lg.resume_ms, 0.99):.2f} | {gp50 / lp50:.2f}x ({_spread(p50s)}) | <= 1x | "
            f"{'yes' if gp50 <= lp50 else 'no'} |"
        )
        lines.append(
            f"| the same: threads/s, CPU ms per run | {gr.per_second:.1f}, "
            f"{gr.cpu_per_run_ms('client', 'workers'):.2f} | {lg.per_second:.1f}, "
            f"{lg.cpu_per_run_ms('client'):.2f} | - | - | - |"
        )
    if f.gr_two and f.gr_four:
        two_side, four_side = f.gr_two.total, f.gr_four.total
        two, four = (
            two_side.cpu_per_run_ms("client", "workers"),
            four_side.cpu_per_run_ms("client", "workers"),
        )
        ratios = _paired(f.gr_four, f.gr_two, lambda side: side.cpu_per_run_ms("client", "workers"))
        lines.append(
            f"| 4 workers vs 2, 8 client threads: CPU ms per run (threads/s) | {four:.2f} "
            f"({four_side.per_second:.1f}) vs {two:.2f} ({two_side.per_second:.1f}) | - | "
            f"{four / two:.2f}x ({_spread(ratios)}) | not above 1x plus noise | "
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
        "--rounds", type=int, default=4, help="rounds per phase, the sides taking turns"
    )
    parser.add_argument("--warm", type=int, default=100, help="warm-up threads per side")
    parser.add_argument(
        "--profile",
        metavar="DIR",
        help="cProfile (CPU time) the workers' pool processes, and the client at 1 client "
        "thread, into DIR; printed only",
    )
    args = parser.parse_args(argv)
    n = args.threads if args.threads is not None else (100 if args.quick else 2000)
    if args.rounds < 1 or args.warm < 0 or n // 4 < args.rounds:
        parser.error(
            "--rounds must be at least 1 and at most a quarter of --threads (the latency "
            "phase's threads), --warm at least 0"
        )
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
            rounds, warm = args.rounds, args.warm
            lg = not args.no_langgraph
            if "concurrent" in phases:
                log(f"concurrent: {n} threads, 8 client threads, {rounds} rounds ...")
                f.gr, f.lg = phase(env, 8, n, rounds, warm, log, lg=lg)
            if "latency" in phases:
                log(f"latency: {one} threads, 1 client thread, {rounds} rounds ...")
                f.gr_one, f.lg_one = phase(env, 1, one, rounds, min(warm, one), log, lg=lg)
            if "scaling" in phases:
                log(f"scaling: {n} threads, 8 client threads, 2 vs 4 workers, {rounds} rounds ...")
                f.gr_two, f.gr_four = alternate_clusters(env, n, rounds, warm, [2, 4], log)
    finally:
        redis.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    meta["load_end"] = loadavg()
    meta["rounds"], meta["warm"] = str(args.rounds), str(args.warm)
    text = section(f, meta)
    log(text)
    if write:
        write_section(RESULTS, text, HEADING, MARK)
    return 0


if __name__ == "__main__":
    sys.exit(main())
