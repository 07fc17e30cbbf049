"""The demo workflow: review a batch of documents in parallel, then ask a human.

Registered with the workers as ``approvals=examples.approval_graphs:approval_graph``.
"""

from __future__ import annotations

import operator
import os
from typing import Annotated, Any, TypedDict

from graphruntime.graph import END, START, StateGraph
from graphruntime.types import Send, interrupt


class Review(TypedDict):
    doc: str
    score: int
    worker_pid: int


class ApprovalState(TypedDict, total=False):
    docs: list[str]
    reviews: Annotated[list[Review], operator.add]
    decision: str


def split(state: ApprovalState) -> list[Send]:
    """One task per document: the workers run them in parallel."""
    return [Send("review", {"doc": doc}) for doc in state["docs"]]


def review(task: dict[str, Any]) -> dict[str, Any]:
    doc: str = task["doc"]
    score = sum(map(ord, doc)) % 10  # stands in for real work (a model call, a lookup, ...)
    return {"reviews": [{"doc": doc, "score": score, "worker_pid": os.getpid()}]}


def approve(state: ApprovalState) -> dict[str, Any]:
    reviews = state.get("reviews", [])
    answer = interrupt(
        {
            "question": "Publish this batch?",
            "average_score": sum(r["score"] for r in reviews) / max(len(reviews), 1),
            "documents": len(reviews),
        }
    )
    return {"decision": "published" if answer == "yes" else "rejected"}


builder = StateGraph(ApprovalState)
builder.add_node("review", review)
builder.add_node("approve", approve)
builder.add_conditional_edges(START, split)
builder.add_edge("review", "approve")
builder.add_edge("approve", END)
approval_graph = builder.compile()
