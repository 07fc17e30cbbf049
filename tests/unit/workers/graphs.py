"""Small graphs for the workers' unit tests, each with a record of what its nodes ran."""

from __future__ import annotations

import itertools
import operator
from collections import Counter
from datetime import timedelta
from typing import Annotated, Any, TypedDict

from graphruntime.graph import END, START, StateGraph
from graphruntime.pregel import Pregel
from graphruntime.types import RetryPolicy, Send, interrupt


class Calls:
    """How many times each node body ran (the test's ledger)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def hit(self, name: str) -> None:
        self.counts[name] += 1


class Log(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    items: list[str]
    decision: str


def chain(calls: Calls, n: int = 3) -> Pregel:
    g = StateGraph(Log)
    names = [f"n{i}" for i in range(n)]
    for name in names:

        def node(state: Log, name: str = name) -> dict[str, Any]:
            calls.hit(name)
            return {"log": [name]}

        g.add_node(name, node)
    g.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    return g.compile()


def fan(calls: Calls) -> Pregel:
    """A Send per item, then a join that records the order it saw."""

    def split(state: Log) -> list[Send]:
        return [Send("work", {"item": item}) for item in state["items"]]

    def work(task: dict[str, Any]) -> dict[str, Any]:
        calls.hit(f"work:{task['item']}")
        if task["item"] == "bad":
            raise ValueError(f"bad item {task['item']!r}")
        return {"log": [task["item"]]}

    def join(state: Log) -> dict[str, Any]:
        calls.hit("join")
        return {"decision": ",".join(sorted(state["log"]))}

    g = StateGraph(Log)
    g.add_node("work", work)
    g.add_node("join", join)
    g.add_conditional_edges(START, split)
    g.add_edge("work", "join")
    g.add_edge("join", END)
    return g.compile()


def parallel_questions(calls: Calls) -> Pregel:
    """Two tasks of one step that both interrupt, then a node after them."""

    def split(state: Log) -> list[Send]:
        return [Send("ask", {"item": item}) for item in state["items"]]

    def ask(task: dict[str, Any]) -> dict[str, Any]:
        calls.hit(f"ask:{task['item']}")
        answer = interrupt({"question": task["item"]})
        return {"log": [f"{task['item']}={answer}"]}

    g = StateGraph(Log)
    g.add_node("ask", ask)
    g.add_conditional_edges(START, split)
    g.add_edge("ask", END)
    return g.compile()


def approval(calls: Calls) -> Pregel:
    """A fan-out review, then a human decision."""

    def split(state: Log) -> list[Send]:
        return [Send("review", {"item": item}) for item in state["items"]]

    def review(task: dict[str, Any]) -> dict[str, Any]:
        calls.hit(f"review:{task['item']}")
        return {"log": [task["item"]]}

    def approve(state: Log) -> dict[str, Any]:
        calls.hit("approve")
        return {"decision": interrupt({"reviews": len(state["log"])})}

    g = StateGraph(Log)
    g.add_node("review", review)
    g.add_node("approve", approve)
    g.add_conditional_edges(START, split)
    g.add_edge("review", "approve")
    g.add_edge("approve", END)
    return g.compile()


def flaky(calls: Calls, failures: int) -> Pregel:
    """One node that fails ``failures`` times with a retried error, then succeeds."""

    def node(state: Log) -> dict[str, Any]:
        calls.hit("flaky")
        if calls.counts["flaky"] <= failures:
            raise ConnectionError(f"attempt {calls.counts['flaky']}")
        return {"log": ["ok"]}

    g = StateGraph(Log)
    g.add_node(
        "flaky",
        node,
        retry_policy=RetryPolicy(max_attempts=5, initial_interval=1.0, jitter=False),
    )
    g.add_edge(START, "flaky")
    return g.compile()


def failing(calls: Calls) -> Pregel:
    def boom(state: Log) -> dict[str, Any]:
        calls.hit("boom")
        raise KeyError("missing")

    g = StateGraph(Log)
    g.add_node("boom", boom)
    g.add_edge(START, "boom")
    return g.compile()


def ticket(calls: Calls, deadline: timedelta | None = None) -> Pregel:
    """One question per thread, about a team's ticket; optionally with a deadline."""

    def ask(state: Log) -> dict[str, Any]:
        team = state["items"][0]
        calls.hit(f"ask:{team}")
        question = {"team": team, "ticket": state["items"][1]}
        if deadline is None:
            answer = interrupt(question)
        else:
            answer = interrupt(question, deadline=deadline, default="auto-approved")
        return {"decision": str(answer)}

    g = StateGraph(Log)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    return g.compile()
