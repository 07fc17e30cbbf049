"""Where Postgres' CPU goes per run: each statement's backend CPU, and the server's
other processes.

    .venv/bin/python -m bench.pg_cpu [--prefill 2000] [--runs 300]

A private Postgres (pgserver, in a temporary folder, deleted at the end), the cluster's
two halves without Celery or Redis (``bench/run_cpu.py``'s ``cluster_halves``: the
client's ``submit``, then the coordinator's job on its pinned connection), one run at a
time: the approval graph's threads, started then resumed. ``--prefill`` threads first,
so the tables have a realistic size; then ``--runs`` threads measured.

Each statement's CPU is its backend's on-CPU time (``/proc/<pid>/schedstat``, ns) around
the statement, commit included (autocommit), named after the workers' and the saver's
named queries. The server's other processes (WAL writer, checkpointer, autovacuum, ...)
are counted over the whole measured window, by process title. Printed only.

``--setting NAME=VALUE`` (ALTER SYSTEM) and ``--sql TEXT`` (after the migrations) try a
server setting or a schema change; ``--perf FILE`` records the backends with ``perf``
(call graphs) over the measured window; ``--plans`` lists each prepared statement's
generic and custom plans.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from bench.approvals_bench import build_approval


def _oncpu(pid: int) -> int:
    """ns on CPU of process ``pid`` so far."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def _children(postmaster: int) -> dict[int, str]:
    out: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid != postmaster and int(entry) != postmaster:
                continue
            with open(f"/proc/{entry}/cmdline") as f:
                title = f.read().replace("\0", " ").strip()
        except (OSError, ValueError, IndexError):
            continue
        out[int(entry)] = title
    return out


def _kind(title: str) -> str:
    """A server process's kind from its title: backends, walwriter, autovacuum worker..."""
    if "postgres:" not in title:
        return "postmaster"
    rest = title.split("postgres:", 1)[1].strip()
    if "[local]" in rest or "idle" in rest or "SELECT" in rest:
        return "backends"
    if rest.startswith("autovacuum"):
        return " ".join(rest.split()[:2])
    return re.sub(r"\s+.*", "", rest)


def _name_of(sql: str, names: dict[str, str]) -> str:
    key = " ".join(str(sql).split())[:200]
    return names.get(key, key[:60])


def _named_queries() -> dict[str, str]:
    from checkpoint_pg import _queries as cq
    from workers._sql import QUERIES

    names: dict[str, str] = {}
    for name in QUERIES:
        names[" ".join(str(QUERIES[name]).split())[:200]] = name
    for attr in dir(cq):
        value = getattr(cq, attr)
        if attr.isupper() and isinstance(value, str):
            names.setdefault(" ".join(value.split())[:200], f"checkpoint_pg.{attr}")
    return names


class StatementMeter:
    """Backend CPU per statement: patches psycopg's execute on the measured connections."""

    def __init__(self) -> None:
        self.on = False
        self.ns: dict[str, int] = defaultdict(int)
        self.count: dict[str, int] = defaultdict(int)
        self.samples: dict[str, list[Any]] = defaultdict(list)
        self.names = _named_queries()

    @contextmanager
    def installed(self) -> Iterator[None]:
        import psycopg

        meter = self
        orig_exec = psycopg.Cursor.execute
        orig_many = psycopg.Cursor.executemany

        def timed(cur: Any, name: str, call: Callable[[], Any]) -> Any:
            """``call()``, its backend's on-CPU time counted under ``name``."""
            pid = cur.connection.info.backend_pid
            t0 = _oncpu(pid)
            try:
                return call()
            finally:
                meter.ns[name] += _oncpu(pid) - t0
                meter.count[name] += 1

        def execute(self: Any, query: Any, params: Any = None, **kw: Any) -> Any:
            if not meter.on or self.connection._pipeline is not None:
                return orig_exec(self, query, params, **kw)
            name = _name_of(query, meter.names)
            if len(meter.samples[name]) < 2:
                meter.samples[name].append(params)
            return timed(self, name, lambda: orig_exec(self, query, params, **kw))

        def executemany(self: Any, query: Any, params: Any, **kw: Any) -> Any:
            if not meter.on:
                return orig_many(self, query, params, **kw)
            name = "many:" + _name_of(query, meter.names)
            return timed(self, name, lambda: orig_many(self, query, params, **kw))

        psycopg.Cursor.execute = execute  # type: ignore[method-assign]
        psycopg.Cursor.executemany = executemany  # type: ignore[method-assign,assignment]
        try:
            yield
        finally:
            psycopg.Cursor.execute = orig_exec  # type: ignore[method-assign]
            psycopg.Cursor.executemany = orig_many  # type: ignore[method-assign]


def _plans(stores: Any) -> list[str]:
    """Each prepared statement's generic and custom plans so far, per connection."""
    out = []
    for pool in stores.pools:
        rows: list[Any] = []
        for conn in list(pool._pool):  # the idle connections: statements are per session
            rows += conn.execute(
                "SELECT generic_plans, custom_plans, statement FROM pg_prepared_statements"
            ).fetchall()
        for row in rows:
            text = " ".join(str(row["statement"]).split())[:70]
            out.append(
                f"  plans: generic {row['generic_plans']} custom {row['custom_plans']}: {text}"
            )
    return out


def measure(
    url: str,
    postmaster: int,
    prefill: int,
    runs: int,
    say: Callable[[str], None],
    perf_file: str | None = None,
    extra_sql: Sequence[str] = (),
    plans: bool = False,
) -> StatementMeter:
    """Prefill, then measure ``runs`` threads; prints the figures, returns the meter (its
    ``samples``: each statement's first parameters, for ad hoc A/B scripts)."""
    import graphruntime.graph as g
    import graphruntime.types as t
    from bench._services import PostgresStores
    from workers.coordinator import coordinate_many
    from workers.testing import InlineCluster

    stores = PostgresStores(url)
    cluster = InlineCluster({"a": build_approval(g, t).compile()}, stores=stores, workers=1)
    ctx, client = cluster.workers[0], cluster.client
    meter = StatementMeter()
    if extra_sql:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            for text in extra_sql:
                conn.execute(text)

    def one(value: Any, tid: str) -> None:
        client.submit("a", value, {"configurable": {"thread_id": tid}})
        jobs = list(cluster.broker.coordinator)
        cluster.broker.coordinator.clear()
        with stores.pools[0].pinned():
            for job in jobs:
                coordinate_many(ctx, list(job.run_ids))

    last: list[str] = []

    def thread() -> None:
        tid = f"t-{uuid.uuid4().hex}"
        one({"request": tid}, tid)
        one(t.Command(resume="yes"), tid)
        last[:] = [tid]

    try:
        t0 = time.monotonic()
        for i in range(prefill):
            thread()
            if i and i % 1000 == 0:
                say(f"  prefilled {i} threads ({time.monotonic() - t0:.0f} s)")
        with meter.installed():
            for _ in range(20):
                thread()
            procs = _children(postmaster)
            perf = None
            if perf_file:
                backends = [str(p) for p, title in procs.items() if _kind(title) == "backends"]
                perf = subprocess.Popen(
                    [
                        *("perf", "record", "-F", "1000", "--call-graph", "dwarf,32768"),
                        *("-o", perf_file, "-p", ",".join(backends)),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                time.sleep(1.0)
            before = {pid: _oncpu(pid) for pid in procs}
            meter.on = True
            w0 = time.monotonic()
            for _ in range(runs):
                thread()
            wall = time.monotonic() - w0
            meter.on = False
            # the runs measured did their work (as bench/run_cpu.py checks its own)
            state = client.get_state("a", {"configurable": {"thread_id": last[0]}})
            assert str(state.values.get("result", "")).endswith(": yes"), state.values
            if perf is not None:
                perf.send_signal(signal.SIGINT)
                perf.wait(timeout=60)
            after_procs = _children(postmaster)
            by_kind: dict[str, int] = defaultdict(int)
            for pid, title in after_procs.items():
                with suppress(OSError):
                    by_kind[_kind(title)] += _oncpu(pid) - before.get(pid, 0)
        plan_lines = _plans(stores) if plans else []
        with stores.pools[0].connection() as conn:
            analyzed = conn.execute(
                "SELECT coalesce(sum(autoanalyze_count), 0) AS analyze,"
                " coalesce(sum(autovacuum_count), 0) AS vacuum FROM pg_stat_user_tables"
            ).fetchone()
    finally:
        stores.close()
    for line in plan_lines:
        say(line)
    n = 2 * runs
    assert analyzed is not None
    say(
        f"autoanalyze runs {analyzed['analyze']}, autovacuum runs {analyzed['vacuum']} (all tables)"
    )
    total = sum(by_kind.values())
    say(f"{runs} threads ({n} runs) in {wall:.1f} s; Postgres CPU per run {total / n / 1e6:.3f} ms")
    for kind, ns in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        say(f"  {kind:40s} {ns / n / 1e6:8.3f} ms/run")
    say("backend CPU per statement (ms per run, count per run, ms per call):")
    stmt_total = 0
    for name, ns in sorted(meter.ns.items(), key=lambda kv: -kv[1]):
        stmt_total += ns
        c = meter.count[name]
        say(f"  {name:60s} {ns / n / 1e6:7.3f}  {c / n:5.2f}  {ns / c / 1e6:7.3f}")
    say(f"  {'(all measured statements)':60s} {stmt_total / n / 1e6:7.3f}")
    return meter


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--prefill", type=int, default=2000, help="threads before measuring")
    parser.add_argument("--runs", type=int, default=300, help="threads measured")
    parser.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--sql", action="append", default=[], help="run after the migrations")
    parser.add_argument("--perf", metavar="FILE", help="perf record the backends into FILE")
    parser.add_argument("--plans", action="store_true", help="generic/custom plans per statement")
    args = parser.parse_args(argv)
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:9/0")  # the app is never used
    import psycopg
    from pgserver.postgres_server import get_server

    from checkpoint_pg import migrate

    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    folder = Path(tempfile.mkdtemp(prefix="gr-pgcpu-"))
    pg = get_server(folder / "pg", cleanup_mode="delete")
    try:
        url = pg.get_uri()
        with psycopg.connect(url, autocommit=True) as conn:
            for setting in args.setting:
                name, value = setting.split("=", 1)
                conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
            conn.execute("SELECT pg_reload_conf()")
            migrate(conn)
        postmaster = int((folder / "pg" / "postmaster.pid").read_text().split()[0])
        import workers

        say(f"load {os.getloadavg()}; postmaster {postmaster}; code {workers.__file__}")
        measure(url, postmaster, args.prefill, args.runs, say, args.perf, args.sql, args.plans)
        say(f"load {os.getloadavg()}")
    finally:
        pg.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
