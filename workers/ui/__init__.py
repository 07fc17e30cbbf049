"""``graphrun ui``: a small web inbox where approvers answer pending interrupts.

It lists the waits (filters by graph, node, value, age, thread and action; deadlines;
claims; bulk select; keyboard), and answers each only as it says it may be answered
(:mod:`workers.decisions`): a LangChain HITL request or an Agent Inbox request with
exactly its allowed decisions, a wait with declared choices with those choices, any
other wait with a JSON answer under its question. Every answer goes through
:meth:`GraphClient.resume_many`, idempotent per form and audited with its approver's
identity and route ``ui``. Needs the ``ui`` extra.
"""

from __future__ import annotations

from workers.ui._app import create_app
from workers.ui._guard import check_bind
from workers.ui._identity import Auth, read_tokens
from workers.ui._server import serve

__all__ = ("Auth", "check_bind", "create_app", "read_tokens", "serve")
