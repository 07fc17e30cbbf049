"""``graphrun serve``: the LangGraph Server API (assistants, threads, runs, streams,
store, crons, webhooks) in front of graphruntime's workers.

The server never runs a node: every run is queued for the workers as
:class:`~workers.client.GraphClient` queues it, and streamed from the events the
workers store. It needs no application code either: what needs a graph's code (a
state's next tasks, an edit, a drawing) is asked of a worker serving it. Needs the
``server`` extra.
"""

from __future__ import annotations

from workers._api_schema import API_MIGRATIONS
from workers.api._app import create_app
from workers.api._context import ApiContext, system_assistant_id
from workers.api._guard import check_bind
from workers.api._server import api_context, serve

__all__ = (
    "API_MIGRATIONS",
    "ApiContext",
    "api_context",
    "check_bind",
    "create_app",
    "serve",
    "system_assistant_id",
)
