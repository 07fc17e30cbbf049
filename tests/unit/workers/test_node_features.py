"""Node features on the in-memory cluster: error handlers, the shared store and cache,
timeouts; and how a node's error comes back from its record."""

from __future__ import annotations

import asyncio
import copy
import operator
import uuid
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import pytest

from graphruntime.cache.memory import InMemoryCache
from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.errors import NodeError, NodeTimeoutError
from graphruntime.graph import START, StateGraph
from graphruntime.pregel import Pregel
from graphruntime.runtime import RunControl, Runtime
from graphruntime.store.base import BaseStore
from graphruntime.store.memory import InMemoryStore
from graphruntime.types import CachePolicy, Command, RetryPolicy, Send, interrupt
from tests.unit.workers.graphs import Calls
from workers.errors import RemoteGraphError, error_info, rebuild_error
from workers.store import RunQuery
from workers.testing import InlineCluster


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _boom(state: State) -> dict[str, Any]:
    raise RuntimeError("boom")


def _handler(state: State, error: NodeError) -> dict[str, Any]:
    return {"log": [f"handled {error.node}: {error.error}"]}


def _graph(parallel: bool) -> Pregel:
    g = StateGraph(State).add_node("boom", _boom, error_handler=_handler).add_edge(START, "boom")
    if parallel:
        g.add_node("other", lambda s: {"log": ["other"]}).add_edge(START, "other")
    return g.compile()


def _thread() -> RunnableConfig:
    return {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}


def test_an_error_handler_runs_inline_with_its_single_failing_task() -> None:
    cluster = InlineCluster({"g": _graph(parallel=False)})
    handle = cluster.client.submit("g", {"log": []}, _thread())
    cluster.deliver()
    assert handle.wait(0) == {"log": ["handled boom: boom"]}


def test_an_error_handler_runs_as_a_job_after_the_failed_jobs_step() -> None:
    cluster = InlineCluster({"g": _graph(parallel=True)})
    handle = cluster.client.submit("g", {"log": []}, _thread())
    cluster.deliver()
    handled, other = sorted(handle.wait(0)["log"])
    assert other == "other"
    # the handler gets the exception the node raised in its job, as in-process
    assert handled == "handled boom: boom"
    assert handled == sorted(_graph(parallel=True).invoke({"log": []})["log"])[0]


@dataclass
class Ctx:
    user: str
    greeting: str = "hello"


def _greeter() -> Pregel:
    def fan(state: State) -> list[Send]:
        return [Send("greet", {"n": n}) for n in range(2)]

    def greet(arg: dict[str, Any], runtime: Runtime[Ctx]) -> dict[str, Any]:
        return {"log": [f"{runtime.context.greeting} {runtime.context.user} {arg['n']}"]}

    def first(state: State, runtime: Runtime[Ctx]) -> dict[str, Any]:
        return {"log": [f"first {runtime.context.user}"]}

    g = StateGraph(State, context_schema=Ctx)
    g.add_node("first", first).add_node("greet", greet)
    g.add_edge(START, "first").add_conditional_edges("first", fan)
    return g.compile()


def test_a_runs_context_reaches_its_inline_step_and_its_task_jobs() -> None:
    cluster = InlineCluster({"g": _greeter()})
    out = cluster.run("g", {"log": []}, _thread(), context={"user": "ann"})
    assert out["log"] == ["first ann", "hello ann 0", "hello ann 1"]
    out = cluster.run("g", {"log": []}, _thread(), context=Ctx(user="bob", greeting="yo"))
    assert out["log"] == ["first bob", "yo bob 0", "yo bob 1"]


def test_a_bad_context_or_durability_is_refused_before_anything_is_written() -> None:
    cluster = InlineCluster({"g": _greeter()})
    with pytest.raises(TypeError):
        cluster.client.submit("g", {"log": []}, _thread(), context={"greeting": "no user"})
    with pytest.raises(ValueError, match="durability='exit'"):
        cluster.client.submit("g", {"log": []}, _thread(), durability="exit")
    with pytest.raises(TypeError, match="in-process RunControl"):
        cluster.client.submit("g", {"log": []}, _thread(), control=RunControl())
    assert cluster.broker.sent == []  # nothing was queued
    with pytest.raises(ValueError, match="durability must be"):
        cluster.client.submit("g", {"log": []}, _thread(), durability="later")  # type: ignore[arg-type]
    assert cluster.store.list_runs(RunQuery()) == []
    out = cluster.run("g", {"log": []}, _thread(), context={"user": "cy"}, durability="sync")
    assert out["log"][0] == "first cy"


def _memo(store: BaseStore) -> Pregel:
    def remember(arg: dict[str, Any], store: BaseStore) -> dict[str, Any]:
        store.put(("memo",), f"k{arg['n']}", {"n": arg["n"]})
        return {"log": [f"put {arg['n']}"]}

    def recall(state: State, runtime: Runtime[Any]) -> dict[str, Any]:
        assert runtime.store is not None
        return {"log": [",".join(sorted(i.key for i in runtime.store.search(("memo",))))]}

    g = StateGraph(State).add_node("remember", remember).add_node("recall", recall)
    g.add_conditional_edges(START, lambda s: [Send("remember", {"n": n}) for n in range(3)])
    g.add_edge("remember", "recall")
    return g.compile(store=store)


def test_a_graph_compiled_with_a_store_gets_the_one_the_workers_share() -> None:
    own = InMemoryStore()
    bare = (
        StateGraph(State)
        .add_node("probe", lambda s, runtime: {"log": [f"store {runtime.store}"]})
        .add_edge(START, "probe")
        .compile()
    )
    cluster = InlineCluster({"memo": _memo(own), "bare": bare})
    out = cluster.run("memo", {"log": []}, _thread())
    assert out["log"][-1] == "k0,k1,k2"  # task jobs' writes, read by the next step
    assert sorted(i.key for i in cluster.node_store.search(("memo",))) == ["k0", "k1", "k2"]
    assert own.search(("memo",)) == []  # one worker process's store: not used
    assert cluster.run("bare", {"log": []}, _thread())["log"] == ["store None"]


def test_cached_results_are_shared_by_the_workers_and_cleared_by_the_client() -> None:
    runs: list[int] = []

    def slow(state: State) -> dict[str, Any]:
        runs.append(1)
        return {"log": ["slow"]}

    g = StateGraph(State).add_node("slow", slow, cache_policy=CachePolicy())
    compiled = g.add_edge(START, "slow").compile(cache=InMemoryCache())
    cluster = InlineCluster({"g": compiled})
    assert cluster.registry.get("g").cache is cluster.node_cache  # not the one compiled in
    for worker in (0, 1):  # the second worker takes the first one's cached result
        handle = cluster.client.submit("g", {"log": []}, _thread())
        cluster.deliver(worker)
        assert handle.wait(0) == {"log": ["slow"]}
    assert len(runs) == 1
    cluster.client.clear_cache("g", ["slow"])
    cluster.run("g", {"log": []}, _thread())
    assert len(runs) == 2


def test_clear_cache_of_a_graph_without_a_cache_is_refused() -> None:
    cluster = InlineCluster({"g": _graph(parallel=False)})
    with pytest.raises(ValueError, match="cache"):
        cluster.client.clear_cache("g")


def test_a_timed_async_node_is_cancelled_and_its_error_keeps_its_type() -> None:
    attempts: list[int] = []

    async def stuck(state: State) -> dict[str, Any]:
        attempts.append(1)
        await asyncio.sleep(30)
        return {}

    policy = RetryPolicy(max_attempts=2, initial_interval=0.0, jitter=False)
    g = StateGraph(State).add_node("stuck", stuck, timeout=0.05, retry_policy=policy)
    cluster = InlineCluster({"g": g.add_edge(START, "stuck").compile()})
    with pytest.raises(NodeTimeoutError) as info:
        cluster.run("g", {"log": []}, _thread())
    assert len(attempts) == 2  # the retry ran as a job of its own
    assert [j.kind for j in cluster.broker.sent] == ["coordinate", "execute"]
    assert (info.value.node, info.value.kind, info.value.run_timeout) == ("stuck", "run", 0.05)


class _TwoArgError(Exception):
    def __init__(self, code: int, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code


def test_errors_rebuilt_from_their_record_keep_type_and_fields() -> None:
    timeout = rebuild_error(error_info(NodeTimeoutError("n", 1.5, kind="run", run_timeout=1.0)))
    assert type(timeout) is NodeTimeoutError
    assert (timeout.node, timeout.elapsed, timeout.kind) == ("n", 1.5, "run")
    assert copy.deepcopy(timeout).run_timeout == 1.0
    # a class the client may not import arrives as a RemoteGraphError of its name
    other = rebuild_error(error_info(_TwoArgError(7, "x")))
    assert isinstance(other, RemoteGraphError)
    assert type(other).__name__ == "_TwoArgError"
    assert str(copy.copy(other)) == "7: x"


def test_a_retry_job_sees_when_the_first_attempt_began() -> None:
    seen: list[tuple[int, float]] = []

    def flaky(state: State, runtime: Runtime[Any]) -> dict[str, Any]:
        info = runtime.execution_info
        assert info is not None
        assert info.node_first_attempt_time is not None
        seen.append((info.node_attempt, info.node_first_attempt_time))
        if info.node_attempt < 3:
            raise ValueError("again")
        return {"log": ["ok"]}

    policy = RetryPolicy(initial_interval=0.0, jitter=False, retry_on=ValueError)
    g = StateGraph(State).add_node("flaky", flaky, retry_policy=policy)
    cluster = InlineCluster({"g": g.add_edge(START, "flaky").compile()})
    assert cluster.run("g", {"log": []}, _thread()) == {"log": ["ok"]}
    # the first attempt ran in the coordinator, each retry in a job of its own
    assert [j.kind for j in cluster.broker.sent] == ["coordinate", "execute", "execute"]
    assert [attempt for attempt, _ in seen] == [1, 2, 3]
    assert len({first for _, first in seen}) == 1


def test_a_subgraph_with_a_saver_of_its_own_saves_with_the_clusters() -> None:
    """A saver that lives in one worker process cannot carry a subgraph's pause to the
    process that resumes it: on the workers the subgraph saves with the run's saver (as
    ``checkpointer=True`` would), and its own stays empty."""
    calls = Calls()

    class S(TypedDict, total=False):
        foo: str
        bar: str

    def prepare(state: S) -> dict[str, Any]:
        calls.hit("prepare")
        return {"bar": "prepared"}

    def ask(state: S) -> dict[str, Any]:
        return {"bar": str(interrupt("answer?"))}

    sub = StateGraph(S)
    sub.add_node("prepare", prepare)
    sub.add_node("ask", ask)
    sub.add_edge(START, "prepare")
    sub.add_edge("prepare", "ask")
    own = InMemorySaver()
    subgraph = sub.compile(checkpointer=own)

    def call(state: S) -> dict[str, Any]:
        return {"bar": subgraph.invoke({"foo": state["foo"]})["bar"]}

    parent = StateGraph(S)
    parent.add_node("call", call)
    parent.add_edge(START, "call")
    cluster = InlineCluster({"p": parent.compile()})
    cfg: RunnableConfig = {"configurable": {"thread_id": "own-saver"}}
    assert "__interrupt__" in cluster.run("p", {"foo": "x"}, cfg)
    assert cluster.run("p", Command(resume="yes"), cfg)["bar"] == "yes"
    assert calls.counts["prepare"] == 1
    assert list(own.list(None)) == []  # nothing went to the subgraph's own saver
    namespaces = {c.config["configurable"]["checkpoint_ns"] for c in cluster.saver.list(cfg)}
    assert any(ns.startswith("call:") for ns in namespaces)  # the cluster's has it
