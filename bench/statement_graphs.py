"""Graphs for ``bench/statement_count.py``: a chain and a fan-out with a join.

Importable on its own (``statement_graphs``, with ``bench/`` on ``PYTHONPATH``) so that
the same module can be registered with the workers of another checkout.
"""

from __future__ import annotations

import itertools
import operator
from typing import Annotated, Any, TypedDict

from graphruntime.graph import END, START, StateGraph
from graphruntime.types import Send

GRAPHS = ",".join(
    [
        "stmt_chain10=statement_graphs:chain10",
        "stmt_chain1=statement_graphs:chain1",
        "stmt_fanout=statement_graphs:fanout",
        "approvals=examples.approval_graphs:approval_graph",
    ]
)


class ChainState(TypedDict):
    x: int


def _chain(length: int) -> Any:
    """``length`` single-task steps: each node adds 1 to ``x``."""
    builder = StateGraph(ChainState)

    def step(state: ChainState) -> dict[str, Any]:
        return {"x": state["x"] + 1}

    names = [f"n{i}" for i in range(length)]
    for name in names:
        builder.add_node(name, step)
    builder.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        builder.add_edge(a, b)
    builder.add_edge(names[-1], END)
    return builder.compile()


class FanOutState(TypedDict, total=False):
    n: int
    count: Annotated[int, operator.add]
    joined: int


def _dispatch(state: FanOutState) -> list[Send]:
    return [Send("work", {"i": i}) for i in range(state["n"])]


def _work(arg: dict[str, int]) -> dict[str, Any]:
    return {"count": 1}


def _join(state: FanOutState) -> dict[str, Any]:
    return {"joined": state.get("count", 0)}


def _fanout() -> Any:
    """START sends ``n`` tasks to ``work`` (one distributed step), then ``join`` runs once."""
    builder = StateGraph(FanOutState)
    builder.add_node("work", _work)
    builder.add_node("join", _join)
    builder.add_conditional_edges(START, _dispatch, ["work"])
    builder.add_edge("work", "join")
    builder.add_edge("join", END)
    return builder.compile()


chain10 = _chain(10)
chain1 = _chain(1)
fanout = _fanout()
