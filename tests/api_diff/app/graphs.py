"""Graphs the API differential suite serves, with LangGraph (``langgraph dev``) or with
graphruntime (``graphrun serve``): the same code under either import prefix, picked by
``GRAPH_RUNTIME`` (set in each langgraph.json's env)."""

from __future__ import annotations

import operator
import os
import time
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

if TYPE_CHECKING or os.environ.get("GRAPH_RUNTIME") != "langgraph":
    from graphruntime.config import get_stream_writer
    from graphruntime.graph import END, START, StateGraph
    from graphruntime.types import interrupt
else:
    from langgraph.config import get_stream_writer
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt


class State(TypedDict, total=False):
    topic: str
    steps: Annotated[list[str], operator.add]
    answer: str


def plan(state: State) -> State:
    return {"steps": ["plan"]}


def review(state: State) -> State:
    answer = interrupt({"question": "Publish?", "topic": state.get("topic", "")})
    return {"steps": ["review"], "answer": answer}


def publish(state: State) -> State:
    get_stream_writer()({"published": state.get("answer")})
    return {"steps": ["publish"]}


def _approval() -> Any:
    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("review", review)
    builder.add_node("publish", publish)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "review")
    builder.add_edge("review", "publish")
    builder.add_edge("publish", END)
    return builder


approval = _approval().compile()


def _chain() -> Any:
    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("publish", publish)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "publish")
    builder.add_edge("publish", END)
    return builder


chain = _chain().compile()


def explode(state: State) -> State:
    raise ValueError(f"cannot handle {state.get('topic')!r}")


def _failing() -> Any:
    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("explode", explode)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "explode")
    builder.add_edge("explode", END)
    return builder


failing = _failing().compile()


def nap(state: State) -> State:
    time.sleep(float(state.get("topic") or 0))
    return {"steps": ["nap"]}


def _slow() -> Any:
    builder = StateGraph(State)
    builder.add_node("nap", nap)
    builder.add_edge(START, "nap")
    builder.add_edge("nap", END)
    return builder


slow = _slow().compile()

# for the end-to-end cluster (tests/e2e/conftest.py): the same names as langgraph.json
GRAPHS = ",".join(
    f"api_{name}=tests.api_diff.app.graphs:{name}"
    for name in ("approval", "chain", "failing", "slow", "chat", "hitl")
)


def _chat() -> Any:
    """A chat graph as Agent Chat UI drives it: messages in, a model's reply streamed."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    if TYPE_CHECKING or os.environ.get("GRAPH_RUNTIME") != "langgraph":
        from graphruntime.graph import MessagesState
    else:
        from langgraph.graph import MessagesState

    def reply(state: MessagesState) -> dict[str, Any]:
        model = GenericFakeChatModel(messages=iter([AIMessage(content="hello there friend")]))
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder


chat = _chat().compile()


def _hitl() -> Any:
    """A chat that asks a human before it answers, in LangChain's HITL-middleware format
    (what Agent Chat UI and Agent Inbox render with Approve / Reject). A message that
    says "slow" makes the node take 3 s first (to stop or reload it mid-run)."""
    from langchain_core.messages import AIMessage

    if TYPE_CHECKING or os.environ.get("GRAPH_RUNTIME") != "langgraph":
        from graphruntime.graph import MessagesState
    else:
        from langgraph.graph import MessagesState

    def ask(state: MessagesState) -> dict[str, Any]:
        content = state["messages"][-1].content
        text = (
            content
            if isinstance(content, str)
            else " ".join(part.get("text", "") for part in content if isinstance(part, dict))
        )
        if "slow" in text:
            time.sleep(3)
        answer = interrupt(
            {
                "action_requests": [
                    {
                        "name": "send_reply",
                        "args": {"to": "customer"},
                        "description": f"Reply to: {text}",
                    }
                ],
                "review_configs": [
                    {"action_name": "send_reply", "allowed_decisions": ["approve", "reject"]}
                ],
            }
        )
        # Agent Chat UI answers {"decisions": [...]}, Agent Inbox its own [{"type", "args"}]
        first = answer["decisions"][0] if isinstance(answer, dict) else answer[0]
        return {"messages": [AIMessage(content=f"human said {first['type']}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder


hitl = _hitl().compile()
