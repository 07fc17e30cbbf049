"""A LangChain agent as a graph module a worker registers (``GRAPHRUNTIME_GRAPHS``).

Written as LangChain's users write it: it imports ``langchain`` and ``langgraph`` only.
Imported by tests/unit/compat/test_alias.py in a process where the alias is on.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    return f"sent to {to}"


class _Model(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> _Model:
        return self


_call = {"name": "send_email", "args": {"to": "a@x", "body": "hi"}, "id": "c1"}
agent = create_agent(
    _Model(messages=iter([AIMessage("", tool_calls=[_call]), AIMessage("done")])),
    [send_email],
    middleware=[HumanInTheLoopMiddleware({"send_email": True})],
    checkpointer=InMemorySaver(),
)
