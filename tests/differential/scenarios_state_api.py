"""Scenarios: get_state, get_state_history, update_state, time travel, Command input."""

from __future__ import annotations

import itertools
import operator
from typing import Annotated, Any, TypedDict

from .observe import Recorder
from .registry import scenario
from .runtimes import Runtime


class ApiState(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    note: str


def _node(rec: Recorder, name: str) -> Any:
    def node(state: ApiState) -> dict[str, Any]:
        rec.count(name)
        return {"items": [name]}

    return node


def _chain(rt: Runtime, rec: Recorder, names: str, *, saver: bool = True, **compile_kw: Any) -> Any:
    g = rt.StateGraph(ApiState)
    for name in names:
        g.add_node(name, _node(rec, name))
    g.add_edge(rt.START, names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    return g.compile(checkpointer=rt.InMemorySaver() if saver else None, **compile_kw)


def _brief(snap: Any) -> tuple[Any, ...]:
    """The parts of a snapshot most scenarios care about."""
    md = snap.metadata or {}
    return (snap.values, snap.next, md.get("source"), md.get("step"))


@scenario
def scenario_get_state_snapshots(rt: Runtime, rec: Recorder) -> None:
    """get_state on an unknown thread, after each run, and by checkpoint_id; history shape."""
    app = _chain(rt, rec, "ab")
    cfg = rec.thread()
    rec.record("unknown thread", app.get_state(cfg))
    rec.record("unknown thread history", list(app.get_state_history(cfg)))
    app.invoke({"items": ["in"]}, cfg)
    rec.record("after run", app.get_state(cfg))
    history = list(app.get_state_history(cfg))
    rec.record("history", history)
    rec.record("by checkpoint_id", app.get_state(history[2].config))
    links = [h.parent_config == o.config for h, o in itertools.pairwise(history)]
    rec.record("parent links", links)


@scenario
def scenario_history_limit_before_filter(rt: Runtime, rec: Recorder) -> None:
    """get_state_history(limit=, before=, filter=) selects checkpoints newest first."""
    app = _chain(rt, rec, "abc")
    cfg = rec.thread()
    app.invoke({"items": []}, cfg)
    app.invoke({"items": ["again"]}, cfg)
    full = list(app.get_state_history(cfg))
    rec.record("full", [_brief(h) for h in full])
    rec.record("limit 2", [_brief(h) for h in app.get_state_history(cfg, limit=2)])
    before = full[3].config
    rec.record("before #3", [_brief(h) for h in app.get_state_history(cfg, before=before)])
    rec.record(
        "before #3 limit 1", [_brief(h) for h in app.get_state_history(cfg, before=before, limit=1)]
    )
    rec.record(
        "filter input", [_brief(h) for h in app.get_state_history(cfg, filter={"source": "input"})]
    )
    rec.record("filter step 2", [_brief(h) for h in app.get_state_history(cfg, filter={"step": 2})])
    rec.record("filter none match", list(app.get_state_history(cfg, filter={"source": "nope"})))


@scenario
def scenario_record_view_vs_live_view(rt: Runtime, rec: Recorder) -> None:
    """Latest get_state shows pending interrupts only; by checkpoint_id shows all of the step."""

    def ask(name: str) -> Any:
        def node(state: ApiState) -> dict[str, Any]:
            rec.count(name)
            return {"items": [f"{name}:{rt.interrupt(name)}"]}

        return node

    g = rt.StateGraph(ApiState)
    g.add_node("p", ask("p"))
    g.add_node("q", ask("q"))
    g.add_edge(rt.START, "p")
    g.add_edge(rt.START, "q")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    app.invoke({"items": []}, cfg)
    live = app.get_state(cfg)
    ids = {i.value: i.id for i in live.interrupts}
    app.invoke(rt.Command(resume={ids["p"]: "P"}), cfg)
    rec.record("live view", app.get_state(cfg))
    rec.record("record view", app.get_state(live.config))


@scenario
def scenario_update_state_as_node(rt: Runtime, rec: Recorder) -> None:
    """update_state runs as_node's writers: reducers apply, its edges fire, source='update'."""
    app = _chain(rt, rec, "abc", interrupt_before=["b"])
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"items": []}, cfg))
    rec.record("update (as_node inferred = a)", app.update_state(cfg, {"items": ["u"]}))
    rec.record("after inferred", _brief(app.get_state(cfg)))
    app.update_state(cfg, {"items": ["v"], "note": "as b"}, as_node="b")
    rec.record("after as b", _brief(app.get_state(cfg)))
    with rec.expect_error("unknown as_node"):
        app.update_state(cfg, {"items": ["w"]}, as_node="zz")
    rec.record("resume runs c only", app.invoke(None, cfg))
    rec.record("history sources", [h.metadata["source"] for h in app.get_state_history(cfg)])
    rec.record_counts()


@scenario
def scenario_update_state_special_nodes(rt: Runtime, rec: Recorder) -> None:
    """update_state on a fresh thread acts as input; as_node=END clears; ambiguity is an error."""
    app = _chain(rt, rec, "ab", interrupt_before=["b"])
    cfg = rec.thread()
    app.update_state(cfg, {"items": ["fresh"]})
    rec.record("fresh thread update", _brief(app.get_state(cfg)))
    rec.record("invoke(None)", app.invoke(None, cfg))
    app.update_state(cfg, None, as_node=rt.END)
    rec.record("as END clears next", _brief(app.get_state(cfg)))
    rec.record("invoke(None) does nothing", app.invoke(None, cfg))

    g = rt.StateGraph(ApiState)
    for name in "xyz":
        g.add_node(name, _node(rec, name))
    g.add_edge(rt.START, "x")
    g.add_edge(rt.START, "y")
    g.add_edge("y", "z")
    app2 = g.compile(checkpointer=rt.InMemorySaver(), interrupt_before=["z"])
    cfg2 = rec.thread()
    app2.invoke({"items": []}, cfg2)
    with rec.expect_error("ambiguous as_node"):
        app2.update_state(cfg2, {"items": ["w"]})
    app2.update_state(cfg2, {"items": ["as x"]}, as_node="x")
    rec.record("as x", _brief(app2.get_state(cfg2)))


@scenario
def scenario_update_state_during_interrupt(rt: Runtime, rec: Recorder) -> None:
    """update_state while interrupted hides the interrupt and changes ids; resume still works."""

    def ask(state: ApiState) -> dict[str, Any]:
        rec.count("ask")
        rec.record("ask sees", state.get("note"))
        return {"items": [f"ask:{rt.interrupt('ok?')}"]}

    g = rt.StateGraph(ApiState)
    g.add_node("first", _node(rec, "first"))
    g.add_node("ask", ask)
    g.add_edge(rt.START, "first")
    g.add_edge("first", "ask")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    first = app.invoke({"items": []}, cfg)
    rec.record("invoke", first)
    before = app.get_state(cfg)
    app.update_state(cfg, {"note": "patched"})
    after = app.get_state(cfg)
    rec.record("after update", after)
    rec.record("task id changed", before.tasks[0].id != after.tasks[0].id)
    rec.record("resume", app.invoke(rt.Command(resume="yes"), cfg))


@scenario
def scenario_time_travel_replay(rt: Runtime, rec: Recorder) -> None:
    """invoke(None, old checkpoint config) forks and re-executes the later nodes."""
    app = _chain(rt, rec, "abc")
    cfg = rec.thread()
    app.invoke({"items": []}, cfg)
    history = list(app.get_state_history(cfg))
    after_a = next(h for h in history if h.next == ("b",))
    rec.record("replay from after a", app.invoke(None, after_a.config))
    rec.record_counts("counts after replay")
    new_history = list(app.get_state_history(cfg))
    rec.record("history", [_brief(h) for h in new_history])
    rec.record("fork parent is the old checkpoint", new_history[2].parent_config == after_a.config)
    rec.record(
        "stream replay from the input checkpoint",
        list(app.stream(None, history[-1].config, stream_mode="updates")),
    )


@scenario
def scenario_time_travel_update_fork(rt: Runtime, rec: Recorder) -> None:
    """update_state on an old checkpoint creates a branch that becomes the thread head."""
    app = _chain(rt, rec, "abc")
    cfg = rec.thread()
    app.invoke({"items": []}, cfg)
    history = list(app.get_state_history(cfg))
    after_a = next(h for h in history if h.next == ("b",))
    branch = app.update_state(after_a.config, {"items": ["edited"]}, as_node="a")
    rec.record("branch config", branch)
    rec.record("head is the branch", _brief(app.get_state(cfg)))
    rec.record("run the branch", app.invoke(None, cfg))
    rec.record("history", [_brief(h) for h in app.get_state_history(cfg)])


@scenario
def scenario_update_only_command_input(rt: Runtime, rec: Recorder) -> None:
    """Command(update=...) on a finished thread makes no checkpoint; it stays a pending write."""
    app = _chain(rt, rec, "a")
    cfg = rec.thread()
    app.invoke({"items": []}, cfg)
    length = len(list(app.get_state_history(cfg)))
    rec.record("invoke Command(update)", app.invoke(rt.Command(update={"note": "n1"}), cfg))
    rec.record("state shows the update", _brief(app.get_state(cfg)))
    rec.record("no new checkpoint", len(list(app.get_state_history(cfg))) - length)
    rec.record("next input keeps it", app.invoke({"items": ["x"]}, cfg))


@scenario
def scenario_empty_input(rt: Runtime, rec: Recorder) -> None:
    """invoke(None) on a new thread → EmptyInputError; on a finished thread it is a no-op."""
    app = _chain(rt, rec, "ab")
    cfg = rec.thread()
    with rec.expect_error("invoke(None) new thread"):
        app.invoke(None, cfg)
    rec.record("state untouched", app.get_state(cfg))
    with rec.expect_error("stream(None) new thread"):
        list(app.stream(None, rec.thread()))
    app.invoke({}, cfg)
    rec.record("invoke(None) finished thread", app.invoke(None, cfg))
    rec.record("history length", len(list(app.get_state_history(cfg))))
    with rec.expect_error("invoke(None) without checkpointer"):
        _chain(rt, rec, "a", saver=False).invoke(None)
