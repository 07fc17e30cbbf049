"""Graphs and raw Celery tasks for ``bench/workers_bench.py``.

The workers load the graphs from ``GRAPHRUNTIME_GRAPHS`` (:data:`GRAPHS`). The
raw Celery baseline runs on its own plain Celery app (:data:`raw_app`): same
broker, same worker flags and the same JSON / late-ack / prefetch-1 settings
as ``workers.app``, but nothing of graphruntime.

``BENCH_PROFILE_DIR`` (bench only, off by default): when set in a worker's
environment, the pool process that imports this module profiles every Celery
task it runs with cProfile and writes ``<dir>/worker-<pid>.prof`` (and, with
it, ``worker-<pid>.json`` counting tasks, SQL statements and Redis commands)
at most every 2 s. The bench's ``--profile`` flag sets it.
"""

from __future__ import annotations

import itertools
import operator
import os
from typing import Annotated, Any, TypedDict

from celery import Celery
from kombu.entity import Queue

import graphruntime.graph as graphruntime_graph
from graphruntime.graph import END, START, StateGraph
from graphruntime.types import Send, interrupt

CHAIN_LENGTH = 10
RAW_QUEUE = "bench.raw"
COUNTER_KEY = "bench:raw:done"

GRAPHS = ",".join(
    [
        "bench_chain10=bench.workers_graphs:chain10",
        "bench_fanout=bench.workers_graphs:fanout",
        "bench_fanout_split=bench.workers_graphs:fanout_split",
        "bench_approval=bench.workers_graphs:approval",
    ]
)


# --- graphs (built the same way for graphruntime and LangGraph) ------------------------


class ChainState(TypedDict):
    x: int
    path: Annotated[list[str], operator.add]


def build_chain(graph_module: Any) -> Any:
    """``CHAIN_LENGTH`` nodes in a line; each adds 1 to ``x`` and appends its name."""
    builder = graph_module.StateGraph(ChainState)

    def make_node(name: str) -> Any:
        def node(state: ChainState) -> dict[str, Any]:
            return {"x": state["x"] + 1, "path": [name]}

        return node

    names = [f"n{i}" for i in range(CHAIN_LENGTH)]
    for name in names:
        builder.add_node(name, make_node(name))
    builder.add_edge(graph_module.START, names[0])
    for a, b in itertools.pairwise(names):
        builder.add_edge(a, b)
    builder.add_edge(names[-1], graph_module.END)
    return builder


class FanOutState(TypedDict, total=False):
    n: int
    count: Annotated[int, operator.add]


def _dispatch(state: FanOutState) -> list[Send]:
    return [Send("work", {"i": i}) for i in range(state["n"])]


def _work(arg: dict[str, int]) -> dict[str, Any]:
    return {"count": 1}  # tiny work: the fan-out measures the runtime, not the node


def _split_router(part: int, parts: int) -> Any:
    def route(state: FanOutState) -> list[Send]:
        n = state["n"]
        return [Send("work", {"i": i}) for i in range(n * part // parts, n * (part + 1) // parts)]

    return route


def _noop(state: FanOutState) -> dict[str, Any]:
    return {"count": 0}


_fanout = StateGraph(FanOutState)
_fanout.add_node("work", _work)
_fanout.add_conditional_edges(START, _dispatch, ["work"])
_fanout.add_edge("work", END)

# The same fan-out with the Sends emitted by SPLIT_PARTS parallel router nodes, each sending
# an equal slice. The bench measures this shape (kept for comparison with earlier runs); a
# single router sending everything (`fanout`) is probed too.
SPLIT_PARTS = 2
_fanout_split = StateGraph(FanOutState)
_fanout_split.add_node("work", _work)
for _part in range(SPLIT_PARTS):
    _fanout_split.add_node(f"split_{_part}", _noop)
    _fanout_split.add_edge(START, f"split_{_part}")
    _fanout_split.add_conditional_edges(
        f"split_{_part}", _split_router(_part, SPLIT_PARTS), ["work"]
    )
_fanout_split.add_edge("work", END)


class ApprovalState(TypedDict, total=False):
    request: str
    draft: str
    answer: str
    result: str


def _draft(state: ApprovalState) -> dict[str, Any]:
    return {"draft": f"draft of {state['request']}"}


def _review(state: ApprovalState) -> dict[str, Any]:
    return {"answer": interrupt({"question": "publish?", "draft": state["draft"]})}


def _publish(state: ApprovalState) -> dict[str, Any]:
    return {"result": f"{state['draft']}: {state['answer']}"}


_approval = StateGraph(ApprovalState)
_approval.add_node("draft", _draft)
_approval.add_node("review", _review)
_approval.add_node("publish", _publish)
_approval.add_edge(START, "draft")
_approval.add_edge("draft", "review")
_approval.add_edge("review", "publish")
_approval.add_edge("publish", END)

chain10 = build_chain(graphruntime_graph).compile()
fanout = _fanout.compile()
fanout_split = _fanout_split.compile()
approval = _approval.compile()


# --- the raw Celery baseline -----------------------------------------------------------


def _redis_url() -> str:
    return os.environ.get("REDIS_URL", "")


def make_raw_app(broker: str, backend: str | None = None) -> Celery:
    """A plain Celery app with workers.app's wire settings, on queue ``bench.raw``."""
    app = Celery("bench_raw", broker=broker, backend=backend)
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=backend is None,
        task_queues=(Queue(RAW_QUEUE),),  # type: ignore[no-untyped-call]
        task_default_queue=RAW_QUEUE,
        broker_connection_retry_on_startup=True,
        broker_transport_options={"visibility_timeout": 3600},
        worker_hijack_root_logger=False,
    )
    return app


# Workers of the raw baseline run `celery -A bench.workers_graphs:raw_app worker`; the
# result backend (Redis) is used only by `noop` in the round-trip case.
raw_app = make_raw_app(_redis_url() or "memory://", _redis_url() or None)
_redis_client: Any = None


def _counter() -> Any:
    global _redis_client
    if _redis_client is None:
        import redis

        _redis_client = redis.Redis.from_url(_redis_url().replace("redis+socket://", "unix://"))
    return _redis_client


@raw_app.task(name="bench.noop", ignore_result=False)  # type: ignore[untyped-decorator]
def noop() -> None:
    """Round trip: the client waits on the result in the Redis backend."""


@raw_app.task(name="bench.incr", ignore_result=True)  # type: ignore[untyped-decorator]
def incr(key: str = COUNTER_KEY) -> None:
    """Group member: no result; completion is counted with one INCR."""
    _counter().incr(key)


# --- optional profiling inside the worker's pool process (bench only) -----------------


def _install_profiler(folder: str) -> None:
    import cProfile
    import json
    import time

    import psycopg
    import redis
    from celery.signals import task_postrun, task_prerun

    os.makedirs(folder, exist_ok=True)
    # BENCH_PROFILE_TIMER=cpu: CPU time (what the pool process itself spends), not wall
    cpu = os.environ.get("BENCH_PROFILE_TIMER") == "cpu"
    prof = cProfile.Profile(time.process_time) if cpu else cProfile.Profile()
    counts = {"tasks": 0, "sql": 0, "redis": 0}
    state = {"last_dump": time.monotonic()}

    def counting(cls: Any, name: str, key: str) -> None:
        original = getattr(cls, name)

        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            counts[key] += 1
            return original(self, *args, **kwargs)

        setattr(cls, name, wrapper)

    counting(psycopg.Cursor, "execute", "sql")
    counting(psycopg.Cursor, "executemany", "sql")
    counting(redis.Redis, "execute_command", "redis")

    def before(**_: Any) -> None:
        prof.enable()

    def after(task: Any = None, **_: Any) -> None:
        prof.disable()
        counts["tasks"] += 1
        name = getattr(task, "name", "?")
        counts[name] = counts.get(name, 0) + 1
        now = time.monotonic()
        if now - state["last_dump"] > 2.0:
            state["last_dump"] = now
            base = os.path.join(folder, f"worker-{os.getpid()}")
            prof.dump_stats(base + ".prof")
            with open(base + ".json", "w") as fh:
                json.dump(counts, fh)

    task_prerun.connect(before, weak=False)
    task_postrun.connect(after, weak=False)


if os.environ.get("BENCH_PROFILE_DIR"):
    _install_profiler(os.environ["BENCH_PROFILE_DIR"])
