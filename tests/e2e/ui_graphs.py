"""The graph the web inbox's browser test pauses (registered with the e2e workers)."""

from __future__ import annotations

from typing import Any, TypedDict

from graphruntime.graph import START, StateGraph
from graphruntime.types import interrupt


class ReviewState(TypedDict, total=False):
    ask: Any
    answer: Any


def review_node(state: ReviewState) -> dict[str, Any]:
    """Waits with the input's ``ask`` as the interrupt value; keeps the answer as it came."""
    return {"answer": interrupt(state["ask"])}


review = StateGraph(ReviewState)
review.add_node("review", review_node)
review.add_edge(START, "review")
review_graph = review.compile()

GRAPHS = "review=tests.e2e.ui_graphs:review_graph"
