"""Scenarios: what a node can use and how it is run (runtime, handlers, cache, store...)."""

from __future__ import annotations

import asyncio
import importlib
import operator
import time
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from .observe import Recorder
from .registry import scenario
from .runtimes import Runtime

if TYPE_CHECKING:
    # handlers name it in their annotation (a string here): both runtimes inject by it
    from graphruntime.errors import NodeError
    from graphruntime.store.base import BaseStore


def _mod(rt: Runtime, name: str) -> ModuleType:
    """``<runtime>.<name>``: the modules a ported graph imports beyond rt's names."""
    return importlib.import_module(f"{rt.package}.{name}")


class Counter(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    n: int


@dataclass
class Ctx:
    user: str
    greeting: str = "hi"


@scenario
def scenario_runtime_context(rt: Runtime, rec: Recorder) -> None:
    """context= reaches nodes (dict coerced to the dataclass schema), subgraphs, get_runtime."""
    runtime_mod = _mod(rt, "runtime")

    def inner(state: Counter, runtime: Any) -> dict[str, Any]:
        return {"items": [f"inner:{runtime.context.user}"]}

    child = rt.StateGraph(Counter, context_schema=Ctx)
    child.add_node("inner", inner)
    child.add_edge(rt.START, "inner")

    def outer(state: Counter, runtime: Any) -> dict[str, Any]:
        info = runtime.execution_info
        same_runtime = runtime_mod.get_runtime(Ctx) is not None
        return {
            "items": [
                f"{runtime.context.greeting}:{runtime.context.user}",
                f"attempt:{info.node_attempt}",
                f"thread:{info.thread_id}",
                f"get_runtime:{same_runtime}",
            ]
        }

    g = rt.StateGraph(Counter, context_schema=Ctx)
    g.add_node("outer", outer)
    g.add_node("child", child.compile())
    g.add_edge(rt.START, "outer")
    g.add_edge("outer", "child")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("dict context", app.invoke({"items": []}, cfg, context={"user": "ann"}))
    rec.record(
        "instance context",
        app.invoke({"items": []}, rec.thread(), context=Ctx(user="bob", greeting="yo")),
    )
    with rec.expect_error("context missing a field"):
        app.invoke({"items": []}, rec.thread(), context={"greeting": "x"})

    def no_ctx(state: Counter, runtime: Any) -> dict[str, Any]:
        return {"items": [f"context:{runtime.context}"]}

    plain = rt.StateGraph(Counter).add_node("n", no_ctx).add_edge(rt.START, "n").compile()
    rec.record("no context", plain.invoke({"items": []}))


@scenario
def scenario_node_attempts(rt: Runtime, rec: Recorder) -> None:
    """execution_info.node_attempt counts retries; the first attempt's time is kept."""

    def flaky(state: Counter, runtime: Any) -> dict[str, Any]:
        info = runtime.execution_info
        rec.record("attempt", info.node_attempt)
        if info.node_attempt < 3:
            raise ValueError("again")
        # two backoffs (50 ms, then 100 ms) since the first attempt began, whichever the
        # process: a first-attempt time reset per attempt would be far more recent
        waited = time.time() - info.node_first_attempt_time
        return {"n": info.node_attempt, "items": [f"waited >= 150 ms: {waited >= 0.15}"]}

    policy = rt.RetryPolicy(initial_interval=0.05, jitter=False, retry_on=ValueError)
    g = rt.StateGraph(Counter).add_node("flaky", flaky, retry_policy=policy)
    app = g.add_edge(rt.START, "flaky").compile()
    rec.record("result", app.invoke({"items": []}))


@scenario
def scenario_error_handlers(rt: Runtime, rec: Recorder) -> None:
    """error_handler= runs in the failing node's step, gets NodeError, may route; defaults."""

    def boom(state: Counter) -> dict[str, Any]:
        rec.count("boom")
        raise RuntimeError(f"boom {state.get('n', 0)}")

    def handler(state: Counter, error: NodeError) -> Any:
        rec.count("handler")
        return rt.Command(update={"items": [f"handled {error.node}: {error.error}"]}, goto="after")

    def after(state: Counter) -> dict[str, Any]:
        return {"items": ["after"]}

    def sibling(state: Counter) -> dict[str, Any]:
        return {"items": ["sibling"]}

    g = rt.StateGraph(Counter)
    g.add_node("boom", boom, error_handler=handler)
    g.add_node("sibling", sibling)
    g.add_node("after", after)
    g.add_edge(rt.START, "boom")
    g.add_edge(rt.START, "sibling")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("handled", app.invoke({"items": [], "n": 1}, cfg))
    history = list(app.get_state_history(cfg))
    rec.record("next per step", [h.next for h in reversed(history)])
    rec.record_unordered("updates", app.stream({"items": [], "n": 2}, rec.thread()))

    def default(state: Counter, error: NodeError) -> dict[str, Any]:
        return {"items": [f"default {error.node}"]}

    def broken(state: Counter, error: NodeError) -> dict[str, Any]:
        raise ValueError("handler failed")

    d = rt.StateGraph(Counter).set_node_defaults(error_handler=default)
    d.add_node("boom", boom).add_node("own", boom, error_handler=broken)
    d.add_edge(rt.START, "boom")
    rec.record("default handler", d.compile().invoke({"items": []}))
    d2 = rt.StateGraph(Counter).set_node_defaults(error_handler=default)
    d2.add_node("own", boom, error_handler=broken).add_edge(rt.START, "own")
    with rec.expect_error("a failing handler fails the run"):
        d2.compile().invoke({"items": []})
    with rec.expect_error("a user node named like the default handler"):
        rt.StateGraph(Counter).set_node_defaults(error_handler=default).add_node(
            "__default_error_handler__", sibling
        ).add_edge(rt.START, "__default_error_handler__").compile()


@scenario
def scenario_error_handler_resumes(rt: Runtime, rec: Recorder) -> None:
    """A handler that crashed runs again on resume; the failed node does not."""
    fail_handler = {"on": True}  # a dict: the distributed corpus shares it with the workers

    def boom(state: Counter) -> dict[str, Any]:
        rec.count("boom")
        raise RuntimeError("boom")

    def handler(state: Counter, error: NodeError) -> dict[str, Any]:
        rec.count("handler")
        if fail_handler["on"]:
            raise RuntimeError("handler crash")
        return {"items": [f"recovered {error.node}"]}

    g = rt.StateGraph(Counter).add_node("boom", boom, error_handler=handler)
    app = g.add_edge(rt.START, "boom").compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    with rec.expect_error("handler crashes"):
        app.invoke({"items": []}, cfg)
    rec.record_counts("after crash")
    fail_handler["on"] = False
    rec.record("resumed", app.invoke(None, cfg))
    rec.record_counts("after resume")


@scenario
def scenario_root_state(rt: Runtime, rec: Recorder) -> None:
    """A state that is one value (``Annotated[list, add]``, ``dict``): the __root__ channel."""

    def one(state: list[str]) -> list[str]:
        return [f"one:{len(state)}"]

    def two(state: list[str]) -> Any:
        return [rt.Command(update=["cmd"]), ["plain"]]

    g = rt.StateGraph(Annotated[list, operator.add])
    g.add_node("one", one).add_node("two", two)
    g.add_edge(rt.START, "one").add_edge("one", "two")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke(["in"], cfg))
    rec.record("updates", list(app.stream(["in"], rec.thread())))
    rec.record("values", list(app.stream(["in"], rec.thread(), stream_mode="values")))
    state = app.get_state(cfg)
    rec.record("state values", state.values)
    rec.record("task results", [[t.result for t in h.tasks] for h in app.get_state_history(cfg)])
    app.update_state(cfg, ["edited"])
    rec.record("after update_state", app.get_state(cfg).values)

    d = rt.StateGraph(dict).add_node("n", lambda s: {**s, "seen": True})
    rec.record("dict state", d.add_edge(rt.START, "n").compile().invoke({"a": 1}))


@scenario
def scenario_managed_values(rt: Runtime, rec: Recorder) -> None:
    """RemainingSteps / IsLastStep: computed from the recursion limit, never stored."""
    managed = _mod(rt, "managed")

    # functional syntax: the annotations name this function's modules
    fields: dict[str, Any] = {
        "items": Annotated[list[str], operator.add],
        "remaining": managed.RemainingSteps,
        "last": managed.IsLastStep,
    }
    State = TypedDict("State", fields, total=False)  # type: ignore[misc]

    def loop(state: dict[str, Any]) -> dict[str, Any]:
        return {"items": [f"{state['remaining']}:{state['last']}"]}

    def more(state: dict[str, Any]) -> str:
        return "loop" if state["remaining"] > 2 else rt.END

    g = rt.StateGraph(State).add_node("loop", loop).add_edge(rt.START, "loop")
    app = g.add_conditional_edges("loop", more).compile(checkpointer=rt.InMemorySaver())
    cfg = {**rec.thread(), "recursion_limit": 6}
    rec.record("loop", app.invoke({"items": []}, cfg))
    rec.record("state keys", sorted(app.get_state(cfg).values))


@scenario
def scenario_store_injection(rt: Runtime, rec: Recorder) -> None:
    """compile(store=): ``store`` parameter, get_store(), runtime.store; subgraphs share it."""
    store_mod = _mod(rt, "store.memory")
    config_mod = _mod(rt, "config")
    store = store_mod.InMemoryStore()

    def write(state: Counter, store: BaseStore) -> dict[str, Any]:
        store.put(("docs",), "a", {"v": len(state["items"])})
        return {"items": ["wrote"]}

    def read(state: Counter) -> dict[str, Any]:
        item = config_mod.get_store().get(("docs",), "a")
        return {"items": [f"read {item.value['v']}"]}

    def via_runtime(state: Counter, runtime: Any) -> dict[str, Any]:
        if runtime.store is None:
            return {"items": ["runtime store False"]}
        # read back in a node: on the workers the store is the one they share
        stored = runtime.store.get(("docs",), "a").value
        return {"items": [f"runtime store True, stored {stored}"]}

    child = rt.StateGraph(Counter).add_node("read", read).add_edge(rt.START, "read").compile()
    g = rt.StateGraph(Counter)
    g.add_node("write", write).add_node("child", child).add_node("rt", via_runtime)
    g.add_edge(rt.START, "write").add_edge("write", "child").add_edge("child", "rt")
    rec.record("with store", g.compile(store=store).invoke({"items": ["x"]}))
    none = rt.StateGraph(Counter).add_node("rt", via_runtime).add_edge(rt.START, "rt")
    rec.record("without store", none.compile().invoke({"items": []}))


@scenario
def scenario_node_cache(rt: Runtime, rec: Recorder) -> None:
    """cache_policy= + compile(cache=): a hit skips the node, streams "cached"; clear_cache."""
    types_mod = _mod(rt, "types")
    cache_mod = _mod(rt, "cache.memory")

    def slow(state: Counter) -> dict[str, Any]:
        rec.count("slow")
        return {"items": [f"slow:{state.get('n', 0)}"]}

    g = rt.StateGraph(Counter)
    g.add_node("slow", slow, cache_policy=types_mod.CachePolicy())
    app = g.add_edge(rt.START, "slow").compile(cache=cache_mod.InMemoryCache())
    rec.record("first", list(app.stream({"items": [], "n": 1})))
    rec.record("same input", list(app.stream({"items": [], "n": 1})))
    rec.record("other input", list(app.stream({"items": [], "n": 2})))
    app.clear_cache()
    rec.record("after clear", list(app.stream({"items": [], "n": 1})))
    rec.record_counts()


@scenario
def scenario_untracked_value(rt: Runtime, rec: Recorder) -> None:
    """UntrackedValue keys reach later nodes (also through Send) but are never checkpointed."""
    untracked = _mod(rt, "channels.untracked_value")

    fields: dict[str, Any] = {
        "items": Annotated[list[str], operator.add],
        "live": Annotated[object, untracked.UntrackedValue],
    }
    State = TypedDict("State", fields, total=False)  # type: ignore[misc]

    class Resource:
        def __init__(self, name: str) -> None:
            self.name = name

    def setup(state: dict[str, Any]) -> dict[str, Any]:
        return {"items": ["setup"], "live": Resource("r1")}

    def use(state: dict[str, Any]) -> dict[str, Any]:
        return {"items": [f"used {state['live'].name}"]}

    g = rt.StateGraph(State).add_node("setup", setup).add_node("use", use)
    g.add_edge(rt.START, "setup")
    g.add_conditional_edges("setup", lambda s: [rt.Send("use", s)])
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("items", app.invoke({"items": []}, cfg)["items"])
    rec.record("saved keys", sorted(app.get_state(cfg).values))


@scenario
def scenario_run_control_drain(rt: Runtime, rec: Recorder) -> None:
    """RunControl.request_drain(): the run stops between steps with GraphDrained, resumable."""
    runtime_mod = _mod(rt, "runtime")

    def first(state: Counter, runtime: Any) -> dict[str, Any]:
        runtime.control.request_drain("rollout")
        return {"items": ["first"]}

    def second(state: Counter) -> dict[str, Any]:
        rec.count("second")
        return {"items": ["second"]}

    g = rt.StateGraph(Counter).add_node("first", first).add_node("second", second)
    g.add_edge(rt.START, "first").add_edge("first", "second")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    with rec.expect_error("drained"):
        app.invoke({"items": []}, cfg, control=runtime_mod.RunControl())
    rec.record("next after drain", app.get_state(cfg).next)
    rec.record("resumed", app.invoke(None, cfg))

    def last(state: Counter, runtime: Any) -> dict[str, Any]:
        runtime.control.request_drain()
        return {"items": ["last"]}

    done = rt.StateGraph(Counter).add_node("last", last).add_edge(rt.START, "last").compile()
    rec.record("drain in the last step", done.invoke({"items": []}))


@scenario
def scenario_node_timeout(rt: Runtime, rec: Recorder) -> None:
    """timeout= on async nodes: NodeTimeoutError, retried by the policy; sync nodes refused."""
    types_mod = _mod(rt, "types")
    attempts = {"n": 0}  # a dict: the distributed corpus shares it with the workers

    async def slow(state: Counter) -> dict[str, Any]:
        attempts["n"] += 1
        if attempts["n"] < 2:
            await asyncio.sleep(5)
        return {"items": ["done"]}

    policy = rt.RetryPolicy(initial_interval=0.0, jitter=False, retry_on=rt.errors.NodeTimeoutError)
    g = rt.StateGraph(Counter).add_node(
        "slow", slow, timeout=types_mod.TimeoutPolicy(run_timeout=0.05), retry_policy=policy
    )
    app = g.add_edge(rt.START, "slow").compile()
    rec.record("retried after timeout", asyncio.run(app.ainvoke({"items": []})))
    rec.record("attempts", attempts["n"])

    async def stuck(state: Counter) -> dict[str, Any]:
        await asyncio.sleep(5)
        return {}

    never = rt.StateGraph(Counter).add_node("stuck", stuck, timeout=0.05)
    never_app = never.add_edge(rt.START, "stuck").compile()
    try:
        asyncio.run(never_app.ainvoke({"items": []}))
    except rt.errors.NodeTimeoutError as exc:  # its message has the elapsed time: not compared
        rec.record("timed out", (exc.node, exc.kind, exc.run_timeout, exc.idle_timeout))

    def sync(state: Counter) -> dict[str, Any]:
        return {}

    sync_graph = rt.StateGraph(Counter).add_node("sync", sync, timeout=1.0)
    with rec.expect_error("sync node with a timeout"):
        sync_graph.add_edge(rt.START, "sync").compile()
