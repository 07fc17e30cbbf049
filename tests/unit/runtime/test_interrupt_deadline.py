"""interrupt(deadline=, default=) in-process: stored with the interrupt and shown in the
state, applied by nothing (the workers' sweepers apply it); refused when half given."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

import pytest

from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.graph import END, START, StateGraph
from graphruntime.types import Command, interrupt


class State(TypedDict, total=False):
    answer: str


def graph(**wait: Any) -> Any:
    def ask(state: State) -> State:
        return {"answer": interrupt({"question": "ship?"}, **wait)}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=InMemorySaver())


def test_the_deadline_and_default_are_in_the_state_and_nothing_applies_them() -> None:
    app = graph(deadline=timedelta(hours=1), default="auto-approved")
    cfg: RunnableConfig = {"configurable": {"thread_id": "t"}}
    before = datetime.now(UTC)
    app.invoke({}, cfg)
    (wait,) = app.get_state(cfg).interrupts
    assert wait.deadline is not None
    assert before + timedelta(hours=1) <= wait.deadline <= datetime.now(UTC) + timedelta(hours=1)
    assert wait.default == "auto-approved"
    assert app.get_state(cfg).next == ("ask",)  # still waiting: in-process nothing resumes it
    assert app.invoke(Command(resume="by hand"), cfg) == {"answer": "by hand"}


def test_an_absolute_deadline_is_kept_in_utc() -> None:
    at = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    app = graph(deadline=at, default="no")
    cfg: RunnableConfig = {"configurable": {"thread_id": "t"}}
    app.invoke({}, cfg)
    (wait,) = app.get_state(cfg).interrupts
    assert wait.deadline == at


def test_without_the_keywords_an_interrupt_has_no_deadline() -> None:
    app = graph()
    cfg: RunnableConfig = {"configurable": {"thread_id": "t"}}
    app.invoke({}, cfg)
    (wait,) = app.get_state(cfg).interrupts
    assert wait.deadline is None
    assert wait.default is None


@pytest.mark.parametrize(
    ("wait", "message"),
    [
        ({"deadline": timedelta(minutes=5)}, "needs default="),
        ({"default": "yes"}, "needs deadline="),
        ({"deadline": datetime(2030, 1, 1), "default": "yes"}, "not a naive one"),
    ],
)
def test_half_a_deadline_is_refused_with_what_is_missing(
    wait: dict[str, Any], message: str
) -> None:
    app = graph(**wait)
    with pytest.raises(ValueError, match=message):
        app.invoke({}, {"configurable": {"thread_id": "t"}})
