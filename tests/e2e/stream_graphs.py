"""Graphs whose nodes stream chat model tokens, for the workers' ``stream_mode="messages"``.

:class:`GatedModel` is a fake chat model that streams its reply word by word, the same
reply in every process (it is chosen from the conversation, not from a per-process
iterator), and can stop mid-reply until the test opens a gate in Redis: a client that
sees its first tokens while it waits got them before its node ended. The agent of
tests/e2e/agent_graphs.py uses it too.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Sequence
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from graphruntime.graph import START, StateGraph
from graphruntime.graph.message import add_messages

GATE_TIMEOUT = 60
"""Seconds a gated model waits for its gate before it goes on (and says so)."""

GATE_AFTER = 3
"""Tokens a gated model streams before it waits at its gate."""

STREAM_TIMEOUT = 120.0

_GATE = re.compile(r"\[gate:([\w.-]+)\]")


def _redis() -> Any:
    from tests.e2e.fault_graphs import redis_for

    return redis_for(os.environ["REDIS_URL"])


def gate_result_key(gate: str) -> str:
    """Where a gated model records how it passed its gate: "opened" or "timed out"."""
    return f"e2e:gate:{gate}:passed"


def open_gate(redis: Any, gate: str) -> None:
    redis.rpush(f"e2e:gate:{gate}", "open")


def stream_opening_gates(
    client: Any, redis: Any, graph: str, input: Any, config: Any, gates: dict[str, str]
) -> Iterator[tuple[Any, dict[str, Any], bool]]:
    """``client.stream(..., stream_mode="messages")``, opening the gate of a node (``gates``:
    node -> gate) once GATE_AFTER of its tokens were read; each chunk with whether its
    node's gate was still shut when it arrived."""
    seen: dict[str, int] = {}
    for message, metadata in client.stream(
        graph, input, config, stream_mode="messages", timeout=STREAM_TIMEOUT
    ):
        node = metadata["langgraph_node"]
        shut = node in gates and seen.get(node, 0) < GATE_AFTER
        yield message, metadata, shut
        seen[node] = seen.get(node, 0) + 1
        if node in gates and seen[node] == GATE_AFTER:
            open_gate(redis, gates[node])


def _wait_at_gate(gate: str) -> None:
    redis = _redis()
    opened = None
    for _ in range(GATE_TIMEOUT):  # short waits: the connection's socket timeout is shorter
        opened = redis.blpop([f"e2e:gate:{gate}"], timeout=1)
        if opened:
            break
    redis.rpush(gate_result_key(gate), "opened" if opened else "timed out")


def _gate_of(messages: Sequence[BaseMessage]) -> str | None:
    """The gate the conversation names last."""
    for message in reversed(messages):
        found = _GATE.search(str(message.content))
        if found:
            return found.group(1)
    return None


class GatedModel(GenericFakeChatModel):
    """Replies with ``reply(messages)``, streamed word by word; a tool call goes in the
    last chunk. In a conversation naming ``[gate:<name>]`` its first reply waits at that
    gate after :data:`GATE_AFTER` tokens."""

    messages: Any = None

    def bind_tools(self, tools: Any, **kwargs: Any) -> GatedModel:
        return self

    def reply(self, messages: Sequence[BaseMessage]) -> AIMessage:
        return AIMessage("the quick brown fox jumps over the lazy dog")

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        return ChatResult(generations=[ChatGeneration(message=self.reply(messages))])

    def _stream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Iterator[ChatGenerationChunk]:
        reply = self.reply(messages)
        gate = None if any(isinstance(m, AIMessage) for m in messages) else _gate_of(messages)
        words = re.split(r"(\s)", str(reply.content))
        for i, word in enumerate(words):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=word, id=reply.id))
            if run_manager:
                run_manager.on_llm_new_token(word, chunk=chunk)
            yield chunk
            if gate is not None and i + 1 == GATE_AFTER:
                _wait_at_gate(gate)
        if reply.tool_calls:
            calls = [
                tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
                for i, c in enumerate(reply.tool_calls)
            ]
            chunk = ChatGenerationChunk(
                message=AIMessageChunk(content="", id=reply.id, tool_call_chunks=calls)
            )
            if run_manager:
                run_manager.on_llm_new_token("", chunk=chunk)
            yield chunk


class AgentModel(GatedModel):
    """Asks to email the report (the body names the conversation's gate), then, once a
    tool answered, says what the tool said."""

    def reply(self, messages: Sequence[BaseMessage]) -> AIMessage:
        tools = [m for m in messages if isinstance(m, ToolMessage)]
        if tools:
            return AIMessage(f"Done: {tools[-1].content}", id="reply-2")
        call = {
            "name": "send_email",
            "args": {"to": "a@x.io", "body": f"the report {_gate_of(messages)}"},
            "id": "call-1",
        }
        return AIMessage("I will email the report now.", tool_calls=[call], id="reply-1")


class TalkState(TypedDict, total=False):
    messages: Annotated[list[BaseMessage], add_messages]


def _talker(name: str) -> Any:
    def node(state: TalkState) -> dict[str, Any]:
        gate = _gate_of(state["messages"])
        model = GatedModel()
        return {"messages": [model.invoke([*state["messages"], ("user", f"[gate:{gate}-{name}]")])]}

    return node


# two nodes of one step: each runs as a task job, and streams as it runs
talk = StateGraph(TalkState)
talk.add_node("left", _talker("left"))
talk.add_node("right", _talker("right"))
talk.add_edge(START, "left")
talk.add_edge(START, "right")
talk_graph = talk.compile()

GRAPHS = "talk=tests.e2e.stream_graphs:talk_graph"
