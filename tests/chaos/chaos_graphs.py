"""The chaos workload's graph: every node adds its own name to an ``operator.add`` list.

The final state is the ledger: each thread's ``items`` must hold every node's entry
exactly once, whatever faults hit the run (a missing entry is a lost write, a repeated
one a write applied twice). Nodes sleep a little, so faults land while nodes run.
"""

from __future__ import annotations

import operator
import random
import time
from typing import Annotated, Any, TypedDict

from graphruntime.graph import END, START, StateGraph
from graphruntime.types import Send, interrupt


class ChaosState(TypedDict, total=False):
    n: int
    items: Annotated[list[str], operator.add]
    decision: str


def _pause() -> None:
    time.sleep(random.uniform(0.0, 0.05))


def plan(state: ChaosState) -> dict[str, Any]:
    _pause()
    return {"items": ["plan"]}


def fan_out(state: ChaosState) -> list[Send]:
    return [Send("work", {"i": i}) for i in range(state["n"])]


def work(arg: dict[str, Any]) -> dict[str, Any]:
    _pause()
    return {"items": [f"w{arg['i']}"]}


def join(state: ChaosState) -> dict[str, Any]:
    _pause()
    return {"items": ["join"]}


def ask(state: ChaosState) -> dict[str, Any]:
    answer = interrupt({"question": "ship it?", "items": len(state["items"])})
    return {"decision": str(answer), "items": [f"ask:{answer}"]}


def finish(state: ChaosState) -> dict[str, Any]:
    _pause()
    return {"items": ["finish"]}


builder = StateGraph(ChaosState)
builder.add_node("plan", plan)
builder.add_node("work", work)
builder.add_node("join", join)
builder.add_node("ask", ask)
builder.add_node("finish", finish)
builder.add_edge(START, "plan")
builder.add_conditional_edges("plan", fan_out, ["work"])
builder.add_edge("work", "join")
builder.add_edge("join", "ask")
builder.add_edge("ask", "finish")
builder.add_edge("finish", END)
chaos_graph = builder.compile()

GRAPHS = "chaos=tests.chaos.chaos_graphs:chaos_graph"


def expected_items(n: int, answer: str = "yes") -> list[str]:
    return ["plan", *(f"w{i}" for i in range(n)), "join", f"ask:{answer}", "finish"]
