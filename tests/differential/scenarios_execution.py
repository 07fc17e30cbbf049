"""Scenarios: supersteps, Command from nodes, recursion limit, retries, failures, async."""

from __future__ import annotations

import asyncio
import operator
import threading
from typing import Annotated, Any, TypedDict

from .observe import Recorder
from .registry import scenario
from .runtimes import Runtime


class ExecState(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    n: int
    flag: str


def _node(rec: Recorder, name: str) -> Any:
    def node(state: ExecState) -> dict[str, Any]:
        rec.count(name)
        return {"items": [name]}

    return node


def _saver_signalling(rt: Runtime, write: tuple[str, Any]) -> tuple[Any, Any]:
    """An InMemorySaver that sets a per-thread event once ``write`` of a task is saved.

    Returns the saver and ``wait(thread_id)``, which blocks until that write is saved.
    """
    events: dict[str, threading.Event] = {}
    lock = threading.Lock()

    def event(thread_id: str) -> threading.Event:
        with lock:
            return events.setdefault(thread_id, threading.Event())

    class SignallingSaver(rt.InMemorySaver):  # type: ignore[name-defined,misc]
        def put_writes(self, config: Any, writes: Any, task_id: str, *args: Any, **kw: Any) -> None:
            super().put_writes(config, writes, task_id, *args, **kw)
            if write in [tuple(w) for w in writes]:
                event(config["configurable"]["thread_id"]).set()

    def wait(thread_id: str) -> None:
        if not event(thread_id).wait(timeout=10):
            raise TimeoutError(f"write {write!r} was never saved")

    return SignallingSaver(), wait


@scenario
def scenario_parallel_superstep(rt: Runtime, rec: Recorder) -> None:
    """Fan-out/fan-in: siblings run in one superstep; a join node runs once after all."""
    g = rt.StateGraph(ExecState)
    for name in ("a", "b", "c", "d", "join"):
        g.add_node(name, _node(rec, name))
    g.add_edge(rt.START, "a")
    for name in ("b", "c", "d"):
        g.add_edge("a", name)
        g.add_edge(name, "join")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("stream values", list(app.stream({"items": []}, cfg, stream_mode="values")))
    rec.record_unordered("stream updates", app.stream({"items": []}, rec.thread()))
    history = list(app.get_state_history(cfg))
    rec.record("next per step", [h.next for h in reversed(history)])
    rec.record("sources per step", [h.metadata["source"] for h in reversed(history)])


@scenario
def scenario_command_goto_update(rt: Runtime, rec: Recorder) -> None:
    """Command(update, goto) from a node: goto adds to (not replaces) static edges; END = stop."""

    def route(state: ExecState) -> Any:
        rec.count("route")
        if state.get("flag") == "end":
            return rt.Command(update={"items": ["route-end"]}, goto=rt.END)
        if state.get("flag") == "many":
            return rt.Command(update={"items": ["route-many"]}, goto=["x", "y"])
        return rt.Command(update={"items": ["route"], "n": 1}, goto="x")

    g = rt.StateGraph(ExecState)
    g.add_node("route", route)
    g.add_node("static", _node(rec, "static"))
    g.add_node("x", _node(rec, "x"))
    g.add_node("y", _node(rec, "y"))
    g.add_edge(rt.START, "route")
    g.add_edge("route", "static")
    app = g.compile(checkpointer=rt.InMemorySaver())
    for flag in ("single", "many", "end"):
        cfg = rec.thread()
        rec.record(f"{flag}: invoke", app.invoke({"items": [], "flag": flag}, cfg))
        rec.record(
            f"{flag}: next per step", [h.next for h in reversed(list(app.get_state_history(cfg)))]
        )


@scenario
def scenario_command_goto_send(rt: Runtime, rec: Recorder) -> None:
    """Command(goto=[Send, ...]) from a node schedules push tasks with their own args."""

    def plan(state: ExecState) -> Any:
        rec.count("plan")
        return rt.Command(
            update={"n": 3}, goto=[rt.Send("work", {"i": i}) for i in range(3)] + ["tally"]
        )

    def work(arg: dict[str, Any]) -> dict[str, Any]:
        rec.count("work")
        return {"items": [f"work{arg['i']}"]}

    g = rt.StateGraph(ExecState)
    g.add_node("plan", plan)
    g.add_node("work", work)
    g.add_node("tally", _node(rec, "tally"))
    g.add_edge(rt.START, "plan")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"items": []}, cfg))
    step = list(app.get_state_history(cfg))[1]
    rec.record("pending step tasks", [(t.name, t.path) for t in step.tasks])


@scenario
def scenario_command_list_return(rt: Runtime, rec: Recorder) -> None:
    """A node may return a list mixing Commands and dicts; updates merge, gotos union."""

    def multi(state: ExecState) -> Any:
        rec.count("multi")
        return [
            rt.Command(update={"items": ["c1"]}, goto="b"),
            {"items": ["d"]},
            rt.Command(goto="c"),
        ]

    g = rt.StateGraph(ExecState)
    g.add_node("multi", multi)
    g.add_node("b", _node(rec, "b"))
    g.add_node("c", _node(rec, "c"))
    g.add_edge(rt.START, "multi")
    app = g.compile(checkpointer=rt.InMemorySaver())
    rec.record_unordered("stream updates", app.stream({"items": []}, rec.thread()))
    rec.record("invoke", app.invoke({"items": []}, rec.thread()))


@scenario
def scenario_command_parent_as_input(rt: Runtime, rec: Recorder) -> None:
    """Command(graph=PARENT) as root input → InvalidUpdateError('There is no parent graph')."""
    g = rt.StateGraph(ExecState)
    g.add_node("a", _node(rec, "a"))
    g.add_edge(rt.START, "a")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    app.invoke({"items": []}, cfg)
    with rec.expect_error("Command(graph=PARENT) input"):
        app.invoke(rt.Command(graph=rt.Command.PARENT, goto="a"), cfg)
    rec.record("state unchanged", app.get_state(cfg).values)


@scenario
def scenario_command_goto_input(rt: Runtime, rec: Recorder) -> None:
    """Command(goto=..., update=...) as input jumps to a node of a thread."""
    g = rt.StateGraph(ExecState)
    for name in ("a", "b", "c"):
        g.add_node(name, _node(rec, name))
    g.add_edge(rt.START, "a")
    g.add_edge("a", "b")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("first run", app.invoke({"items": []}, cfg))
    rec.record("goto c", app.invoke(rt.Command(goto="c", update={"n": 7}), cfg))
    rec.record("goto with Send", app.invoke(rt.Command(goto=rt.Send("b", {"items": ["x"]})), cfg))
    rec.record("history length", len(list(app.get_state_history(cfg))))


@scenario
def scenario_recursion_limit(rt: Runtime, rec: Recorder) -> None:
    """recursion_limit=N fails a chain needing N user steps; resumed runs get one more step."""
    g = rt.StateGraph(ExecState)
    for name in ("a", "b", "c"):
        g.add_node(name, _node(rec, name))
    g.add_edge(rt.START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    with rec.expect_error("chain of 3, limit 3"):
        app.invoke({"items": []}, {**cfg, "recursion_limit": 3})
    snap = app.get_state(cfg)
    rec.record("after limit: values, next", (snap.values, snap.next))
    rec.record("resume with limit 1", app.invoke(None, {**cfg, "recursion_limit": 1}))
    rec.record(
        "chain of 3, limit 4", app.invoke({"items": []}, {**rec.thread(), "recursion_limit": 4})
    )
    with rec.expect_error("limit 0"):
        app.invoke({"items": []}, {**rec.thread(), "recursion_limit": 0})


@scenario
def scenario_recursion_limit_loop(rt: Runtime, rec: Recorder) -> None:
    """An endless loop raises GraphRecursionError; completed steps are all checkpointed."""

    def spin(state: ExecState) -> dict[str, Any]:
        rec.count("spin")
        return {"n": state.get("n", 0) + 1}

    g = rt.StateGraph(ExecState)
    g.add_node("spin", spin)
    g.add_edge(rt.START, "spin")
    g.add_edge("spin", "spin")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    with rec.expect_error("loop"):
        app.invoke({"n": 0}, {**cfg, "recursion_limit": 5})
    snap = app.get_state(cfg)
    rec.record("state", snap)
    rec.record("history length", len(list(app.get_state_history(cfg))))
    with rec.expect_error("loop without checkpointer"):
        g.compile().invoke({"n": 0}, {"recursion_limit": 2})
    rec.record_counts()


@scenario
def scenario_retry_policy(rt: Runtime, rec: Recorder) -> None:
    """RetryPolicy: retries per retry_on and max_attempts; default retry_on skips ValueError."""
    fast = {"initial_interval": 0.0, "jitter": False}
    attempts: dict[str, int] = {}

    def failing(name: str, exc: type[Exception], succeed_on: int) -> Any:
        def node(state: ExecState) -> dict[str, Any]:
            rec.count(name)
            attempts[name] = attempts.get(name, 0) + 1
            if attempts[name] < succeed_on:
                raise exc(f"{name} attempt {attempts[name]}")
            return {"items": [f"{name} ok after {attempts[name]}"]}

        return node

    cases = (
        ("flaky_conn", ConnectionError, 3, rt.RetryPolicy(max_attempts=3, **fast)),
        ("exhausted", ConnectionError, 99, rt.RetryPolicy(max_attempts=2, **fast)),
        ("value_error", ValueError, 2, rt.RetryPolicy(max_attempts=5, **fast)),
        ("retry_on_type", ValueError, 2, rt.RetryPolicy(retry_on=ValueError, **fast)),
        (
            "retry_on_tuple",
            KeyError,
            3,
            rt.RetryPolicy(retry_on=(TypeError, KeyError), max_attempts=4, **fast),
        ),
        (
            "retry_on_callable",
            RuntimeError,
            2,
            rt.RetryPolicy(retry_on=lambda e: "attempt 1" in str(e), **fast),
        ),
        (
            "policy_list",
            TypeError,
            2,
            [rt.RetryPolicy(retry_on=KeyError, **fast), rt.RetryPolicy(retry_on=TypeError, **fast)],
        ),
    )
    for name, exc, succeed_on, policy in cases:
        g = rt.StateGraph(ExecState)
        g.add_node(name, failing(name, exc, succeed_on), retry_policy=policy)
        g.add_edge(rt.START, name)
        app = g.compile(checkpointer=rt.InMemorySaver())
        cfg = rec.thread()
        with rec.expect_error(f"{name}: invoke"):
            rec.record(f"{name}: result", app.invoke({"items": []}, cfg))
        snap = app.get_state(cfg)
        rec.record(f"{name}: state", (snap.values, snap.next, [t.error for t in snap.tasks]))
    rec.record_counts()


@scenario
def scenario_retry_never_retries_interrupt(rt: Runtime, rec: Recorder) -> None:
    """A RetryPolicy that retries everything never retries GraphInterrupt."""

    def ask(state: ExecState) -> dict[str, Any]:
        rec.count("ask")
        answer = rt.interrupt("question")
        return {"items": [answer]}

    g = rt.StateGraph(ExecState)
    g.add_node(
        "ask",
        ask,
        retry_policy=rt.RetryPolicy(retry_on=lambda e: True, initial_interval=0.0, jitter=False),
    )
    g.add_edge(rt.START, "ask")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"items": []}, cfg))
    rec.record_counts("after interrupt")
    rec.record("resume", app.invoke(rt.Command(resume="yes"), cfg))


@scenario
def scenario_failed_node_keeps_sibling_writes(rt: Runtime, rec: Recorder) -> None:
    """A failing node raises; siblings' writes persist; invoke(None) re-runs only the failed one."""
    broken = {"on": True}

    def flaky(state: ExecState) -> dict[str, Any]:
        rec.count("flaky")
        if broken["on"]:
            # Fail only once the sibling's writes are saved: LangGraph does not await a
            # sibling still running when a task fails, so the outcome would depend on timing.
            wait_for_ok(rt.get_config()["configurable"]["thread_id"])
            raise RuntimeError("flaky is broken\nsecond line is not compared")
        return {"items": ["flaky"]}

    g = rt.StateGraph(ExecState)
    g.add_node("ok", _node(rec, "ok"))
    g.add_node("flaky", flaky)
    g.add_node("after", _node(rec, "after"))
    g.add_edge(rt.START, "ok")
    g.add_edge(rt.START, "flaky")
    g.add_edge(["ok", "flaky"], "after")
    saver, wait_for_ok = _saver_signalling(rt, ("items", ["ok"]))
    app = g.compile(checkpointer=saver)
    cfg = rec.thread()
    with rec.expect_error("invoke"):
        app.invoke({"items": []}, cfg)
    rec.record("state after failure", app.get_state(cfg))
    with rec.expect_error("invoke(None) while still broken"):
        app.invoke(None, cfg)
    rec.record_counts("counts while broken")
    broken["on"] = False
    rec.record("invoke(None) after fix", app.invoke(None, cfg))
    rec.record("history length", len(list(app.get_state_history(cfg))))
    # new input on a failed thread discards the failed step instead of re-running it
    broken["on"] = True
    cfg2 = rec.thread()
    with rec.expect_error("second thread fails"):
        app.invoke({"items": []}, cfg2)
    broken["on"] = False
    rec.record("new input discards failed tasks", app.invoke({"items": ["new"]}, cfg2))


@scenario
def scenario_async_nodes(rt: Runtime, rec: Recorder) -> None:
    """async def nodes with ainvoke/astream/aget_state; sync and async nodes mix."""

    async def a(state: ExecState) -> dict[str, Any]:
        rec.count("a")
        await asyncio.sleep(0)
        return {"items": ["a"]}

    async def b(state: ExecState) -> dict[str, Any]:
        rec.count("b")
        return {"items": ["b"]}

    g = rt.StateGraph(ExecState)
    g.add_node("a", a)
    g.add_node("b", b)
    g.add_node("c", _node(rec, "c"))
    g.add_edge(rt.START, "a")
    g.add_edge(rt.START, "b")
    g.add_edge(["a", "b"], "c")
    app = g.compile(checkpointer=rt.InMemorySaver())

    async def main() -> None:
        cfg = rec.thread()
        rec.record("ainvoke", await app.ainvoke({"items": []}, cfg))
        chunks = [c async for c in app.astream({"items": []}, cfg, stream_mode="values")]
        rec.record("astream values", chunks)
        rec.record_unordered("astream updates", [c async for c in app.astream({}, rec.thread())])
        rec.record("aget_state", await app.aget_state(cfg))
        rec.record("aget_state_history length", len([h async for h in app.aget_state_history(cfg)]))

    asyncio.run(main())


@scenario
def scenario_async_failure_and_interrupt(rt: Runtime, rec: Recorder) -> None:
    """Async: a failing async node raises from ainvoke; interrupt/resume work via ainvoke."""
    broken = {"on": True}

    async def fragile(state: ExecState) -> dict[str, Any]:
        rec.count("fragile")
        if broken["on"]:
            raise KeyError("missing")
        return {"items": ["fragile"]}

    async def ask(state: ExecState) -> dict[str, Any]:
        rec.count("ask")
        return {"items": [rt.interrupt({"q": "ok?"})]}

    g = rt.StateGraph(ExecState)
    g.add_node("fragile", fragile)
    g.add_node("ask", ask)
    g.add_edge(rt.START, "fragile")
    g.add_edge("fragile", "ask")
    app = g.compile(checkpointer=rt.InMemorySaver())

    async def main() -> None:
        cfg = rec.thread()
        with rec.expect_error("ainvoke"):
            await app.ainvoke({"items": []}, cfg)
        broken["on"] = False
        rec.record("ainvoke(None)", await app.ainvoke(None, cfg))
        rec.record("aget_state", await app.aget_state(cfg))
        chunks = [c async for c in app.astream(rt.Command(resume="yes"), cfg)]
        rec.record("astream resume", chunks)

    asyncio.run(main())


@scenario
def scenario_get_config_in_nodes(rt: Runtime, rec: Recorder) -> None:
    """get_config() inside nodes and routers: thread, user keys, langgraph_* metadata."""

    def observe(where: str) -> None:
        cfg = rt.get_config()
        conf = cfg["configurable"]
        md = cfg["metadata"]
        rec.record(
            f"config in {where}",
            {
                "thread_id": conf["thread_id"],
                "user_key": conf.get("user_key"),
                "checkpoint_ns": conf.get("checkpoint_ns"),
                "recursion_limit": cfg.get("recursion_limit"),
                "user_meta": md.get("user_meta"),
                "langgraph_step": md.get("langgraph_step"),
                "langgraph_node": md.get("langgraph_node"),
                "langgraph_triggers": tuple(md.get("langgraph_triggers", ())),
                "langgraph_path": tuple(md.get("langgraph_path", ())),
                "langgraph_checkpoint_ns": md.get("langgraph_checkpoint_ns"),
            },
        )

    def a(state: ExecState) -> dict[str, Any]:
        rec.count("a")
        observe("a")
        return {"items": ["a"]}

    def router(state: ExecState) -> str:
        observe("router")
        return "b"

    def b(state: ExecState) -> dict[str, Any]:
        rec.count("b")
        observe("b")
        return {"items": ["b"]}

    g = rt.StateGraph(ExecState)
    g.add_node("a", a)
    g.add_node("b", b)
    g.add_edge(rt.START, "a")
    g.add_conditional_edges("a", router, ["b"])
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread(user_key="u1")
    app.invoke({"items": []}, {**cfg, "metadata": {"user_meta": "m1"}, "recursion_limit": 12})
    rec.record("checkpoint metadata keeps user keys", app.get_state(cfg).metadata)
    with rec.expect_error("get_config outside a node"):
        rt.get_config()
    with rec.expect_error("get_stream_writer outside a node"):
        rt.get_stream_writer()
