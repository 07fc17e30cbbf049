"""Scenarios: subgraphs as nodes and invoked inside nodes; namespaces; Command.PARENT."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from .observe import Recorder
from .registry import scenario
from .runtimes import Runtime


class SubState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    answer: str


class ParentState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    answer: str
    extra: str


def _log(rec: Recorder, name: str) -> Any:
    def node(state: SubState) -> dict[str, Any]:
        rec.count(name)
        return {"log": [name]}

    return node


def _child(rt: Runtime, rec: Recorder, *, ask: bool) -> Any:
    """child: c1 → (c_ask →) c2, all writing to log."""

    def c_ask(state: SubState) -> dict[str, Any]:
        rec.count("c_ask")
        answer = rt.interrupt("child question")
        return {"log": [f"c_ask={answer}"], "answer": answer}

    g = rt.StateGraph(SubState)
    g.add_node("c1", _log(rec, "c1"))
    g.add_node("c2", _log(rec, "c2"))
    g.add_edge(rt.START, "c1")
    if ask:
        g.add_node("c_ask", c_ask)
        g.add_edge("c1", "c_ask")
        g.add_edge("c_ask", "c2")
    else:
        g.add_edge("c1", "c2")
    return g.compile()


def _namespaces(chunks: list[Any]) -> list[Any]:
    """(namespace, chunk) pairs with each namespace segment reduced to its node name."""
    return [(tuple(seg.split(":")[0] for seg in ns), chunk) for ns, chunk in chunks]


@scenario
def scenario_subgraph_as_node(rt: Runtime, rec: Recorder) -> None:
    """A compiled graph as a node shares keys with the parent; stream(subgraphs=True) tags ns."""
    child = _child(rt, rec, ask=False)
    g = rt.StateGraph(ParentState)
    g.add_node("p1", _log(rec, "p1"))
    g.add_node("sub", child)
    g.add_node("p2", _log(rec, "p2"))
    g.add_edge(rt.START, "p1")
    g.add_edge("p1", "sub")
    g.add_edge("sub", "p2")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"log": []}, cfg))
    chunks = list(app.stream({"log": []}, rec.thread(), subgraphs=True))
    rec.record("stream subgraphs=True", chunks)
    rec.record("namespaces by node", _namespaces(chunks))
    rec.record("default stream hides child", list(app.stream({"log": []}, rec.thread())))
    rec.record("history length (root ns only)", len(list(app.get_state_history(cfg))))


@scenario
def scenario_subgraph_interrupt_as_node(rt: Runtime, rec: Recorder) -> None:
    """Interrupt inside a subgraph node: root returns it; resume continues inside the child."""
    child = _child(rt, rec, ask=True)
    g = rt.StateGraph(ParentState)
    g.add_node("p1", _log(rec, "p1"))
    g.add_node("sub", child)
    g.add_node("p2", _log(rec, "p2"))
    g.add_edge(rt.START, "p1")
    g.add_edge("p1", "sub")
    g.add_edge("sub", "p2")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"log": []}, cfg))
    snap = app.get_state(cfg)
    rec.record("state", snap)
    rec.record("state subgraphs=True", app.get_state(cfg, subgraphs=True))
    child_cfg = snap.tasks[0].state
    rec.record("child state via task config", app.get_state(child_cfg))
    rec.record_counts("counts before resume")
    rec.record("resume", app.invoke(rt.Command(resume="yes"), cfg))
    rec.record("final", app.get_state(cfg))


@scenario
def scenario_subgraph_stream_interrupt_resume(rt: Runtime, rec: Recorder) -> None:
    """stream(subgraphs=True) through a child interrupt and its resume."""
    child = _child(rt, rec, ask=True)
    g = rt.StateGraph(ParentState)
    g.add_node("sub", child)
    g.add_node("after", _log(rec, "after"))
    g.add_edge(rt.START, "sub")
    g.add_edge("sub", "after")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("first", list(app.stream({"log": []}, cfg, subgraphs=True)))
    rec.record("resume", list(app.stream(rt.Command(resume="ok"), cfg, subgraphs=True)))
    cfg = rec.thread()
    rec.record(
        "values mode",
        list(app.stream({"log": []}, cfg, subgraphs=True, stream_mode="values")),
    )
    rec.record(
        "values mode resume",
        list(app.stream(rt.Command(resume="ok"), cfg, subgraphs=True, stream_mode="values")),
    )


@scenario
def scenario_subgraph_invoked_in_node(rt: Runtime, rec: Recorder) -> None:
    """A node calling child.invoke(): code before the call re-runs on resume; child resumes."""
    child = _child(rt, rec, ask=True)

    def wrapper(state: ParentState) -> dict[str, Any]:
        rec.count("wrapper")
        out = child.invoke({"log": ["from wrapper"]})
        rec.count("wrapper after child")
        return {"log": [f"child said {out['answer']}"], "extra": ",".join(out["log"])}

    g = rt.StateGraph(ParentState)
    g.add_node("wrapper", wrapper)
    g.add_edge(rt.START, "wrapper")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"log": []}, cfg))
    rec.record("state", app.get_state(cfg))
    rec.record("resume", app.invoke(rt.Command(resume="sure"), cfg))
    rec.record("stream subgraphs", list(app.stream({"log": []}, rec.thread(), subgraphs=True)))


@scenario
def scenario_subgraph_called_twice_in_node(rt: Runtime, rec: Recorder) -> None:
    """Two child runs in one node get distinct namespaces; interrupts resume in order."""
    child = _child(rt, rec, ask=True)

    def twice(state: ParentState) -> dict[str, Any]:
        rec.count("twice")
        first = child.invoke({"log": []})
        second = child.invoke({"log": []})
        return {"log": [first["answer"], second["answer"]]}

    g = rt.StateGraph(ParentState)
    g.add_node("twice", twice)
    g.add_edge(rt.START, "twice")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"log": []}, cfg))
    rec.record("resume 1", app.invoke(rt.Command(resume="one"), cfg))
    rec.record("state", app.get_state(cfg))
    rec.record("resume 2", app.invoke(rt.Command(resume="two"), cfg))


@scenario
def scenario_nested_subgraphs(rt: Runtime, rec: Recorder) -> None:
    """Two levels of nesting: namespaces chain with '|'; resume reaches the innermost node."""
    inner = _child(rt, rec, ask=True)
    mid = rt.StateGraph(SubState)
    mid.add_node("m1", _log(rec, "m1"))
    mid.add_node("inner", inner)
    mid.add_edge(rt.START, "m1")
    mid.add_edge("m1", "inner")
    g = rt.StateGraph(ParentState)
    g.add_node("mid", mid.compile())
    g.add_edge(rt.START, "mid")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    chunks = list(app.stream({"log": []}, cfg, subgraphs=True))
    rec.record("stream", chunks)
    rec.record("namespaces by node", _namespaces(chunks))
    rec.record("state subgraphs=True", app.get_state(cfg, subgraphs=True))
    rec.record("resume", app.invoke(rt.Command(resume="deep"), cfg))


@scenario
def scenario_subgraph_error_resume(rt: Runtime, rec: Recorder) -> None:
    """A failing child node raises to the caller; invoke(None) resumes inside the child."""
    broken = {"on": True}

    def fragile(state: SubState) -> dict[str, Any]:
        rec.count("fragile")
        if broken["on"]:
            raise ValueError("child broke")
        return {"log": ["fragile"]}

    child = rt.StateGraph(SubState)
    child.add_node("c1", _log(rec, "c1"))
    child.add_node("fragile", fragile)
    child.add_edge(rt.START, "c1")
    child.add_edge("c1", "fragile")
    g = rt.StateGraph(ParentState)
    g.add_node("sub", child.compile())
    g.add_edge(rt.START, "sub")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    with rec.expect_error("invoke"):
        app.invoke({"log": []}, cfg)
    snap = app.get_state(cfg)
    rec.record("parent next", snap.next)
    rec.record("parent task error", [t.error for t in snap.tasks])
    broken["on"] = False
    rec.record("invoke(None)", app.invoke(None, cfg))


@scenario
def scenario_command_parent(rt: Runtime, rec: Recorder) -> None:
    """Command(graph=PARENT, goto, update) from a child node routes in the parent graph."""

    def escalate(state: SubState) -> Any:
        rec.count("escalate")
        return rt.Command(graph=rt.Command.PARENT, goto="handler", update={"log": ["escalated"]})

    child = rt.StateGraph(SubState)
    child.add_node("c1", _log(rec, "c1"))
    child.add_node("escalate", escalate)
    child.add_node("never", _log(rec, "never"))
    child.add_edge(rt.START, "c1")
    child.add_edge("c1", "escalate")
    child.add_edge("escalate", "never")
    g = rt.StateGraph(ParentState)
    g.add_node("sub", child.compile())
    g.add_node("handler", _log(rec, "handler"))
    g.add_node("normal", _log(rec, "normal"))
    g.add_edge(rt.START, "sub")
    g.add_edge("sub", "normal")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"log": []}, cfg))
    rec.record("next per step", [h.next for h in reversed(list(app.get_state_history(cfg)))])
    rec.record_unordered("stream updates", app.stream({"log": []}, rec.thread()))


@scenario
def scenario_subgraph_update_state(rt: Runtime, rec: Recorder) -> None:
    """update_state on a child namespace while its interrupt is pending; resume sees it."""
    child = _child(rt, rec, ask=True)
    g = rt.StateGraph(ParentState)
    g.add_node("sub", child)
    g.add_edge(rt.START, "sub")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    app.invoke({"log": []}, cfg)
    child_cfg = app.get_state(cfg).tasks[0].state
    app.update_state(child_cfg, {"log": ["patched"]})
    rec.record("child state after update", app.get_state(child_cfg))
    rec.record("resume", app.invoke(rt.Command(resume="after patch"), cfg))
