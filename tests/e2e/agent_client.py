"""The client side of test_agent_stream.py's agent test, in a process of its own.

A client's registry imports the graphs it is asked about, so a process that runs the
agent of agent_graphs.py needs the langgraph alias before anything imports langchain;
the e2e test process cannot have it (other tests there use the real LangGraph). Run
with the cluster's environment (``GRAPHRUNTIME_ALIAS_LANGGRAPH=1`` among it), as
``python -m tests.e2e.agent_client THREAD GATE EDITED_TO``: it streams the agent's run
(opening the model's gate once it read its first tokens), reads the inbox, approves the
wait with an edit through ``resume_many``, waits for the run's end, and prints what it
saw as one JSON object for the test to check.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from tests.e2e.fault_graphs import redis_for
from tests.e2e.stream_graphs import STREAM_TIMEOUT, stream_opening_gates
from workers.client import GraphClient
from workers.decisions import Decision

GRAPH = "lc_agent"


def run(thread_id: str, gate: str, edited_to: str) -> dict[str, Any]:
    client = GraphClient.from_env()  # the registry turns the alias on (the environment's)
    redis = redis_for(os.environ["REDIS_URL"])
    config: Any = {"configurable": {"thread_id": thread_id}}
    chunks = [
        {
            "type": type(message).__name__,
            "content": message.content,
            "node": metadata["langgraph_node"],
            "shut": shut,
            "tool_call_chunks": [dict(c) for c in getattr(message, "tool_call_chunks", [])],
        }
        for message, metadata, shut in stream_opening_gates(
            client,
            redis,
            GRAPH,
            {"messages": [("user", f"Mail the report [gate:{gate}]")]},
            config,
            {"model": gate},
        )
    ]
    body = f"the report {gate}"
    waits = client.inbox(GRAPH, action="send_email", args={"body": body}).items
    outcomes = client.resume_many(
        GRAPH,
        items=[(w.thread_id, w.interrupt_id) for w in waits],
        decision=Decision("edit", args={"to": edited_to, "body": body}),
        idempotency_key=f"edit-{thread_id}",
        actor="alice",
    )
    give_up = time.monotonic() + STREAM_TIMEOUT
    history = client.resume_history(GRAPH, config)
    while (not history or history[0].status != "success") and time.monotonic() < give_up:
        time.sleep(0.1)
        history = client.resume_history(GRAPH, config)
    messages = client.get_state(GRAPH, config).values["messages"]
    return {
        "chunks": chunks,
        "waits": [{"thread_id": w.thread_id, "value": w.value} for w in waits],
        "outcomes": [o.outcome for o in outcomes],
        "resumed": history[0].status if history else None,
        "last_message": messages[-1].content,
        "left_waiting": len(client.inbox(GRAPH, thread=thread_id).items),
    }


if __name__ == "__main__":
    print(json.dumps(run(*sys.argv[1:4])))
