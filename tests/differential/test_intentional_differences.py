"""Where graphruntime differs from LangGraph on purpose ("differences from LangGraph").

Each difference has two tests: one pins what LangGraph 1.2.22 does (so the note stays true
if the oracle is upgraded) and one states what graphruntime does instead. The differential
scenarios record only the part both runtimes agree on.
"""

from __future__ import annotations

import operator
from collections import Counter
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import pytest

from .runtimes import Runtime, load_runtime

UNKNOWN_ID = "0123456789abcdef0123456789abcdef"


class AskState(TypedDict, total=False):
    items: Annotated[list[Any], operator.add]


@dataclass
class Thread:
    """A graph with one interrupting node, its saver, a thread config and run counts."""

    rt: Runtime
    app: Any
    cfg: dict[str, Any]
    runs: Counter[str]

    def observe(self) -> tuple[Any, ...]:
        """Everything that must stay unchanged after a rejected resume."""
        snap = self.app.get_state(self.cfg)
        return (
            snap.values,
            snap.next,
            [(i.value, i.id) for i in snap.interrupts],
            snap.config,
            len(list(self.app.get_state_history(self.cfg))),
            dict(self.runs),
        )


def _thread(prefix: str, *, parallel: bool = False) -> Thread:
    rt = load_runtime(prefix)
    runs: Counter[str] = Counter()

    def make(name: str) -> Any:
        def node(state: AskState) -> dict[str, Any]:
            runs[name] += 1
            return {"items": [rt.interrupt(f"{name}?")]}

        return node

    g = rt.StateGraph(AskState)
    for name in ("left", "right") if parallel else ("ask",):
        g.add_node(name, make(name))
        g.add_edge(rt.START, name)
    app = g.compile(checkpointer=rt.InMemorySaver())
    return Thread(rt, app, {"configurable": {"thread_id": "t1"}}, runs)


def _interrupted(prefix: str, *, parallel: bool = False) -> Thread:
    t = _thread(prefix, parallel=parallel)
    t.app.invoke({"items": []}, t.cfg)
    return t


def _finished(prefix: str) -> Thread:
    t = _interrupted(prefix)
    t.app.invoke(t.rt.Command(resume="answer"), t.cfg)
    return t


# (a) resume map key that matches no pending interrupt -------------------------------------


def test_langgraph_ignores_unknown_resume_map_key() -> None:
    """LangGraph: the unknown key is silently ignored; the node re-runs and re-interrupts."""
    t = _interrupted("langgraph")
    first_id = t.app.get_state(t.cfg).interrupts[0].id
    out = t.app.invoke(t.rt.Command(resume={UNKNOWN_ID: "x"}), t.cfg)
    assert [i.id for i in out["__interrupt__"]] == [first_id]
    assert t.runs["ask"] == 2


def test_unknown_resume_map_key_is_rejected() -> None:
    """graphruntime: InvalidResumeError, and the thread (state, next, interrupts) is unchanged."""
    t = _interrupted("graphruntime")
    before = t.observe()
    with pytest.raises(t.rt.errors.InvalidResumeError):
        t.app.invoke(t.rt.Command(resume={UNKNOWN_ID: "x"}), t.cfg)
    assert t.observe() == before


def test_resume_map_with_one_unknown_key_is_rejected_whole() -> None:
    """graphruntime: a map mixing a valid and an unknown id is rejected; nothing is resumed.

    (LangGraph resumes the valid one and ignores the other.)
    """
    t = _interrupted("graphruntime", parallel=True)
    before = t.observe()
    valid = t.app.get_state(t.cfg).interrupts[0].id
    with pytest.raises(t.rt.errors.InvalidResumeError):
        t.app.invoke(t.rt.Command(resume={valid: "ok", UNKNOWN_ID: "x"}), t.cfg)
    assert t.observe() == before


def test_langgraph_empty_resume_map_reruns_the_node() -> None:
    """LangGraph: Command(resume={}) is an (empty) resume map: the node runs again and
    interrupts again with the same id."""
    t = _interrupted("langgraph")
    first_id = t.app.get_state(t.cfg).interrupts[0].id
    out = t.app.invoke(t.rt.Command(resume={}), t.cfg)
    assert [i.id for i in out["__interrupt__"]] == [first_id]
    assert t.runs["ask"] == 2


def test_empty_resume_map_is_rejected() -> None:
    """graphruntime: a resume map that names no interrupt is an InvalidResumeError."""
    t = _interrupted("graphruntime")
    before = t.observe()
    with pytest.raises(t.rt.errors.InvalidResumeError):
        t.app.invoke(t.rt.Command(resume={}), t.cfg)
    assert t.observe() == before


# (b) resume with no pending interrupt -------------------------------------------------------


def test_langgraph_resume_without_pending_interrupt_is_a_no_op() -> None:
    """LangGraph: a plain resume on a finished thread stores a null resume write, runs
    nothing, creates no checkpoint and returns the current state."""
    t = _finished("langgraph")
    history = len(list(t.app.get_state_history(t.cfg)))
    out = t.app.invoke(t.rt.Command(resume="again"), t.cfg)
    assert out == {"items": ["answer"]}
    assert t.runs["ask"] == 2
    assert len(list(t.app.get_state_history(t.cfg))) == history


def test_resume_without_pending_interrupt_is_rejected() -> None:
    """graphruntime: InvalidResumeError on a thread that has checkpoints but no interrupt."""
    t = _finished("graphruntime")
    before = t.observe()
    with pytest.raises(t.rt.errors.InvalidResumeError):
        t.app.invoke(t.rt.Command(resume="again"), t.cfg)
    assert t.observe() == before


def test_langgraph_resume_on_unknown_thread_starts_a_fresh_run() -> None:
    """LangGraph: Command(resume=...) on an unknown thread_id silently runs the graph from
    START with empty state and interrupts again (with a new id)."""
    t = _thread("langgraph")
    out = t.app.invoke(t.rt.Command(resume="lost"), t.cfg)
    assert [i.value for i in out["__interrupt__"]] == ["ask?"]
    assert t.runs["ask"] == 1
    assert len(list(t.app.get_state_history(t.cfg))) > 0


def test_resume_on_unknown_thread_is_rejected() -> None:
    """graphruntime: InvalidResumeError; no checkpoint is created and no node runs."""
    t = _thread("graphruntime")
    with pytest.raises(t.rt.errors.InvalidResumeError):
        t.app.invoke(t.rt.Command(resume="lost"), t.cfg)
    assert t.runs["ask"] == 0
    assert list(t.app.get_state_history(t.cfg)) == []
    assert t.app.get_state(t.cfg).values == {}


# (c) empty Command as input -----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["Command()", "Command(resume=None)"])
@pytest.mark.parametrize("state", ["fresh", "interrupted"])
def test_langgraph_empty_command_crashes(kind: str, state: str) -> None:
    """LangGraph 1.2.22: UnboundLocalError ('resume_is_map'), an upstream bug; the intended
    error is EmptyInputError("Received empty Command input")."""
    t = _thread("langgraph") if state == "fresh" else _interrupted("langgraph")
    command = t.rt.Command() if kind == "Command()" else t.rt.Command(resume=None)
    with pytest.raises(UnboundLocalError):
        t.app.invoke(command, t.cfg)


@pytest.mark.parametrize("kind", ["Command()", "Command(resume=None)"])
@pytest.mark.parametrize("state", ["fresh", "interrupted"])
def test_empty_command_is_empty_input(kind: str, state: str) -> None:
    """graphruntime: EmptyInputError, and the thread is unchanged."""
    t = _thread("graphruntime") if state == "fresh" else _interrupted("graphruntime")
    before = t.observe()
    command = t.rt.Command() if kind == "Command()" else t.rt.Command(resume=None)
    with pytest.raises(t.rt.errors.EmptyInputError):
        t.app.invoke(command, t.cfg)
    assert t.observe() == before


# (d) one root exception ---------------------------------------------------------------------


def test_langgraph_errors_have_no_common_root() -> None:
    """LangGraph: no root exception; e.g. InvalidUpdateError and GraphRecursionError share
    only Exception (GraphRecursionError is a RecursionError)."""
    errors = load_runtime("langgraph").errors
    shared = set(errors.InvalidUpdateError.__mro__) & set(errors.GraphRecursionError.__mro__)
    assert shared == {Exception, BaseException, object}
    assert issubclass(errors.GraphRecursionError, RecursionError)


def test_every_graphruntime_error_derives_from_graph_runtime_error() -> None:
    """graphruntime: every exception class in graphruntime.errors is a GraphRuntimeError."""
    errors = load_runtime("graphruntime").errors
    classes = {
        name: obj
        for name in dir(errors)
        if isinstance(obj := getattr(errors, name), type) and issubclass(obj, BaseException)
    }
    assert "GraphRuntimeError" in classes
    assert len(classes) > 1
    strays = [n for n, cls in classes.items() if not issubclass(cls, errors.GraphRuntimeError)]
    assert not strays, f"not derived from GraphRuntimeError: {strays}"
