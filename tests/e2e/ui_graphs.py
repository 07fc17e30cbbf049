"""The graphs the web inbox's e2e and browser tests pause (registered with the e2e workers)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

from graphruntime.graph import END, START, StateGraph
from graphruntime.types import Command, Send, interrupt
from tests.unit.workers.test_decisions import hitl, per_call_type


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


class Approval(TypedDict, total=False):
    llm_output: str
    decision: str


def _approval(declared: bool) -> Any:
    """LangGraph's docs' approve/reject graph: the answer is compared with "approve".
    ``declared``: the interrupt says its answers (a response schema of the two words)."""

    def human_approval(state: Approval) -> Command[Literal["approved", "rejected"]]:
        ask = {
            "question": "Do you approve the following output?",
            "llm_output": state["llm_output"],
        }
        if declared:
            choice = interrupt(ask, response_schema=Literal["approve", "reject"])
        else:
            choice = interrupt(ask)
        return Command(goto="approved" if choice == "approve" else "rejected")

    g = StateGraph(Approval)
    g.add_node("human_approval", human_approval)
    g.add_node("approved", lambda s: {"decision": "approved"})
    g.add_node("rejected", lambda s: {"decision": "rejected"})
    g.add_edge(START, "human_approval")
    g.add_edge("approved", END)
    g.add_edge("rejected", END)
    return g.compile()


docs_approval_graph = _approval(declared=False)
declared_approval_graph = _approval(declared=True)


class Agent(TypedDict, total=False):
    calls: list[dict[str, Any]]
    per_call: bool
    executed: Annotated[list[Any], operator.add]


def _run(call: dict[str, Any], decision: dict[str, Any]) -> list[Any]:
    """What a tool call becomes under a decision: run as asked, run as edited, or not."""
    if decision["type"] == "approve":
        return [call["name"], call["args"]]
    if decision["type"] == "edit":
        return [decision["edited_action"]["name"], decision["edited_action"]["args"]]
    return [call["name"], decision["type"], decision.get("message")]


def agent_review(state: Agent) -> dict[str, Any]:
    """Gates its tool calls as LangChain's HumanInTheLoopMiddleware does in batched mode:
    one HITLRequest, answered by position."""
    calls = state["calls"]
    request = hitl(*[(c["name"], c["args"], c["allowed"]) for c in calls])
    decisions = interrupt(request)["decisions"]
    return {"executed": [_run(c, d) for c, d in zip(calls, decisions, strict=True)]}


def tool_call(task: dict[str, Any]) -> dict[str, Any]:
    """One gated call in per-call mode (its own task, as ToolNode runs each call): a
    ToolApprovalRequest with its decision schema, answered by interrupt id."""
    call = task["call"]
    value = {
        "type": "tool_approval",
        "tool_call_id": f"call-{task['index']}",
        "name": call["name"],
        "args": call["args"],
        "description": f"Run {call['name']}?",
    }
    decision = interrupt(value, response_schema=per_call_type(call["allowed"], call["name"]))
    return {"executed": [_run(call, dict(decision))]}


def _route(state: Agent) -> Any:
    if state.get("per_call"):
        return [Send("tool_call", {"call": c, "index": i}) for i, c in enumerate(state["calls"])]
    return "agent_review"


agent = StateGraph(Agent)
agent.add_node("agent_review", agent_review)
agent.add_node("tool_call", tool_call)
agent.add_conditional_edges(START, _route, ["agent_review", "tool_call"])
agent_graph = agent.compile()

GRAPHS = ",".join(
    [
        "review=tests.e2e.ui_graphs:review_graph",
        "docs_approval=tests.e2e.ui_graphs:docs_approval_graph",
        "declared_approval=tests.e2e.ui_graphs:declared_approval_graph",
        "hitl_agent=tests.e2e.ui_graphs:agent_graph",
    ]
)
