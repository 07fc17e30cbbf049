"""``graphrun ui``: a small web inbox where approvers answer pending interrupts.

It lists the waits (filters, deadlines, bulk select), shows each value (a LangGraph
Agent Inbox request with exactly its allowed actions, anything else as JSON with
approve / reject / custom JSON), and a thread's resume history. Every answer goes
through :meth:`GraphClient.resume_many`, idempotent per form and audited with its
actor. Needs the ``ui`` extra.
"""

from __future__ import annotations

from workers.ui._agent_inbox import HumanRequest, human_response, parse_request
from workers.ui._app import create_app
from workers.ui._guard import check_bind
from workers.ui._server import serve

__all__ = ("HumanRequest", "check_bind", "create_app", "human_response", "parse_request", "serve")
