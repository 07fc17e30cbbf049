"""How many project modules one resume goes through on the worker side.

    .venv/bin/python -m bench.resume_boundaries            # prints the count and the modules
    .venv/bin/python -m bench.resume_boundaries --calls    # and the calls between modules

What is measured: a thread paused at an ``interrupt()`` is resumed with
``GraphClient.submit(graph, Command(resume=...))`` on a cluster whose run store and
saver are the Postgres ones (an embedded pgserver database, migrated here, dropped at
the end). The coordinator job the resume sends is then run in this process through the
Celery task's own function (``workers.tasks.coordinate_task``), under
``sys.setprofile``: every Python function call made while the job runs, from the Celery
task to the run's end (its end committed, its lease freed), is attributed to the module
that defines the called function. A module counts once however often it is entered.

It also counts, apart, the modules control passes through (they call another project
module during the job) and the leaves (value types, channels, the serializer's parts:
called only); and the deepest call path: the longest chain of project modules on one
call stack during the job (a run of frames of one module counts once; a module called
back by one it called counts again), whose length less one is the module boundaries
that path crosses.

The count is of the project's modules only (``graphruntime``, ``checkpoint_pg``,
``workers``): the graph's own module, the standard library, psycopg, pydantic and
Celery are left out. The graph is the smallest that resumes: ``ask`` interrupts, the
resume answers it, then ``done`` runs, both inline in the coordinator (no task jobs), no
store, no cache, no streaming, durability "async". A module that only the first run
loads (the client's side, the input step) is not counted: only the resume job is traced.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, TypedDict

PROJECT = ("graphruntime", "checkpoint_pg", "workers")


class State(TypedDict, total=False):
    answer: str
    done: bool


def _graph() -> Any:
    from graphruntime.graph import END, START, StateGraph
    from graphruntime.types import interrupt

    def ask(state: State) -> State:
        return {"answer": str(interrupt("approve?"))}

    def done(state: State) -> State:
        return {"done": True}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_node("done", done)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "done")
    builder.add_edge("done", END)
    return builder.compile()


def _project_module(name: str | None) -> bool:
    return bool(name) and name.split(".")[0] in PROJECT  # type: ignore[union-attr]


def _chain(frame: FrameType | None) -> list[str]:
    """The project modules on the call stack from ``frame`` down, a run of frames of one
    module counted once (a module that calls out and is called back counts again)."""
    chain: list[str] = []
    while frame is not None:
        module = frame.f_globals.get("__name__")
        if _project_module(module) and (not chain or chain[-1] != module):
            chain.append(module)  # type: ignore[arg-type]
        frame = frame.f_back
    return chain[::-1]


@contextmanager
def traced(
    modules: Counter[str], calls: Counter[tuple[str, str]], deepest: list[list[str]] | None = None
) -> Iterator[None]:
    """Count the project modules entered (and the calls between them) in this thread;
    ``deepest`` gets the longest chain of modules on one call stack."""

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__")
        if not _project_module(module):
            return
        modules[module] += 1
        if deepest is not None:
            chain = _chain(frame)
            if len(chain) > len(deepest[0]):
                deepest[0] = chain
        caller = frame.f_back
        while caller is not None and not _project_module(caller.f_globals.get("__name__")):
            caller = caller.f_back
        if caller is not None and caller.f_globals.get("__name__") != module:
            calls[(caller.f_globals["__name__"], module)] += 1

    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(None)


def measure() -> tuple[Counter[str], Counter[tuple[str, str]], list[str]]:
    # the Celery app is built at import; it never connects here (the job runs in-process)
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:9/0")
    import psycopg

    import workers.tasks
    from bench._services import PostgresStores
    from checkpoint_pg import migrate
    from checkpoint_pg.embedded import database_url, scratch_database
    from graphruntime.types import Command
    from workers.testing import InlineCluster

    modules: Counter[str] = Counter()
    calls: Counter[tuple[str, str]] = Counter()
    deepest: list[list[str]] = [[]]
    with scratch_database(database_url(), "graphruntime_boundaries") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            migrate(conn)
        stores = PostgresStores(url)
        try:
            cluster = InlineCluster({"approve": _graph()}, stores=stores, workers=1)
            config = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex}"}}
            paused = cluster.run("approve", {}, config)
            assert "__interrupt__" in paused, paused
            cluster.client.submit("approve", Command(resume="yes"), config)
            jobs = list(cluster.broker.coordinator)
            assert len(jobs) == 1, jobs
            cluster.broker.coordinator.clear()
            ctx = cluster.workers[0]
            task = workers.tasks.coordinate_task
            context = workers.tasks._context
            workers.tasks._context = lambda: ctx  # type: ignore[assignment]
            try:
                with traced(modules, calls, deepest):
                    task.run(run_ids=list(jobs[0].run_ids), v=2)
            finally:
                workers.tasks._context = context
            state = cluster.client.get_state("approve", config)
            assert state.values == {"answer": "yes", "done": True}, state.values
        finally:
            stores.close()
    return modules, calls, deepest[0]


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", action="store_true", help="list the calls between modules")
    args = parser.parse_args(argv)
    modules, calls, chain = measure()
    _say(f"modules a resume goes through on the worker side: {len(modules)}")
    for package in PROJECT:
        mine = sorted(m for m in modules if m.split(".")[0] == package)
        _say(f"  {package} ({len(mine)}): {', '.join(mine)}")
    through = {caller for caller, _ in calls}
    _say(
        f"of which control passes through (they call another project module): {len(through)}; "
        f"leaves (called only): {len(modules) - len(through)}"
    )
    _say(
        f"deepest call path: {len(chain)} modules, {len(chain) - 1} boundaries crossed: "
        + " -> ".join(chain)
    )
    if args.calls:
        _say(f"calls between modules: {len(calls)} pairs")
        for (caller, callee), n in sorted(calls.items()):
            _say(f"  {caller} -> {callee}: {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
