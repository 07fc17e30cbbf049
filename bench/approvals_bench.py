"""Approvals at scale against LangGraph + its PostgresSaver, in one run on one Postgres server.

Three figures (issue: approvals at scale):

* ``threads``: N threads (default 2,000) of draft -> review (``interrupt``) -> publish
  run until they wait, then resumed. graphruntime: 2 workers, the client queueing the
  threads' runs with one ``submit_many`` and resuming them with one ``resume_many``;
  LangGraph: one process, ``invoke`` then ``invoke(Command(resume=...))`` per thread.
  Wall time of both phases.
* ``bulk``: M threads (default 10,000) waiting; graphruntime resumes all of them with one
  ``resume_many`` (until every resumed run has finished); LangGraph resumes them one by
  one in one process. Only the resume is timed; the threads are made beforehand.
* ``inbox``: 100,000 pending interrupts; the median time of the first page (50 rows,
  filtered on a value field) through ``GraphClient.inbox``. The rows are written with SQL
  (one statement), as 100,000 runs would have left them, runs included.

Run: ``python -m bench.approvals_bench`` (``--quick`` for small sizes, printed only).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import psycopg

from bench._report import command_line, git_revision, loadavg, machine, write_section
from bench.workers_bench import Env, PrivateRedis, fresh_database, graph_client, versions

RESULTS = Path(__file__).with_name("RESULTS.md")
HEADING = "## Approvals at scale"
MARK = "approvals-bench"

THREADS_TARGET = 0.5  # 2,000 threads on 2 workers in <= 1/2 of LangGraph's time
BULK_TARGET = 1 / 3  # a 10,000-thread bulk resume in <= 1/3 of LangGraph one by one
INBOX_TARGET_MS = 10.0  # first filtered page of a 100,000-row inbox


class ApprovalState(TypedDict, total=False):
    request: str
    draft: str
    answer: str
    result: str


def build_approval(graph_module: Any, types_module: Any) -> Any:
    """The same graph for both runtimes: draft -> review (interrupt) -> publish."""
    interrupt = types_module.interrupt

    def draft(state: ApprovalState) -> dict[str, Any]:
        return {"draft": f"draft of {state['request']}"}

    def review(state: ApprovalState) -> dict[str, Any]:
        return {"answer": interrupt({"question": "publish?", "team": state["request"][-1]})}

    def publish(state: ApprovalState) -> dict[str, Any]:
        return {"result": f"{state['draft']}: {state['answer']}"}

    builder = graph_module.StateGraph(ApprovalState)
    builder.add_node("draft", draft)
    builder.add_node("review", review)
    builder.add_node("publish", publish)
    builder.add_edge(graph_module.START, "draft")
    builder.add_edge("draft", "review")
    builder.add_edge("review", "publish")
    builder.add_edge("publish", graph_module.END)
    return builder


# --- LangGraph, in one process ---------------------------------------------------------


@contextmanager
def langgraph_app(url: str) -> Iterator[Any]:
    import langgraph.graph as lg_graph
    import langgraph.types as lg_types
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    with psycopg.Connection.connect(
        url, autocommit=True, prepare_threshold=0, row_factory=dict_row
    ) as conn:
        saver = PostgresSaver(conn)  # type: ignore[arg-type]
        saver.setup()
        yield build_approval(lg_graph, lg_types).compile(checkpointer=saver)


def langgraph_pause(app: Any, ids: Sequence[str]) -> float:
    t0 = time.perf_counter()
    for tid in ids:
        out = app.invoke({"request": f"r{tid}"}, {"configurable": {"thread_id": tid}})
        assert "__interrupt__" in out
    return time.perf_counter() - t0


def langgraph_resume(app: Any, ids: Sequence[str]) -> float:
    from langgraph.types import Command

    t0 = time.perf_counter()
    for tid in ids:
        out = app.invoke(Command(resume="yes"), {"configurable": {"thread_id": tid}})
        assert out["result"].endswith(": yes"), out
    return time.perf_counter() - t0


# --- graphruntime on the workers -------------------------------------------------------


def postmaster_pid(url: str) -> int | None:
    """The pid of the Postgres server at ``url`` (the parent of a backend), if local."""
    try:
        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT pg_backend_pid()").fetchone()
            stat = Path(f"/proc/{row[0]}/stat").read_text() if row else ""
    except (psycopg.Error, OSError):
        return None
    return int(stat.rsplit(")", 1)[1].split()[1]) if stat else None


class CpuMeter:
    """CPU seconds spent since it was made by the workers, Postgres and this process,
    from /proc (Linux only; processes that exited meanwhile are not counted).

    On a shared machine other runs' workers and Postgres servers are not counted when
    the meter is told whose are this run's: ``workers``, the sessions of this run's
    worker processes (a ``LocalCluster`` starts each in a session of its own, which its
    pool processes share), and ``postmaster``, the pid of this run's Postgres server.
    """

    def __init__(self, workers: Iterable[int] | None = None, postmaster: int | None = None) -> None:
        self.workers = None if workers is None else set(workers)
        self.postmaster = postmaster
        self.start = self._sample()

    def _sample(self) -> dict[int, tuple[str, float]]:
        tick = os.sysconf("SC_CLK_TCK")
        out: dict[int, tuple[str, float]] = {}
        for entry in Path("/proc").iterdir() if Path("/proc/self/stat").exists() else ():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            name, fields = stat[stat.find("(") + 1 : stat.rfind(")")], stat.rsplit(")", 1)[1]
            parts = fields.split()
            pid, ppid, session = int(entry.name), int(parts[1]), int(parts[3])
            kind = (
                "postgres"
                if "postgres" in name
                and (self.postmaster is None or self.postmaster in (pid, ppid))
                else "workers"
                if b"celery" in cmd and (self.workers is None or session in self.workers)
                else "client"
                if pid == os.getpid()
                else None
            )
            if kind is not None:
                out[pid] = (kind, (int(parts[11]) + int(parts[12])) / tick)
        return out

    def spent(self) -> str:
        totals: dict[str, float] = {}
        for pid, (kind, used) in self._sample().items():
            before = self.start.get(pid, (kind, 0.0))[1]
            totals[kind] = totals.get(kind, 0.0) + used - before
        return ", ".join(f"{k} {v:.1f}" for k, v in sorted(totals.items()))


def _wait_runs(db: str, run_ids: Sequence[str], timeout: float) -> None:
    """Until every run has ended (one count per 20 ms; the instrument, not the product)."""
    give_up = time.monotonic() + timeout
    with psycopg.connect(db, autocommit=True) as conn:
        while True:
            (left,) = conn.execute(
                "SELECT count(*) FROM graphruntime_runs WHERE run_id = ANY(%s::uuid[]) "
                "AND status IN ('queued', 'running')",
                (list(run_ids),),
            ).fetchone() or (0,)
            if left == 0:
                return
            if time.monotonic() > give_up:
                raise TimeoutError(f"{left} of {len(run_ids)} runs still going after {timeout}s")
            time.sleep(0.02)


def _failed(db: str, run_ids: Sequence[str]) -> int:
    with psycopg.connect(db, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM graphruntime_runs WHERE run_id = ANY(%s::uuid[]) "
            "AND status NOT IN ('interrupted', 'success')",
            (list(run_ids),),
        ).fetchone()
    return int(row[0]) if row else 0


def _cfg(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def workers_pause(client: Any, db: str, ids: Sequence[str], timeout: float) -> float:
    t0 = time.perf_counter()
    handles = client.submit_many(
        "bench_approval",
        [({"request": f"r{tid}"}, {"configurable": {"thread_id": tid}}) for tid in ids],
    )
    run_ids = [h.run_id for h in handles]
    _wait_runs(db, run_ids, timeout)
    took = time.perf_counter() - t0
    bad = _failed(db, run_ids)
    assert bad == 0, f"{bad} runs did not pause"
    return took


def workers_bulk_resume(client: Any, db: str, key: str, timeout: float, n: int) -> float:
    cpu = CpuMeter() if n >= 1000 else None
    t0 = time.perf_counter()
    outcomes = client.resume_many("bench_approval", where={}, value="yes", idempotency_key=key)
    if n >= 1000:
        sys.stdout.write(f"  resume_many returned after {time.perf_counter() - t0:.2f}s\n")
    run_ids = [o.run_id for o in outcomes if o.outcome == "applied"]
    assert len(run_ids) == n, f"{len(run_ids)} applied of {n}: {outcomes[:3]}"
    _wait_runs(db, run_ids, timeout)
    took = time.perf_counter() - t0
    if cpu is not None:
        sys.stdout.write(f"  CPU seconds while resuming: {cpu.spent()}\n")
    bad = _failed(db, run_ids)
    assert bad == 0, f"{bad} resumed runs failed"
    return took


# --- the inbox at 100,000 --------------------------------------------------------------

FILL_INBOX = """
WITH t AS (
    SELECT i, 'inbox-' || i AS thread_id, gen_random_uuid() AS run_id
    FROM generate_series(1, %(n)s) AS i
), threads AS (
    INSERT INTO graphruntime_threads (thread_id, graph)
    SELECT thread_id, 'bench_approval' FROM t ON CONFLICT DO NOTHING
), runs AS (
    INSERT INTO graphruntime_runs (run_id, thread_id, graph, status, kind, payload_type, payload)
    SELECT run_id, thread_id, 'bench_approval', 'interrupted', 'input', 'json', '{}'::bytea
    FROM t
)
INSERT INTO graphruntime_interrupts
    (thread_id, interrupt_id, graph, run_id, checkpoint_id, node, namespace, value,
     created_at)
SELECT thread_id, md5(thread_id), 'bench_approval', run_id, 'c', 'review', 'review:x',
       jsonb_build_object('question', 'publish?', 'team', 'team-' || (i %% 20),
                          'amount', i %% 1000),
       now() - make_interval(secs => %(n)s - i)
FROM t
"""


def inbox_latency(client: Any, db: str, n: int, samples: int) -> tuple[float, float]:
    """Median ms of the first 50-row page filtered on a value field, and unfiltered."""
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute(FILL_INBOX, {"n": n})
        conn.execute("ANALYZE graphruntime_interrupts")
        conn.execute("ANALYZE graphruntime_runs")
        (count,) = conn.execute("SELECT count(*) FROM graphruntime_interrupts").fetchone() or (0,)
    assert count >= n, count

    def timed(call: Callable[[], Any]) -> float:
        for _ in range(5):
            call()
        runs = []
        for _ in range(samples):
            t0 = time.perf_counter()
            page = call()
            runs.append((time.perf_counter() - t0) * 1000)
            assert len(page.items) == 50
        return statistics.median(runs)

    filtered = timed(lambda: client.inbox("bench_approval", where={"team": "team-7"}, limit=50))
    plain = timed(lambda: client.inbox("bench_approval", limit=50))
    return filtered, plain


# --- the run ---------------------------------------------------------------------------


@dataclass
class Figures:
    threads: int = 0
    lg_pause: float = 0.0
    lg_resume: float = 0.0
    gr_pause: float = 0.0
    gr_resume: float = 0.0
    bulk: int = 0
    lg_bulk: float = 0.0
    gr_bulk: float = 0.0
    inbox_rows: int = 0
    inbox_filtered_ms: float = 0.0
    inbox_plain_ms: float = 0.0


def run(
    env: Env, figures: Figures, n: int, bulk: int, inbox_rows: int, log: Any, concurrency: int
) -> None:
    with env.graph_cluster(2, concurrency) as cluster:
        client = graph_client(cluster)
        try:
            warm = [f"warm-{uuid.uuid4()}" for _ in range(8)]
            workers_pause(client, env.workers_db, warm, 120)
            workers_bulk_resume(client, env.workers_db, "warm", 120, len(warm))
            if n:
                ids = [f"t-{i}-{uuid.uuid4().hex[:8]}" for i in range(n)]
                log(f"threads: {n} on 2 workers ...")
                figures.threads = n
                figures.gr_pause = workers_pause(client, env.workers_db, ids, 900)
                figures.gr_resume = workers_bulk_resume(client, env.workers_db, "t", 900, n)
                log(f"  graphruntime {figures.gr_pause:.2f}s + {figures.gr_resume:.2f}s")
            if bulk:
                ids = [f"b-{i}-{uuid.uuid4().hex[:8]}" for i in range(bulk)]
                log(f"bulk: {bulk} threads paused (not timed) ...")
                workers_pause(client, env.workers_db, ids, 1800)
                figures.bulk = bulk
                figures.gr_bulk = workers_bulk_resume(client, env.workers_db, "b", 1800, bulk)
                log(f"  graphruntime bulk resume {figures.gr_bulk:.2f}s")
            if inbox_rows:
                log(f"inbox: {inbox_rows} rows ...")
                figures.inbox_rows = inbox_rows
                figures.inbox_filtered_ms, figures.inbox_plain_ms = inbox_latency(
                    client, env.workers_db, inbox_rows, 200
                )
                log(f"  first page {figures.inbox_filtered_ms:.2f} ms (filtered)")
        finally:
            client.close()


def run_langgraph(env: Env, figures: Figures, n: int, bulk: int, log: Any) -> None:
    with langgraph_app(env.langgraph_db) as app:
        langgraph_pause(app, [f"warm-{i}" for i in range(8)])
        langgraph_resume(app, [f"warm-{i}" for i in range(8)])
        if n:
            ids = [f"t-{i}" for i in range(n)]
            figures.lg_pause = langgraph_pause(app, ids)
            figures.lg_resume = langgraph_resume(app, ids)
            log(f"  LangGraph {figures.lg_pause:.2f}s + {figures.lg_resume:.2f}s")
        if bulk:
            ids = [f"b-{i}" for i in range(bulk)]
            langgraph_pause(app, ids)
            figures.lg_bulk = langgraph_resume(app, ids)
            log(f"  LangGraph one by one {figures.lg_bulk:.2f}s")


def section(figures: Figures, meta: dict[str, str]) -> str:
    f = figures
    lines = [HEADING, ""]
    lines.append(
        f"`{meta['command']}` on {meta['machine']}; {meta['date']}, {meta['revision']}; "
        f"load {meta['load_start']} at start. {meta['versions']}. Both sides use the same "
        "embedded Postgres server (one database each); Redis is private to the run. "
        f"graphruntime: 2 workers of {meta['concurrency']} pool processes each."
    )
    lines.append("")
    lines.append("| figure | graphruntime | LangGraph + PostgresSaver | ratio | target | met |")
    lines.append("|---|---|---|---|---|---|")
    if f.threads:
        gr, lg = f.gr_pause + f.gr_resume, f.lg_pause + f.lg_resume
        lines.append(
            f"| {f.threads:,} threads interrupted, then resumed (2 workers vs 1 process) | "
            f"{gr:.2f} s ({f.gr_pause:.2f} + {f.gr_resume:.2f}) | "
            f"{lg:.2f} s ({f.lg_pause:.2f} + {f.lg_resume:.2f}) | {gr / lg:.2f}x | "
            f"<= {THREADS_TARGET}x | {'yes' if gr / lg <= THREADS_TARGET else 'no'} |"
        )
    if f.bulk:
        ratio = f.gr_bulk / f.lg_bulk
        lines.append(
            f"| {f.bulk:,} threads resumed: one bulk call vs one by one | {f.gr_bulk:.2f} s | "
            f"{f.lg_bulk:.2f} s | {ratio:.2f}x | <= {BULK_TARGET:.2f}x | "
            f"{'yes' if ratio <= BULK_TARGET else 'no'} |"
        )
    if f.inbox_rows:
        lines.append(
            f"| inbox of {f.inbox_rows:,}: first page of 50, filtered on a value field "
            f"(median of 200) | {f.inbox_filtered_ms:.2f} ms (unfiltered "
            f"{f.inbox_plain_ms:.2f} ms) | no inbox | - | < {INBOX_TARGET_MS:.0f} ms | "
            f"{'yes' if f.inbox_filtered_ms < INBOX_TARGET_MS else 'no'} |"
        )
    lines.append("")
    lines.append(
        "graphruntime's time runs from the first submit (or the bulk call) until every run "
        "has ended, client included; LangGraph's is its loop of invoke calls. The threads "
        "figure's phases are one `submit_many` and one `resume_many`; the bulk figure's "
        "LangGraph threads were paused beforehand, untimed, as graphruntime's were."
    )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, printed only")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--bulk", type=int, default=None)
    parser.add_argument("--inbox", type=int, default=None)
    parser.add_argument(
        "--concurrency",
        type=int,
        default=2,
        help="pool processes per worker (Celery's default is the number of cores: 2 here)",
    )
    parser.add_argument(
        "--profile", metavar="DIR", help="cProfile the workers' pool processes into DIR"
    )
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--no-langgraph", action="store_true", help="graphruntime only, printed only"
    )
    args = parser.parse_args(argv)
    n = args.threads if args.threads is not None else (200 if args.quick else 2000)
    bulk = args.bulk if args.bulk is not None else (500 if args.quick else 10_000)
    inbox_rows = args.inbox if args.inbox is not None else (10_000 if args.quick else 100_000)
    write = not (args.no_write or args.quick or args.profile or args.no_langgraph)

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
        "concurrency": str(args.concurrency),
    }
    server = embedded_url()
    meta["versions"] = versions(server)
    redis = PrivateRedis()
    saved = {k: os.environ.get(k) for k in ("DATABASE_URL", "REDIS_URL")}
    figures = Figures()
    try:
        with (
            fresh_database(server, "approvals") as workers_db,
            fresh_database(server, "approvals_lg") as lg_db,
        ):
            os.environ["DATABASE_URL"] = workers_db
            os.environ["REDIS_URL"] = redis.url
            env = Env(redis, server, workers_db, lg_db, lg_db, args.profile, log)
            run(env, figures, n, bulk, inbox_rows, log, args.concurrency)
            if not args.no_langgraph:
                run_langgraph(env, figures, n, bulk, log)
    finally:
        redis.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if args.no_langgraph:
        log(f"graphruntime only: {figures}")
        return 0
    text = section(figures, meta)
    log(text)
    if write:
        write_section(RESULTS, text, HEADING, MARK)
    return 0


if __name__ == "__main__":
    sys.exit(main())
