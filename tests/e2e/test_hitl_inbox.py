"""Approvals as LangChain's HumanInTheLoopMiddleware makes them, on the real cluster.

The agent graph of tests/e2e/ui_graphs.py gates its tool calls with the middleware's
interrupt values (a batched HITLRequest, or per-call ToolApprovalRequests with their
decision schemas) and "runs" what the decisions let through. The waits are found in
the inbox by action, answered with decisions through resume_many, and the graph runs
exactly the edited call; a decision a wait does not allow resumes nothing.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.e2e.fault_graphs import wait_until
from tests.unit.workers.test_decisions import per_call_schema
from workers.client import GraphClient
from workers.decisions import Decision, DecisionError

TIMEOUT = 60.0

EMAIL: dict[str, Any] = {
    "name": "send_email",
    "args": {"to": "ops@x.io"},
    "allowed": ["approve", "edit", "reject"],
}
DELETE: dict[str, Any] = {
    "name": "delete_file",
    "args": {"path": "/tmp/r"},
    "allowed": ["approve", "reject"],
}


def cfg(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


def executed(client: GraphClient, thread_id: str) -> Any:
    state = client.get_state("hitl_agent", cfg(thread_id))
    return None if state.next else state.values.get("executed")


def test_a_batched_request_is_found_by_action_and_approved_with_an_edit(
    client: GraphClient,
) -> None:
    thread_id = f"hitl-{uuid.uuid4().hex[:8]}"
    out = client.invoke("hitl_agent", {"calls": [EMAIL, DELETE]}, cfg(thread_id), timeout=TIMEOUT)
    assert "__interrupt__" in out
    (wait,) = client.inbox("hitl_agent", action="delete_file", thread=thread_id).items
    assert client.inbox("hitl_agent", thread=thread_id, args={"to": "nobody"}).items == []
    with pytest.raises(DecisionError, match="it allows approve, reject"):
        client.resume_many(
            "hitl_agent",
            items=[(thread_id, wait.interrupt_id)],
            decision=[Decision("edit", args={"to": "x"}), Decision("edit", args={"path": "/"})],
            idempotency_key=f"refused-{thread_id}",
        )
    assert client.resume_history("hitl_agent", cfg(thread_id)) == []
    outcomes = client.resume_many(
        "hitl_agent",
        items=[(thread_id, wait.interrupt_id)],
        decision=[Decision("edit", args={"to": "team@x.io"}), "approve"],
        idempotency_key=f"k-{thread_id}",
        actor="alice",
        route="inbox",
    )
    assert [o.outcome for o in outcomes] == ["applied"]
    wait_until(lambda: executed(client, thread_id) is not None, timeout=TIMEOUT, what="the run")
    assert executed(client, thread_id) == [
        ["send_email", {"to": "team@x.io"}],
        ["delete_file", {"path": "/tmp/r"}],
    ]
    # the run ends (its status) once its batch commits, maybe after the checkpoint shows it
    wait_until(
        lambda: client.resume_history("hitl_agent", cfg(thread_id))[0].status == "success",
        timeout=TIMEOUT,
        what="the run's end",
    )
    (record,) = client.resume_history("hitl_agent", cfg(thread_id))
    assert (record.route, record.actor) == ("inbox", "alice")


def test_per_call_requests_carry_their_schema_and_are_answered_per_interrupt(
    client: GraphClient,
) -> None:
    thread_id = f"hitl-{uuid.uuid4().hex[:8]}"
    calls = [EMAIL, DELETE]
    client.invoke("hitl_agent", {"calls": calls, "per_call": True}, cfg(thread_id), timeout=TIMEOUT)
    waits = client.inbox("hitl_agent", thread=thread_id).items
    assert len(waits) == 2
    by_tool = {w.value["name"]: w for w in waits}
    # the coordinator kept each interrupt's response schema with its inbox row
    assert by_tool["delete_file"].response_schema == per_call_schema(
        DELETE["allowed"], "delete_file"
    )
    client.resume_many(
        "hitl_agent",
        items=[(thread_id, by_tool["send_email"].interrupt_id)],
        decision=Decision("edit", args={"to": "team@x.io"}),
        idempotency_key=f"a-{thread_id}",
    )
    # the other wait stays pending; a second resume while the first runs would be a
    # conflict, so it is answered once the thread is paused again
    wait_until(
        lambda: [w.resuming for w in client.inbox("hitl_agent", thread=thread_id).items] == [False],
        timeout=TIMEOUT,
        what="the first resume to end",
    )
    client.resume_many(
        "hitl_agent",
        items=[(thread_id, by_tool["delete_file"].interrupt_id)],
        decision=Decision("reject", message="keep it"),
        idempotency_key=f"b-{thread_id}",
    )
    wait_until(lambda: executed(client, thread_id) is not None, timeout=TIMEOUT, what="the run")
    assert sorted(executed(client, thread_id)) == [
        ["delete_file", "reject", "keep it"],
        ["send_email", {"to": "team@x.io"}],
    ]
