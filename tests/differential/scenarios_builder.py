"""Scenarios: the StateGraph builder API, routing, and errors for invalid graphs."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from .observe import Recorder
from .registry import scenario
from .runtimes import Runtime


class RouteState(TypedDict, total=False):
    route: str
    items: Annotated[list[str], operator.add]


class MapState(TypedDict, total=False):
    topics: list[str]
    results: Annotated[list[str], operator.add]
    summary: str


def _appender(rec: Recorder, name: str) -> Callable[[RouteState], dict[str, Any]]:
    def node(state: RouteState) -> dict[str, Any]:
        rec.count(name)
        return {"items": [name]}

    node.__name__ = name
    return node


def _attempt(rt: Runtime, rec: Recorder, label: str, *calls: Callable[[Any], Any]) -> None:
    """Apply builder calls in order; record which call raised and what (or that none did)."""
    g = rt.StateGraph(RouteState)
    for i, call in enumerate(calls):
        try:
            call(g)
        except Exception as exc:  # noqa: BLE001 - the error is the observation
            rec.record(label, ("call", i, exc))
            return
    rec.record(label, ("all calls succeeded", len(calls)))


@scenario
def scenario_add_sequence(rt: Runtime, rec: Recorder) -> None:
    """add_sequence with functions and (name, fn) pairs; names come from __name__."""

    def first(state: RouteState) -> dict[str, Any]:
        rec.count("first")
        return {"items": ["first"]}

    def second(state: RouteState) -> dict[str, Any]:
        rec.count("second")
        return {"items": ["second"]}

    g = rt.StateGraph(RouteState)
    g.add_sequence([first, ("renamed", second), ("third", _appender(rec, "third"))])
    g.add_edge(rt.START, "first")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("stream updates", list(app.stream({"items": []}, cfg)))
    _attempt(rt, rec, "empty sequence", lambda g: g.add_sequence([]))
    _attempt(rt, rec, "duplicate names", lambda g: g.add_sequence([first, first]))


@scenario
def scenario_entry_and_finish_point(rt: Runtime, rec: Recorder) -> None:
    """set_entry_point / set_finish_point are START/END edges; compile(name=...) is accepted."""
    g = rt.StateGraph(RouteState)
    g.add_node("a", _appender(rec, "a"))
    g.add_node("b", _appender(rec, "b"))
    g.set_entry_point("a")
    g.add_edge("a", "b")
    g.set_finish_point("b")
    app = g.compile(checkpointer=rt.InMemorySaver(), name="named-graph")
    rec.record("name", app.name)
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"items": []}, cfg))
    rec.record("next", app.get_state(cfg).next)


@scenario
def scenario_conditional_path_map(rt: Runtime, rec: Recorder) -> None:
    """Routers: dict path_map (labels → nodes, END), list path_map, returning a list fans out."""

    def router(state: RouteState) -> str:
        return state["route"]

    def multi(state: RouteState) -> list[str]:
        return ["x", "y"] if state["route"] == "both" else ["x"]

    g = rt.StateGraph(RouteState)
    for name in ("start", "left", "right", "x", "y", "done"):
        g.add_node(name, _appender(rec, name))
    g.add_edge(rt.START, "start")
    g.add_conditional_edges(
        "start", router, {"L": "left", "R": "right", "stop": rt.END, "both": "left"}
    )
    g.add_conditional_edges("left", multi, ["x", "y"])
    g.add_conditional_edges("right", multi)
    g.add_edge("x", "done")
    g.add_edge("y", "done")
    app = g.compile(checkpointer=rt.InMemorySaver())
    for route in ("L", "R", "stop", "both"):
        cfg = rec.thread()
        rec.record(f"route {route}", app.invoke({"route": route, "items": []}, cfg))


@scenario
def scenario_router_errors(rt: Runtime, rec: Recorder) -> None:
    """Router returning None, an unmapped label, or Send to END fails the run.

    The router runs inside its source node's task, so the task has output writes *and* an
    error: get_state shows it finished (next == ()) and invoke(None) has nothing to re-run.
    """

    def none_router(state: RouteState) -> Any:
        return None

    def bad_label(state: RouteState) -> str:
        return "missing"

    def send_end(state: RouteState) -> Any:
        return [rt.Send(rt.END, {})]

    for label, router, path_map in (
        ("router returns None", none_router, None),
        ("label not in path_map", bad_label, {"ok": "b"}),
        ("Send to END", send_end, None),
    ):
        g = rt.StateGraph(RouteState)
        g.add_node("a", _appender(rec, "a"))
        g.add_node("b", _appender(rec, "b"))
        g.add_edge(rt.START, "a")
        g.add_conditional_edges("a", router, path_map)
        app = g.compile(checkpointer=rt.InMemorySaver())
        cfg = rec.thread()
        with rec.expect_error(label):
            app.invoke({"items": []}, cfg)
        snap = app.get_state(cfg)
        rec.record(f"{label}: state", (snap.values, snap.next, [t.error for t in snap.tasks]))
        rec.record(f"{label}: invoke(None)", app.invoke(None, cfg))
        rec.record(f"{label}: history length", len(list(app.get_state_history(cfg))))


@scenario
def scenario_node_return_errors(rt: Runtime, rec: Recorder) -> None:
    """A node must return a dict/Command/None; anything else is InvalidUpdateError."""
    for label, value in (("returns str", "oops"), ("returns list", [1, 2]), ("returns int", 7)):

        def bad(state: RouteState, value: Any = value) -> Any:
            rec.count("bad")
            return value

        g = rt.StateGraph(RouteState)
        g.add_node("bad", bad)
        g.add_edge(rt.START, "bad")
        with rec.expect_error(label):
            g.compile(checkpointer=rt.InMemorySaver()).invoke({"items": []}, rec.thread())


@scenario
def scenario_invalid_graph_nodes(rt: Runtime, rec: Recorder) -> None:
    """Clear errors for invalid node definitions (duplicates, reserved names and characters)."""

    def f(state: RouteState) -> dict[str, Any]:
        return {}

    _attempt(rt, rec, "duplicate node", lambda g: g.add_node("a", f), lambda g: g.add_node("a", f))
    _attempt(rt, rec, "node named START", lambda g: g.add_node(rt.START, f))
    _attempt(rt, rec, "node named END", lambda g: g.add_node(rt.END, f))
    _attempt(rt, rec, "colon in name", lambda g: g.add_node("a:b", f))
    _attempt(rt, rec, "pipe in name", lambda g: g.add_node("a|b", f))
    _attempt(rt, rec, "node named like a state key", lambda g: g.add_node("route", f))
    _attempt(rt, rec, "name from function", lambda g: g.add_node(f), lambda g: g.add_node(f))


@scenario
def scenario_invalid_graph_edges(rt: Runtime, rec: Recorder) -> None:
    """Clear errors for invalid edges: at add_edge time or at compile time, as LangGraph."""

    def f(state: RouteState) -> dict[str, Any]:
        return {}

    def node_a(g: Any) -> None:
        g.add_node("a", f)

    def entry(g: Any) -> None:
        g.add_edge(rt.START, "a")

    def compile_(g: Any) -> None:
        g.compile()

    _attempt(rt, rec, "no entry point", node_a, compile_)
    _attempt(rt, rec, "empty graph", compile_)
    _attempt(rt, rec, "unknown target", node_a, entry, lambda g: g.add_edge("a", "b"), compile_)
    _attempt(rt, rec, "unknown source", node_a, entry, lambda g: g.add_edge("zz", "a"), compile_)
    _attempt(rt, rec, "edge from END", node_a, lambda g: g.add_edge(rt.END, "a"))
    _attempt(rt, rec, "edge to START", node_a, lambda g: g.add_edge("a", rt.START))
    _attempt(
        rt, rec, "waiting edge from unknown", node_a, entry, lambda g: g.add_edge(["a", "q"], "a")
    )
    _attempt(
        rt, rec, "waiting edge from END", node_a, entry, lambda g: g.add_edge(["a", rt.END], "a")
    )
    _attempt(
        rt,
        rec,
        "branch to unknown",
        node_a,
        entry,
        lambda g: g.add_conditional_edges("a", lambda s: "x", {"x": "nope"}),
        compile_,
    )
    _attempt(
        rt,
        rec,
        "branch from unknown",
        node_a,
        entry,
        lambda g: g.add_conditional_edges("zz", lambda s: "x", {"x": "a"}),
        compile_,
    )
    _attempt(
        rt, rec, "finish point unknown", node_a, entry, lambda g: g.set_finish_point("b"), compile_
    )
    _attempt(
        rt,
        rec,
        "interrupt_before unknown",
        node_a,
        entry,
        lambda g: g.compile(interrupt_before=["x"]),
    )
    _attempt(
        rt,
        rec,
        "interrupt_after unknown",
        node_a,
        entry,
        lambda g: g.compile(interrupt_after=["x"]),
    )


@scenario
def scenario_send_map_reduce(rt: Runtime, rec: Recorder) -> None:
    """Send fan-out from a router: one task per Send with its own arg, reduced in Send order."""

    def plan(state: MapState) -> dict[str, Any]:
        rec.count("plan")
        return {"topics": ["cats", "dogs", "owls"]}

    def fan_out(state: MapState) -> list[Any]:
        return [rt.Send("write", {"topic": t, "n": i}) for i, t in enumerate(state["topics"])]

    def write(arg: dict[str, Any]) -> dict[str, Any]:
        rec.count("write")
        return {"results": [f"{arg['n']}:{arg['topic']}"]}

    def reduce(state: MapState) -> dict[str, Any]:
        rec.count("reduce")
        return {"summary": "+".join(state["results"])}

    g = rt.StateGraph(MapState)
    g.add_node("plan", plan)
    g.add_node("write", write)
    g.add_node("reduce", reduce)
    g.add_edge(rt.START, "plan")
    g.add_conditional_edges("plan", fan_out, ["write"])
    g.add_edge("write", "reduce")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"results": []}, cfg))
    rec.record_unordered("stream updates", app.stream({"results": []}, rec.thread()))
    history = list(app.get_state_history(cfg))
    rec.record("history length", len(history))
    fan_step = next(h for h in history if h.next and h.next[0] == "write")
    rec.record("fan-out tasks", [(t.name, t.path, t.result) for t in fan_step.tasks])


@scenario
def scenario_send_from_start(rt: Runtime, rec: Recorder) -> None:
    """Conditional edges from START may return Sends; a Send arg need not match the state."""

    def fan(state: MapState) -> list[Any]:
        return [rt.Send("echo", t) for t in state["topics"]]

    def echo(arg: str) -> dict[str, Any]:
        rec.count("echo")
        return {"results": [arg.upper()]}

    g = rt.StateGraph(MapState)
    g.add_node("echo", echo)
    g.add_conditional_edges(rt.START, fan)
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"topics": ["a", "b", "c"], "results": []}, cfg))
    rec.record("no Sends: nothing runs", app.invoke({"topics": []}, rec.thread()))
