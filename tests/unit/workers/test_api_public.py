"""workers.api's public names, pinned."""

from __future__ import annotations

import uuid

import workers.api


def test_public_names() -> None:
    assert set(workers.api.__all__) == {
        "API_MIGRATIONS",
        "ApiContext",
        "api_context",
        "check_bind",
        "create_app",
        "serve",
        "system_assistant_id",
    }


def test_system_assistant_ids_are_langgraphs() -> None:
    namespace = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
    assert workers.api.system_assistant_id("agent") == str(uuid.uuid5(namespace, "agent"))
    # the id langgraph dev gave the graph "approval" (read from its /assistants/search)
    assert workers.api.system_assistant_id("approval") == "e234584d-b7bf-527f-9d06-ba77f8f5172d"
