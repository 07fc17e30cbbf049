"""Scenarios: dynamic interrupts, resume values and maps, static breakpoints."""

from __future__ import annotations

import contextlib
import operator
from typing import Annotated, Any, TypedDict

from .observe import Recorder
from .registry import scenario
from .runtimes import Runtime


class AskState(TypedDict, total=False):
    answers: Annotated[list[Any], operator.add]
    note: str


def _ask_node(rt: Runtime, rec: Recorder, name: str, question: Any = None) -> Any:
    def node(state: AskState) -> dict[str, Any]:
        rec.count(name)
        answer = rt.interrupt(question if question is not None else f"{name}?")
        rec.count(f"{name} resumed")
        return {"answers": [f"{name}={answer!r}"]}

    return node


def _plain_node(rec: Recorder, name: str) -> Any:
    def node(state: AskState) -> dict[str, Any]:
        rec.count(name)
        return {"answers": [name]}

    return node


def _interrupt_ids(snapshot: Any) -> list[str]:
    return [i.id for i in snapshot.interrupts]


@scenario
def scenario_interrupt_basic(rt: Runtime, rec: Recorder) -> None:
    """interrupt() stops the run (invoke returns __interrupt__); resume re-runs the node."""
    g = rt.StateGraph(AskState)
    g.add_node("before", _plain_node(rec, "before"))
    g.add_node("ask", _ask_node(rt, rec, "ask", {"question": "name?", "choices": [1, 2]}))
    g.add_node("after", _plain_node(rec, "after"))
    g.add_edge(rt.START, "before")
    g.add_edge("before", "ask")
    g.add_edge("ask", "after")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    out = app.invoke({"answers": []}, cfg)
    rec.record("invoke", out)
    rec.record("interrupt type", type(out["__interrupt__"][0]).__name__)
    rec.record("state while interrupted", app.get_state(cfg))
    rec.record("resume", app.invoke(rt.Command(resume="Ada"), cfg))
    rec.record("state after resume", app.get_state(cfg))
    history = list(app.get_state_history(cfg))
    rec.record("history length", len(history))
    rec.record("interrupted step in history", history[2])


@scenario
def scenario_interrupt_several_in_one_node(rt: Runtime, rec: Recorder) -> None:
    """Several interrupt() calls in one node are answered by position; each resume re-runs it."""

    def form(state: AskState) -> dict[str, Any]:
        rec.count("form")
        name = rt.interrupt("name?")
        rec.count("form got name")
        age = rt.interrupt(f"age of {name}?")
        rec.count("form got age")
        ok = rt.interrupt({"confirm": [name, age]})
        return {"answers": [name, age, ok]}

    g = rt.StateGraph(AskState)
    g.add_node("form", form)
    g.add_edge(rt.START, "form")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("first", app.invoke({"answers": []}, cfg))
    rec.record("resume 1", app.invoke(rt.Command(resume="Ada"), cfg))
    rec.record("state after 1", app.get_state(cfg))
    rec.record("resume 2", app.invoke(rt.Command(resume=36), cfg))
    rec.record("resume 3", app.invoke(rt.Command(resume=True), cfg))
    rec.record("final state", app.get_state(cfg))
    rec.record("last step tasks in history", list(app.get_state_history(cfg))[1].tasks)


@scenario
def scenario_interrupt_parallel_resume_map(rt: Runtime, rec: Recorder) -> None:
    """Parallel interrupts need a resume map; answering one re-runs and re-interrupts the other."""
    g = rt.StateGraph(AskState)
    g.add_node("left", _ask_node(rt, rec, "left"))
    g.add_node("right", _ask_node(rt, rec, "right"))
    g.add_node("join", _plain_node(rec, "join"))
    g.add_edge(rt.START, "left")
    g.add_edge(rt.START, "right")
    g.add_edge(["left", "right"], "join")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"answers": []}, cfg))
    snap = app.get_state(cfg)
    rec.record("state", snap)
    by_value = {i.value: i.id for i in snap.interrupts}
    with rec.expect_error("plain resume with two pending"):
        app.invoke(rt.Command(resume="both?"), cfg)
    rec.record("nothing ran", dict(rec.counts))
    rec.record("answer left only", app.invoke(rt.Command(resume={by_value["left?"]: "L"}), cfg))
    snap = app.get_state(cfg)
    rec.record("state after left", snap)
    rec.record("right id unchanged", _interrupt_ids(snap) == [by_value["right?"]])
    rec.record("answer right", app.invoke(rt.Command(resume={by_value["right?"]: "R"}), cfg))
    rec.record("final next", app.get_state(cfg).next)


@scenario
def scenario_interrupt_resume_map_all_at_once(rt: Runtime, rec: Recorder) -> None:
    """One resume map answering every pending interrupt (Send fan-out, same node name)."""

    def fan(state: AskState) -> list[Any]:
        return [rt.Send("review", {"item": i}) for i in ("x", "y", "z")]

    def review(arg: dict[str, Any]) -> dict[str, Any]:
        rec.count("review")
        verdict = rt.interrupt({"review": arg["item"]})
        return {"answers": [f"{arg['item']}:{verdict}"]}

    g = rt.StateGraph(AskState)
    g.add_node("review", review)
    g.add_conditional_edges(rt.START, fan)
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"answers": []}, cfg))
    snap = app.get_state(cfg)
    rec.record("next", snap.next)
    rec.record("tasks", snap.tasks)
    resume = {i.id: f"ok-{i.value['review']}" for i in snap.interrupts}
    rec.record("resume all", app.invoke(rt.Command(resume=resume), cfg))
    rec.record("final", app.get_state(cfg).next)


@scenario
def scenario_interrupt_in_router(rt: Runtime, rec: Recorder) -> None:
    """interrupt() inside a conditional-edge function belongs to the source node's task."""

    def pick(state: AskState) -> str:
        rec.count("pick router")
        return str(rt.interrupt("which way?"))

    g = rt.StateGraph(AskState)
    g.add_node("source", _plain_node(rec, "source"))
    g.add_node("left", _plain_node(rec, "left"))
    g.add_node("right", _plain_node(rec, "right"))
    g.add_edge(rt.START, "source")
    g.add_conditional_edges("source", pick, ["left", "right"])
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"answers": []}, cfg))
    rec.record("state", app.get_state(cfg))
    rec.record("resume", app.invoke(rt.Command(resume="right"), cfg))


@scenario
def scenario_interrupt_resume_values(rt: Runtime, rec: Recorder) -> None:
    """Falsy resume values are delivered; dicts with non-hex keys are plain values."""
    g = rt.StateGraph(AskState)
    g.add_node("ask", _ask_node(rt, rec, "ask"))
    g.add_edge(rt.START, "ask")
    app = g.compile(checkpointer=rt.InMemorySaver())
    values: tuple[Any, ...] = (0, "", False, [], {"a": 1}, {"ABCDEF0123456789ABCDEF0123456789": 1})
    for value in values:
        cfg = rec.thread()
        app.invoke({"answers": []}, cfg)
        rec.record(f"resume {value!r}", app.invoke(rt.Command(resume=value), cfg))


@scenario
def scenario_interrupt_resume_with_update(rt: Runtime, rec: Recorder) -> None:
    """Command(resume=..., update=...): the update is applied before the node re-runs."""

    def ask(state: AskState) -> dict[str, Any]:
        rec.count("ask")
        rec.record("ask sees note", state.get("note"))
        return {"answers": [rt.interrupt("go?")]}

    g = rt.StateGraph(AskState)
    g.add_node("ask", ask)
    g.add_edge(rt.START, "ask")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    app.invoke({"answers": [], "note": "original"}, cfg)
    rec.record("resume+update", app.invoke(rt.Command(resume="go", update={"note": "new"}), cfg))
    rec.record("history length", len(list(app.get_state_history(cfg))))


@scenario
def scenario_new_input_discards_interrupt(rt: Runtime, rec: Recorder) -> None:
    """New input on an interrupted thread discards the pending interrupt and starts over."""
    g = rt.StateGraph(AskState)
    g.add_node("ask", _ask_node(rt, rec, "ask"))
    g.add_edge(rt.START, "ask")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    first = app.invoke({"answers": ["one"]}, cfg)
    second = app.invoke({"answers": ["two"]}, cfg)
    rec.record("first", first)
    rec.record("second", second)
    rec.record("new interrupt id", first["__interrupt__"][0].id != second["__interrupt__"][0].id)
    rec.record("state", app.get_state(cfg))
    rec.record("resume", app.invoke(rt.Command(resume="x"), cfg))


@scenario
def scenario_interrupt_stream_modes(rt: Runtime, rec: Recorder) -> None:
    """Interrupts in streams: updates yield {'__interrupt__': (...)}; values append the key."""
    g = rt.StateGraph(AskState)
    g.add_node("before", _plain_node(rec, "before"))
    g.add_node("ask", _ask_node(rt, rec, "ask"))
    g.add_edge(rt.START, "before")
    g.add_edge("before", "ask")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("updates", list(app.stream({"answers": []}, cfg)))
    rec.record("updates on resume", list(app.stream(rt.Command(resume=1), cfg)))
    cfg = rec.thread()
    rec.record("values", list(app.stream({"answers": []}, cfg, stream_mode="values")))
    rec.record(
        "values on resume", list(app.stream(rt.Command(resume=2), cfg, stream_mode="values"))
    )
    cfg = rec.thread()
    rec.record(
        "modes list",
        list(app.stream({"answers": []}, cfg, stream_mode=["updates", "values"])),
    )


@scenario
def scenario_interrupt_without_checkpointer(rt: Runtime, rec: Recorder) -> None:
    """Without a checkpointer interrupt() still stops the run; get_state/resume then fail."""
    g = rt.StateGraph(AskState)
    g.add_node("ask", _ask_node(rt, rec, "ask"))
    g.add_edge(rt.START, "ask")
    app = g.compile()
    rec.record("invoke", app.invoke({"answers": []}))
    with rec.expect_error("get_state"):
        app.get_state(rec.thread())
    with rec.expect_error("resume"):
        app.invoke(rt.Command(resume="x"), rec.thread())


@scenario
def scenario_interrupt_before_compile(rt: Runtime, rec: Recorder) -> None:
    """Static interrupt_before: no Interrupt objects, next shows the node, resume with None."""
    g = rt.StateGraph(AskState)
    for name in ("a", "b", "c"):
        g.add_node(name, _plain_node(rec, name))
    g.add_edge(rt.START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    app = g.compile(checkpointer=rt.InMemorySaver(), interrupt_before=["b"])
    cfg = rec.thread()
    rec.record("invoke returns plain state", app.invoke({"answers": []}, cfg))
    rec.record("state", app.get_state(cfg))
    rec.record("resume with None", app.invoke(None, cfg))
    cfg = rec.thread()
    rec.record("stream updates", list(app.stream({"answers": []}, cfg)))
    rec.record("stream values resume", list(app.stream(None, cfg, stream_mode="values")))


@scenario
def scenario_interrupt_after_compile(rt: Runtime, rec: Recorder) -> None:
    """Static interrupt_after: the node's writes are checkpointed first; '*' means every node."""
    g = rt.StateGraph(AskState)
    for name in ("a", "b"):
        g.add_node(name, _plain_node(rec, name))
    g.add_edge(rt.START, "a")
    g.add_edge("a", "b")
    app = g.compile(checkpointer=rt.InMemorySaver(), interrupt_after=["a"])
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"answers": []}, cfg))
    rec.record("state", app.get_state(cfg))
    rec.record("resume", app.invoke(None, cfg))
    star = g.compile(checkpointer=rt.InMemorySaver(), interrupt_after="*")
    cfg = rec.thread()
    rec.record("star 1", star.invoke({"answers": []}, cfg))
    rec.record("star 2", star.invoke(None, cfg))
    rec.record("star 3", star.invoke(None, cfg))
    rec.record("star next", star.get_state(cfg).next)


@scenario
def scenario_interrupt_at_invoke_time(rt: Runtime, rec: Recorder) -> None:
    """interrupt_before/after given to invoke/stream replace the compiled ones."""
    g = rt.StateGraph(AskState)
    for name in ("a", "b", "c"):
        g.add_node(name, _plain_node(rec, name))
    g.add_edge(rt.START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    app = g.compile(checkpointer=rt.InMemorySaver(), interrupt_before=["c"])
    cfg = rec.thread()
    rec.record("before b", app.invoke({"answers": []}, cfg, interrupt_before=["b"]))
    rec.record("next", app.get_state(cfg).next)
    rec.record("resume (compiled before c)", app.invoke(None, cfg))
    rec.record("next 2", app.get_state(cfg).next)
    cfg = rec.thread()
    rec.record(
        "stream after a",
        list(app.stream({"answers": []}, cfg, interrupt_after=["a"], stream_mode="updates")),
    )
    rec.record("next 3", app.get_state(cfg).next)


@scenario
def scenario_breakpoint_then_dynamic(rt: Runtime, rec: Recorder) -> None:
    """A node with interrupt_before and interrupt(): stops at the breakpoint, then dynamically."""
    g = rt.StateGraph(AskState)
    g.add_node("ask", _ask_node(rt, rec, "ask"))
    g.add_edge(rt.START, "ask")
    app = g.compile(checkpointer=rt.InMemorySaver(), interrupt_before=["ask"])
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"answers": []}, cfg))
    rec.record("after breakpoint", app.invoke(None, cfg))
    rec.record("state", app.get_state(cfg))
    rec.record("resume", app.invoke(rt.Command(resume="done"), cfg))


@scenario
def scenario_resume_no_pending_interrupt_agreed(rt: Runtime, rec: Recorder) -> None:
    """Resume on a finished thread: only the parts both runtimes agree on (no node re-runs).

    LangGraph stores the null resume and returns the state; graphruntime raises
    InvalidResumeError (see test_intentional_differences). Both leave values and history alone.
    """
    g = rt.StateGraph(AskState)
    g.add_node("ask", _ask_node(rt, rec, "ask"))
    g.add_edge(rt.START, "ask")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    app.invoke({"answers": []}, cfg)
    app.invoke(rt.Command(resume="first"), cfg)
    before = (app.get_state(cfg).values, len(list(app.get_state_history(cfg))))
    # graphruntime raises InvalidResumeError here on purpose; LangGraph does not
    with contextlib.suppress(Exception):
        app.invoke(rt.Command(resume="again"), cfg)
    after = (app.get_state(cfg).values, len(list(app.get_state_history(cfg))))
    rec.record("values and history unchanged", before == after)
    rec.record("values", after[0])
