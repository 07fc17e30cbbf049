"""A LangChain agent built by LangChain's own code (``create_agent``, which imports
``langgraph``), served by the workers through the langgraph alias
(``GRAPHRUNTIME_ALIAS_LANGGRAPH=1``; conftest.py's ``ALIASED_GRAPHS``).

``create_agent`` with ``HumanInTheLoopMiddleware`` (batched): every ``send_email`` call
waits for a decision. The tool records each call it runs in Redis (across processes),
under the body it was given. Any process that imports this module must have the alias
on before anything imports langchain (the workers do, and agent_client.py).
"""

from __future__ import annotations

import json
import os

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.tools import tool

from tests.e2e.stream_graphs import AgentModel


def sent_key(body: str) -> str:
    return f"e2e:agent:sent:{body}"


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    from tests.e2e.fault_graphs import redis_for

    redis_for(os.environ["REDIS_URL"]).rpush(sent_key(body), json.dumps({"to": to, "body": body}))
    return f"sent to {to}"


agent = create_agent(
    AgentModel(),
    [send_email],
    middleware=[HumanInTheLoopMiddleware({"send_email": True}, interrupt_mode="batched")],
)
