"""AsyncPostgresSaver: checkpoint_pg's vs langgraph-checkpoint-postgres', many clients, one pool.

    .venv/bin/python -m bench.async_saver [--clients 200] [--ops 10] [--rounds 5] [--pool 20]

``--clients`` asyncio tasks share one saver on one ``AsyncConnectionPool`` (``--pool``
connections, opened before timing). Each client owns a thread and runs ``--ops`` times:
``aput`` (the next checkpoint of its thread), ``aput_writes`` (three writes against it) and
``aget_tuple`` (the thread's latest). Both sides run the same workload on the same server
(``DATABASE_URL``, else the embedded one), each on a fresh database, in alternating rounds;
throughput (client ops per second) and CPU seconds are medians over rounds. LangGraph's
saver holds one lock for every call (langgraph#7259), so its calls on a pool run one at a
time; checkpoint_pg's borrow a connection each and run in parallel.

Writes its section of bench/RESULTS.md (other sections are left alone).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import importlib
import statistics
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psutil
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._report import command_line, git_revision, loadavg, machine, write_section  # noqa: E402
from checkpoint_pg.embedded import data_dir, database_url, scratch_database  # noqa: E402

RESULTS = ROOT / "bench" / "RESULTS.md"
HEADING = "## AsyncPostgresSaver: many clients on one pool (issue #18)"
MARK = "async_saver_bench"
SIDES = ("langgraph", "graphruntime")
NAMES = {
    "langgraph": "LangGraph's AsyncPostgresSaver",
    "graphruntime": "checkpoint_pg's AsyncPostgresSaver",
}


def saver_class(side: str) -> Any:
    if side == "langgraph":
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver as Theirs

        return Theirs
    from checkpoint_pg.aio import AsyncPostgresSaver as Ours

    return Ours


def checkpoint_of(side: str, i: int) -> tuple[dict[str, Any], dict[str, str]]:
    """Step ``i`` of a 10-node chain's checkpoint, in ``side``'s own types."""
    base = importlib.import_module(f"{side}.checkpoint.base")
    ids = importlib.import_module(f"{side}.checkpoint.base.id")
    checkpoint: dict[str, Any] = dict(base.empty_checkpoint())
    checkpoint["id"] = str(ids.uuid6(clock_seq=i))
    versions = {f"branch:to:node_{j}": f"{j + 1:032}.0.{j}123456789" for j in range(10)}
    versions["n"] = versions["trace"] = f"{i + 2:032}.0.5555{i}"
    checkpoint["channel_versions"] = versions
    checkpoint["versions_seen"] = {
        f"node_{j}": {f"branch:to:node_{j}": versions[f"branch:to:node_{j}"]} for j in range(10)
    }
    checkpoint["channel_values"] = {"n": i, "trace": [f"node_{j}" for j in range(i % 10)]}
    return checkpoint, {"n": versions["n"], "trace": versions["trace"]}


def postmaster() -> psutil.Process | None:
    """The embedded server's postmaster, to count the server's CPU (None: another server)."""
    pid_file = data_dir() / "pg" / "postmaster.pid"
    try:
        return psutil.Process(int(pid_file.read_text().split()[0]))
    except (OSError, ValueError, psutil.Error):
        return None


def server_cpu(master: psutil.Process | None) -> float:
    if master is None:
        return 0.0
    total = 0.0
    for proc in [master, *master.children(recursive=True)]:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


@asynccontextmanager
async def saver_on_pool(side: str, url: str, size: int) -> AsyncIterator[Any]:
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(
        url, min_size=size, max_size=size, kwargs=kwargs, open=False
    ) as pool:
        await pool.wait()
        saver = saver_class(side)(pool)
        await saver.setup()
        yield saver


async def client(side: str, saver: Any, ops: int) -> str:
    """One client's ops on its own thread; returns the id of its last checkpoint."""
    thread = f"bench-{uuid.uuid4()}"
    config: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    last = ""
    for i in range(ops):
        checkpoint, versions = checkpoint_of(side, i)
        metadata = {"source": "loop", "step": i, "parents": {}}
        config = await saver.aput(config, checkpoint, metadata, versions)
        writes = [("n", i), ("trace", [f"node_{i}"]), ("branch:to:node_1", None)]
        await saver.aput_writes(config, writes, str(uuid.uuid4()), "~__pregel_pull")
        found = await saver.aget_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
        assert found is not None
        assert found.checkpoint["id"] == checkpoint["id"]
        last = checkpoint["id"]
    return last


async def one_round(side: str, url: str, args: argparse.Namespace) -> dict[str, float]:
    master = postmaster()
    async with saver_on_pool(side, url, args.pool) as saver:
        cpu, server = time.process_time(), server_cpu(master)
        started = time.perf_counter()
        results = await asyncio.gather(
            *(client(side, saver, args.ops) for _ in range(args.clients))
        )
        elapsed = time.perf_counter() - started
        cpu, server = time.process_time() - cpu, server_cpu(master) - server
    assert len(results) == args.clients
    assert all(results)
    ops = args.clients * args.ops
    return {"ops_per_s": ops / elapsed, "seconds": elapsed, "cpu": cpu, "server_cpu": server}


def run(args: argparse.Namespace) -> dict[str, list[dict[str, float]]]:
    server = database_url()
    out: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
    for r in range(args.rounds):
        for side in SIDES if r % 2 == 0 else SIDES[::-1]:
            with scratch_database(server, f"bench_async_{side[:2]}") as url:
                found = asyncio.run(one_round(side, url, args))
            out[side].append(found)
            sys.stdout.write(
                f"round {r + 1} {side}: {found['ops_per_s']:.0f} ops/s "
                f"({found['seconds']:.2f} s, client CPU {found['cpu']:.2f} s, "
                f"server CPU {found['server_cpu']:.2f} s)\n"
            )
            sys.stdout.flush()
    return out


def median(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(row[key] for row in rows)


def report(
    args: argparse.Namespace, out: dict[str, list[dict[str, float]]], loads: tuple[str, str]
) -> str:
    info = machine()
    theirs, ours = out["langgraph"], out["graphruntime"]
    ratio = median(ours, "ops_per_s") / median(theirs, "ops_per_s")
    per_op = args.clients * args.ops
    lines = [
        HEADING,
        "",
        "Written by `bench/async_saver.py`. One op of a client = `aput` (its thread's next",
        "checkpoint, a 10-node chain's) + `aput_writes` (3 writes) + `aget_tuple` (the latest),",
        f"{args.clients} asyncio clients at once on one `AsyncConnectionPool` of {args.pool}",
        f"connections, {args.ops} ops each; both savers on the same server, each on a fresh",
        "database, rounds alternating. Medians over rounds; CPU: this process (client) and the",
        "embedded server's processes (server), per round.",
        "",
        f"- Command: `{command_line()}`",
        f"- Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        f"- Machine: {info['nproc']} CPUs (nproc), {info['CPU']}, {info['RAM']} RAM, "
        f"{info['Python']}",
        f"- Revision: {git_revision('checkpoint_pg', 'bench')}",
        f"- Load average (1/5/15 min): {loads[0]} before, {loads[1]} after. The machine is "
        "shared: other processes add noise.",
        f"- Rounds: {args.rounds} per side",
        "",
        "| saver | ops/s (median) | s per round | client CPU s | server CPU s | CPU ms per op |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for side in SIDES:
        rows = out[side]
        cpu = median(rows, "cpu") + median(rows, "server_cpu")
        lines.append(
            f"| {NAMES[side]} | {median(rows, 'ops_per_s'):.0f} | {median(rows, 'seconds'):.2f} "
            f"| {median(rows, 'cpu'):.2f} | {median(rows, 'server_cpu'):.2f} "
            f"| {1000 * cpu / per_op:.2f} |"
        )
    lines += [
        "",
        f"Throughput ratio (checkpoint_pg / LangGraph, medians): **{ratio:.2f}x** "
        f"(target ≥ 3x: {'met' if ratio >= 3 else 'not met'}).",
        "",
        "Per round, ops/s: "
        + "; ".join(
            f"{side} " + ", ".join(f"{row['ops_per_s']:.0f}" for row in out[side]) for side in SIDES
        )
        + ".",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--ops", type=int, default=10, help="ops per client per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pool", type=int, default=20, help="connections in the pool")
    parser.add_argument("--no-write", action="store_true", help="print, do not write RESULTS")
    args = parser.parse_args(argv)
    before = loadavg()
    out = run(args)
    text = report(args, out, (before, loadavg()))
    sys.stdout.write(text)
    if not args.no_write:
        write_section(RESULTS, text, HEADING, MARK)
    return 0


if __name__ == "__main__":
    sys.exit(main())
