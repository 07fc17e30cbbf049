"""A coordinator round's held checkpoints and writes, stored by checkpoint_pg: thread CPU,
statements and psycopg waits per round (issue #19).

    .venv/bin/python -m bench.round_store --before DIR   # both checkouts, writes RESULTS.md
    .venv/bin/python -m bench.round_store --no-write     # this checkout, prints
    .venv/bin/python -m bench.round_store --before DIR --run-cpu 300   # and bench.run_cpu

A round holds, per run, what an approval start makes: 3 fenced checkpoint puts (input,
step 0, step 1; one value big enough to be a blob) and 3 tasks' writes before them, the
last one an interrupt (a control write). Two ways to store the same requests:

* **one call at a time** (the anchor): ``perform_now(saver.fenced(), requests)``, each put
  and each task's writes a statement of its own (a round trip each);
* **the round**: as ``workers/_saves.py`` stores a round, ``perform_now`` on the fenced view
  of ``saver.pipelined(durable=False)``.

Rounds of 1 run (one-by-one approvals) and of 8 runs (a batched coordinator job). Thread
CPU time of the calling thread (``time.thread_time``) per round, median of ``--rounds``
runs of ``--reps`` rounds each; statements sent and psycopg waits (``Connection.wait``)
counted in a separate pass (the counting is not timed). Each checkout is measured in a
process of its own with that checkout first on ``sys.path`` (same embedded Postgres, a
fresh database each), alternating. ``--run-cpu RUNS``: each checkout's ``bench/run_cpu.py``
too (the coordinator's job on one run, LangGraph's invoke as the anchor), in the same
alternation.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SECTION = "## A round's checkpoints and writes stored (issue #19)"
MARK = "round_store"
SIDES = ("one call at a time", "the round (pipelined)")
SIZES = (1, 8)


def _requests(saver: Any, runs: int) -> list[tuple[bool, list[Any]]]:
    """One round's requests: per run, 3 fenced puts, each after a task's writes."""
    from graphruntime._internal._constants import INTERRUPT
    from graphruntime.checkpoint import copy_checkpoint, empty_checkpoint, uuid6
    from graphruntime.pregel.driver import PutCheckpoint, PutWrites

    out = []
    for _ in range(runs):
        thread_id = f"bench-{uuid.uuid4()}"
        config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        checkpoint = empty_checkpoint()
        requests: list[Any] = []
        steps: list[tuple[dict[str, Any], list[tuple[str, Any]]]] = [
            ({"__start__": {"request": thread_id}}, []),
            ({"request": thread_id, "notes": ["n" * 40] * 60}, [("request", thread_id)]),
            ({"draft": f"draft of {thread_id}"}, [("draft", f"draft of {thread_id}")]),
        ]
        for step, (values, writes) in enumerate(steps, -1):
            if writes:
                task_id = str(uuid.uuid4())
                requests.append(PutWrites(config, writes, task_id, f"~__pregel_pull, {step}"))
            checkpoint = copy_checkpoint(checkpoint)
            checkpoint["id"] = str(uuid6(clock_seq=step + 1))
            versions = {}
            for channel, value in values.items():
                version = saver.get_next_version(checkpoint["channel_versions"].get(channel))
                checkpoint["channel_versions"][channel] = versions[channel] = version
                checkpoint["channel_values"][channel] = value
            metadata: Any = {"source": "loop", "step": step, "parents": {}}
            requests.append(PutCheckpoint(config, checkpoint, metadata, versions))
            config = {
                "configurable": {
                    "thread_id": thread_id,
                    "checkpoint_ns": "",
                    "checkpoint_id": checkpoint["id"],
                }
            }
        interrupt = [(INTERRUPT, [{"value": "approve?", "id": uuid.uuid4().hex}])]
        requests.append(PutWrites(config, interrupt, str(uuid.uuid4()), "~__pregel_pull, 2"))
        out.append((True, requests))
    return out


def _one_by_one(saver: Any, runs: Sequence[tuple[bool, list[Any]]]) -> None:
    from graphruntime.pregel.driver import perform_now

    view = saver.fenced()
    for _, requests in runs:
        perform_now(view, requests)


def _round(saver: Any, runs: Sequence[tuple[bool, list[Any]]]) -> None:
    from graphruntime.pregel.driver import perform_now

    with saver.pipelined(durable=False) as batch:
        view = batch.fenced()
        for _, requests in runs:
            perform_now(view, requests)
    assert batch.refused == {}, batch.refused


@contextmanager
def _counted() -> Iterator[dict[str, int]]:
    """Counts the statements psycopg sends and its waits (patched in; never timed)."""
    import psycopg
    from psycopg import _connection_base, _cursor_base

    counts = {"statements": 0, "waits": 0}
    patched = [
        (_cursor_base.BaseCursor, "_execute_send", "statements"),
        (_cursor_base.BaseCursor, "_send_query_prepared", "statements"),
        (_connection_base.BaseConnection, "_exec_command", "statements"),
        (psycopg.Connection, "wait", "waits"),
    ]
    saved = []
    for owner, name, key in patched:
        original = owner.__dict__[name]
        saved.append((owner, name, original))

        def counting(*args: Any, _original: Any = original, _key: str = key, **kw: Any) -> Any:
            counts[_key] += 1
            return _original(*args, **kw)

        setattr(owner, name, counting)
    try:
        yield counts
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def _measure(root: str, reps: int) -> dict[str, Any]:
    """One checkout's figures (runs in a process with ``root`` first on sys.path)."""
    import psycopg
    from psycopg_pool import ConnectionPool

    from checkpoint_pg import PostgresSaver, migrate
    from checkpoint_pg.embedded import database_url, scratch_database

    ways: dict[str, Callable[[Any, Sequence[tuple[bool, list[Any]]]], None]] = {
        SIDES[0]: _one_by_one,
        SIDES[1]: _round,
    }
    out: dict[str, Any] = {}
    with scratch_database(database_url(), "bench_round_store") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            migrate(conn)
        kwargs = {"autocommit": True, "prepare_threshold": 0}
        with ConnectionPool(url, min_size=1, max_size=1, kwargs=kwargs) as pool:
            saver = PostgresSaver(pool)
            with pool.connection():  # the pool's one connection, pinned like a job's
                pass
            for size in SIZES:
                for side, way in ways.items():
                    for _ in range(20):  # warm-up: prepared statements, caches
                        way(saver, _requests(saver, size))
                    rounds = [_requests(saver, size) for _ in range(reps)]
                    spent = 0.0
                    for runs in rounds:
                        t0 = time.thread_time()
                        way(saver, runs)
                        spent += time.thread_time() - t0
                    counted = [_requests(saver, size) for _ in range(10)]
                    with _counted() as counts:
                        for runs in counted:
                            way(saver, runs)
                    out[f"{size}:{side}"] = {
                        "cpu_ms": 1000 * spent / reps,
                        "statements": counts["statements"] / len(counted),
                        "waits": counts["waits"] / len(counted),
                    }
    out["root"] = root
    return out


def _in_checkout(root: Path, *args: str) -> str:
    """The output of the checkout's Python (its .venv's, else this one) run with ``args``
    in the checkout, its packages first."""
    python = root / ".venv" / "bin" / "python"
    done = subprocess.run(
        [str(python if python.exists() else sys.executable), *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        timeout=3600,  # a hung child fails the bench rather than holding it for ever
    )
    return done.stdout


def _run_checkout(root: Path, reps: int) -> dict[str, Any]:
    out = _in_checkout(
        root, str(HERE / "round_store.py"), "--measure", "--root", str(root), "--reps", str(reps)
    )
    figures: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return figures


_RUN_CPU = re.compile(
    r"LangGraph invoke on its PostgresSaver: ([\d.]+).*?"
    r"graphruntime invoke on checkpoint_pg: ([\d.]+).*?"
    r"submit ([\d.]+), the coordinator's job ([\d.]+)",
    re.S,
)


def _run_cpu(root: Path, runs: int) -> dict[str, float]:
    """``bench/run_cpu.py`` of the checkout: thread CPU ms per run of LangGraph's invoke
    (the anchor), graphruntime's, the cluster's submit and the coordinator's job."""
    out = _in_checkout(root, "-m", "bench.run_cpu", "--runs", str(runs))
    found = _RUN_CPU.search(out)
    if found is None:
        raise RuntimeError(f"bench.run_cpu printed no figures: {out!r}")
    langgraph, invoke, submit, coordinator = (float(g) for g in found.groups())
    return {"langgraph": langgraph, "invoke": invoke, "submit": submit, "job": coordinator}


def _run_cpu_lines(before: list[dict[str, float]], after: list[dict[str, float]]) -> list[str]:
    if not after:
        return []
    lines = [
        "",
        "The coordinator's job on one run, `python -m bench.run_cpu` of each checkout (thread",
        "CPU ms per run, its approval graph one run at a time, claim to run end; LangGraph's",
        "invoke measured in the same process is the anchor), alternating with the rounds above:",
        "",
        "| checkout | coordinator's job | LangGraph invoke | job / LangGraph "
        "| job, each run of the bench |",
        "|---|---:|---:|---:|---|",
    ]
    for name, measured in (("before", before), ("after", after)):
        if not measured:
            continue
        job = statistics.median(r["job"] for r in measured)
        anchor = statistics.median(r["langgraph"] for r in measured)
        ratio = statistics.median(r["job"] / r["langgraph"] for r in measured)
        each = ", ".join(f"{r['job']:.2f}" for r in measured)
        lines.append(f"| {name} | {job:.2f} | {anchor:.2f} | {ratio:.2f}x | {each} |")
    return lines


def _section(
    before: list[dict[str, Any]],
    after: list[dict[str, Any]],
    meta: dict[str, str],
    cpu: tuple[list[dict[str, float]], list[dict[str, float]]] = ([], []),
) -> str:
    from bench._report import machine

    m = machine()
    lines = [
        SECTION,
        "",
        "Written by `bench/round_store.py` (replaces only this section). A coordinator",
        "round's held requests, per run what an approval start makes (3 fenced puts, one",
        "value a blob, after 3 tasks' writes, the last an interrupt), stored one call at a",
        "time (the anchor) and as `workers/_saves.py` stores a round",
        "(`saver.pipelined(durable=False)`), on a pool of one connection",
        "(`prepare_threshold=0`). Thread CPU ms per round (median over the runs of each",
        "checkout); statements the client sends and psycopg waits per round (counted apart).",
        "",
        f"- Command: `{meta['command']}`",
        f"- Date: {meta['date']}",
        f"- Machine: nproc {m['nproc']}, {m['CPU']}, {m['RAM']}, {m['Python']}; load average"
        f" {meta['load_start']} at the start, {meta['load_end']} at the end",
        f"- Before: {meta['before']}; after: {meta['after']}",
        f"- Runs: {meta['rounds']} per checkout, alternating, {meta['reps']} rounds each",
        "",
        "| round | way | before CPU ms | after CPU ms | after / before "
        "| statements before → after | waits before → after |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for size in SIZES:
        for side in SIDES:
            key = f"{size}:{side}"
            b = statistics.median(r[key]["cpu_ms"] for r in before) if before else None
            a = statistics.median(r[key]["cpu_ms"] for r in after)
            sb = before[0][key] if before else None
            sa = after[0][key]
            ratio = f"{a / b:.2f}x" if b else "-"
            cpu_before = f"{b:.3f}" if b is not None else "-"
            statements = f"{sb['statements']:g}" if sb else "-"
            waits = f"{sb['waits']:g}" if sb else "-"
            runs = f"{size} run" + ("s" if size > 1 else "")
            lines.append(
                f"| {runs} | {side} | {cpu_before} | {a:.3f} | {ratio} | "
                f"{statements} → {sa['statements']:g} | {waits} → {sa['waits']:g} |"
            )
    against = []
    for name, measured in (("before", before), ("after", after)):
        if not measured:
            continue
        ratios = []
        for size in SIZES:
            anchor = statistics.median(r[f"{size}:{SIDES[0]}"]["cpu_ms"] for r in measured)
            held = statistics.median(r[f"{size}:{SIDES[1]}"]["cpu_ms"] for r in measured)
            ratios.append(f"{held / anchor:.2f}x ({size} run{'s' if size > 1 else ''})")
        against.append(f"{name} {', '.join(ratios)}")
    lines += [
        "",
        "The round's CPU against the anchor's, same checkout: " + "; ".join(against) + ".",
    ]
    per_run = []
    for name, measured in (("before", before), ("after", after)):
        for size in SIZES:
            key = f"{size}:{SIDES[1]}"
            values = ", ".join(f"{r[key]['cpu_ms']:.3f}" for r in measured)
            if values:
                per_run.append(f"{name} {size}: {values}")
    lines += ["The round's CPU ms in each run of the bench: " + "; ".join(per_run) + "."]
    lines += _run_cpu_lines(*cpu)
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--before", type=Path, help="another checkout to compare with")
    parser.add_argument("--after", type=Path, default=ROOT, help="default: this checkout")
    parser.add_argument("--rounds", type=int, default=3, help="runs per checkout, alternating")
    parser.add_argument("--reps", type=int, default=300, help="timed rounds per run and size")
    parser.add_argument(
        "--run-cpu", type=int, default=0, metavar="RUNS", help="also bench.run_cpu --runs RUNS"
    )
    parser.add_argument("--no-write", action="store_true", help="do not touch RESULTS.md")
    parser.add_argument("--results", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        sys.path.insert(0, args.root)
        os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:9/0")
        sys.stdout.write(json.dumps(_measure(args.root, args.reps)) + "\n")
        return 0

    from bench._report import command_line, git_revision, loadavg, write_section

    meta = {
        "command": command_line(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_start": loadavg(),
        "rounds": str(args.rounds),
        "reps": str(args.reps),
        "before": str(args.before) if args.before else "-",
        "after": f"{args.after} ({git_revision('checkpoint_pg')})",
    }
    before: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    cpu: tuple[list[dict[str, float]], list[dict[str, float]]] = ([], [])
    for i in range(args.rounds):
        sides = (("before", args.before, before, cpu[0]), ("after", args.after, after, cpu[1]))
        for label, root, into, cpu_into in sides:
            if root is None:
                continue
            if args.run_cpu:
                cpu_into.append(_run_cpu(root.resolve(), args.run_cpu))
                sys.stdout.write(f"run {i + 1} {label}: run_cpu {cpu_into[-1]}\n")
            into.append(_run_checkout(root.resolve(), args.reps))
            round_key = f"1:{SIDES[1]}"
            sys.stdout.write(
                f"run {i + 1} {label}: one-run round {into[-1][round_key]['cpu_ms']:.3f} ms, "
                f"load {loadavg()}\n"
            )
            sys.stdout.flush()
    meta["load_end"] = loadavg()
    text = _section(before, after, meta, cpu)
    sys.stdout.write("\n" + text)
    if not args.no_write:
        write_section(args.results, text, SECTION, MARK)
        sys.stdout.write(f"\nwrote section {SECTION!r} of {args.results}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
