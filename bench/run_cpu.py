"""Where one run's CPU goes, without the cluster: thread CPU time per run in one process.

    .venv/bin/python -m bench.run_cpu [--runs 300] [--profile FILE]

The approval graph of ``bench/approvals_bench.py`` (draft -> review, which interrupts ->
publish), started and resumed on fresh threads, on the embedded Postgres:

* LangGraph's ``invoke`` on its ``PostgresSaver`` (a pool, autocommit);
* graphruntime's ``invoke`` on checkpoint_pg's ``PostgresSaver``, in-process;
* the cluster's two halves without Celery or Redis: ``GraphClient.submit`` (the client's
  part) and ``coordinate_many`` (a coordinator job's part: claim, checkpoint load, the
  steps, their checkpoints stored, the run's end), on the workers' Postgres run store
  and saver, the job's connection pinned as a Celery job pins it.

Thread CPU time (``time.thread_time``) of the calling thread only: LangGraph's puts in
"async" durability run in a background thread and are not counted here, so its figure is
a floor (``bench/one_by_one_bench.py`` counts whole processes). Printed only; quoted in
``bench/RESULTS.md``'s one-by-one section. ``--profile FILE``: cProfile (thread CPU time)
of the coordinator's part.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from bench.approvals_bench import build_approval


def _per_run(runs: int, start: Callable[[str], None], resume: Callable[[str], None]) -> float:
    """Thread CPU ms per run (a thread is two runs), after 20 warm-up threads."""
    spent = 0.0
    for i in range(runs + 20):
        tid = f"t-{uuid.uuid4().hex}"
        t0 = time.thread_time()
        start(tid)
        resume(tid)
        if i >= 20:
            spent += time.thread_time() - t0
    return 1000 * spent / (2 * runs)


def _cfg(tid: str) -> Any:
    return {"configurable": {"thread_id": tid}}


def langgraph_invoke(url: str, runs: int) -> float:
    import langgraph.graph as lg_graph
    import langgraph.types as lg_types
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    with ConnectionPool(url, kwargs=kwargs) as pool:
        saver = PostgresSaver(pool)  # type: ignore[arg-type]
        saver.setup()
        app = build_approval(lg_graph, lg_types).compile(checkpointer=saver)
        return _per_run(
            runs,
            lambda t: app.invoke({"request": t}, _cfg(t)),
            lambda t: app.invoke(lg_types.Command(resume="yes"), _cfg(t)),
        )


def graphruntime_invoke(url: str, runs: int) -> float:
    from psycopg_pool import ConnectionPool

    import graphruntime.graph as g
    import graphruntime.types as t
    from checkpoint_pg import PostgresSaver

    with ConnectionPool(url, kwargs={"autocommit": True}) as pool:
        app = build_approval(g, t).compile(checkpointer=PostgresSaver(pool))
        return _per_run(
            runs,
            lambda tid: app.invoke({"request": tid}, _cfg(tid)),
            lambda tid: app.invoke(t.Command(resume="yes"), _cfg(tid)),
        )


def cluster_halves(url: str, runs: int, profile: str | None) -> tuple[float, float]:
    """CPU ms per run of ``submit`` and of the coordinator's job."""
    import graphruntime.graph as g
    import graphruntime.types as t
    from bench._services import PostgresStores
    from workers.coordinator import coordinate_many
    from workers.testing import InlineCluster

    stores = PostgresStores(url)
    cluster = InlineCluster({"a": build_approval(g, t).compile()}, stores=stores, workers=1)
    ctx, client = cluster.workers[0], cluster.client
    prof = cProfile.Profile(time.thread_time) if profile else None
    spent = {"submit": 0.0, "coordinate": 0.0}

    def one(value: Any, tid: str) -> None:
        t0 = time.thread_time()
        client.submit("a", value, _cfg(tid))
        t1 = time.thread_time()
        jobs = list(cluster.broker.coordinator)
        cluster.broker.coordinator.clear()
        if prof:
            prof.enable()
        with stores.pools[0].pinned():
            for job in jobs:
                coordinate_many(ctx, list(job.run_ids))
        if prof:
            prof.disable()
        spent["submit"] += t1 - t0
        spent["coordinate"] += time.thread_time() - t1

    try:
        for i in range(runs + 20):
            if i == 20:
                spent.update(submit=0.0, coordinate=0.0)
                if prof:
                    prof = cProfile.Profile(time.thread_time)
            tid = f"t-{uuid.uuid4().hex}"
            one({"request": tid}, tid)
            one(t.Command(resume="yes"), tid)
        state = client.get_state("a", _cfg(tid))
        assert str(state.values.get("result", "")).endswith(": yes"), state.values
    finally:
        stores.close()
    if prof and profile:
        prof.dump_stats(profile)
    return 1000 * spent["submit"] / (2 * runs), 1000 * spent["coordinate"] / (2 * runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=300, help="threads per figure")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the coordinator's part")
    args = parser.parse_args(argv)
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:9/0")  # the app is never used
    import psycopg

    from checkpoint_pg import migrate
    from checkpoint_pg.embedded import database_url, scratch_database

    def say(line: str) -> None:
        sys.stdout.write(line + "\n")

    say(f"load {os.getloadavg()[0]:.2f}; thread CPU ms per run (a thread is two runs):")
    with scratch_database(database_url(), "bench_run_cpu_lg") as url:
        say(f"  LangGraph invoke on its PostgresSaver: {langgraph_invoke(url, args.runs):.2f}")
    with scratch_database(database_url(), "bench_run_cpu") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            migrate(conn)
        say(f"  graphruntime invoke on checkpoint_pg: {graphruntime_invoke(url, args.runs):.2f}")
        submit, coordinate = cluster_halves(url, args.runs, args.profile)
        say(f"  the cluster: submit {submit:.2f}, the coordinator's job {coordinate:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
