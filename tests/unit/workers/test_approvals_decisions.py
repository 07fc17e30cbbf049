"""LangChain's HITL approvals through the inbox and resume_many; claims; audit routes.

On an in-memory cluster; tests/integration/workers/test_approvals_decisions_pg.py runs
them on Postgres. The graphs pause as LangChain's HumanInTheLoopMiddleware does (the
same interrupt values and response schemas, built without langchain) and record the
answer they get.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

import pytest

from graphruntime.graph import START, StateGraph
from graphruntime.pregel import Pregel
from graphruntime.types import interrupt
from tests.unit.workers.test_decisions import hitl, per_call_schema, per_call_type, tool_approval
from workers.approvals import ROUTES
from workers.decisions import Decision, DecisionError
from workers.errors import WaitNotPendingError
from workers.testing import InlineCluster

MakeCluster = Callable[..., InlineCluster]


@pytest.fixture
def make_cluster() -> MakeCluster:
    return InlineCluster


class Agent(TypedDict, total=False):
    calls: list[dict[str, Any]]
    per_call: bool
    answer: Any
    answers: list[Any]


def agent() -> Pregel:
    """Pauses on its input's tool calls: one batched HITLRequest, or (``per_call``) one
    ToolApprovalRequest per call, each with its decision schema, in parallel tasks."""

    def review(state: Agent) -> dict[str, Any]:
        calls = state["calls"]
        if not state.get("per_call"):
            request = hitl(*[(c["name"], c["args"], c["allowed"]) for c in calls])
            return {"answer": interrupt(request)}
        answers = [
            interrupt(
                tool_approval(c["args"]) | {"name": c["name"], "tool_call_id": f"call-{i}"},
                response_schema=per_call_type(c["allowed"], c["name"]),
            )
            for i, c in enumerate(calls)
        ]
        return {"answers": answers}

    g = StateGraph(Agent)
    g.add_node("review", review)
    g.add_edge(START, "review")
    return g.compile()


def cfg(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


EMAIL: dict[str, Any] = {
    "name": "send_email",
    "args": {"to": "ops@x.io", "retries": 1},
    "allowed": ["approve", "edit", "reject"],
}
DELETE: dict[str, Any] = {
    "name": "delete_file",
    "args": {"path": "/tmp/r"},
    "allowed": ["approve", "reject"],
}


def test_the_inbox_row_carries_the_response_schema_the_interrupt_gave(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster({"agent": agent()})
    cluster.run("agent", {"calls": [EMAIL], "per_call": True}, cfg("t1"))
    (wait,) = cluster.client.inbox("agent").items
    assert wait.response_schema == per_call_schema(EMAIL["allowed"], "send_email")


def test_the_inbox_filters_approval_requests_by_action_and_args(make_cluster: MakeCluster) -> None:
    cluster = make_cluster({"agent": agent()})
    cluster.run("agent", {"calls": [EMAIL, DELETE]}, cfg("batched"))
    cluster.run("agent", {"calls": [DELETE], "per_call": True}, cfg("per-call"))
    cluster.run("agent", {"calls": [{**EMAIL, "args": {"to": "sales@x.io"}}]}, cfg("sales"))

    def threads(**kw: Any) -> list[str]:
        return [w.thread_id for w in cluster.client.inbox("agent", **kw).items]

    assert threads(action="delete_file") == ["batched", "per-call"]
    assert threads(action="send_email") == ["batched", "sales"]
    assert threads(action="send_email", args={"to": "ops@x.io"}) == ["batched"]
    assert threads(args={"path": "/tmp/r"}) == ["batched", "per-call"]
    assert threads(action="delete_file", args={"to": "ops@x.io"}) == []
    assert threads(thread="sales") == ["sales"]
    assert threads(thread="sal") == []  # the whole id


def test_resume_many_approves_batched_requests_by_position(make_cluster: MakeCluster) -> None:
    cluster = make_cluster({"agent": agent()})
    cluster.run("agent", {"calls": [EMAIL, DELETE]}, cfg("a"))
    cluster.run("agent", {"calls": [DELETE]}, cfg("b"))
    outcomes = cluster.client.resume_many(
        "agent", where={}, decision="approve", idempotency_key="k1", actor="alice"
    )
    assert sorted((o.thread_id, o.outcome) for o in outcomes) == [
        ("a", "applied"),
        ("b", "applied"),
    ]
    cluster.deliver()
    a = cluster.client.get_state("agent", cfg("a")).values["answer"]
    assert a == {"decisions": [{"type": "approve"}, {"type": "approve"}]}
    (record,) = cluster.client.resume_history("agent", cfg("a"))
    assert (record.route, record.actor) == ("client", "alice")


def test_resume_many_edits_one_action_with_a_decision_per_position(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster({"agent": agent()})
    cluster.run("agent", {"calls": [EMAIL, DELETE]}, cfg("a"))
    (wait,) = cluster.client.inbox("agent").items
    decisions: list[Any] = [
        {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "team@x.io"}}},
        {"type": "reject", "message": "keep it"},
    ]
    cluster.client.resume_many(
        "agent", items=[("a", wait.interrupt_id)], decision=decisions, idempotency_key="k"
    )
    cluster.deliver()
    assert cluster.client.get_state("agent", cfg("a")).values["answer"] == {"decisions": decisions}


def test_a_decision_one_selected_wait_does_not_allow_resumes_none(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster({"agent": agent()})
    cluster.run("agent", {"calls": [EMAIL]}, cfg("email"))
    cluster.run("agent", {"calls": [DELETE]}, cfg("delete"))
    sent = len(cluster.broker.sent)
    with pytest.raises(DecisionError, match="1 of the 2 selected waits refuse") as info:
        cluster.client.resume_many(
            "agent",
            where={},
            decision=Decision("edit", args={"to": "x"}),
            idempotency_key="k",
        )
    assert "thread 'delete'" in str(info.value)
    assert "does not allow 'edit': it allows approve, reject" in str(info.value)
    assert len(cluster.broker.sent) == sent
    assert len(cluster.client.inbox("agent").items) == 2
    assert cluster.client.resume_history("agent", cfg("email")) == []


def test_per_call_requests_are_answered_per_interrupt_id(make_cluster: MakeCluster) -> None:
    cluster = make_cluster({"agent": agent()})
    email = {**EMAIL, "allowed": ["approve", "edit", "reject", "respond"]}
    cluster.run("agent", {"calls": [email], "per_call": True}, cfg("t"))
    cluster.client.resume_many(
        "agent",
        where={},
        action="send_email",
        decision=Decision("edit", args={"to": "team@x.io", "retries": 2}),
        idempotency_key="k",
        route="inbox",
    )
    cluster.deliver()
    (answer,) = cluster.client.get_state("agent", cfg("t")).values["answers"]
    assert answer == {
        "type": "edit",
        "edited_action": {"name": "send_email", "args": {"to": "team@x.io", "retries": 2}},
    }
    (record,) = cluster.client.resume_history("agent", cfg("t"))
    assert record.route == "inbox"


def test_resume_many_takes_a_value_or_a_decision_and_a_known_route(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster({"agent": agent()})
    cluster.run("agent", {"calls": [EMAIL]}, cfg("t"))
    with pytest.raises(ValueError, match="not both"):
        cluster.client.resume_many(
            "agent", where={}, value=1, decision="approve", idempotency_key="k"
        )
    with pytest.raises(ValueError, match="route must be one of ui, inbox, cli"):
        cluster.client.resume_many(
            "agent",
            where={},
            value=1,
            idempotency_key="k",
            route="web",  # type: ignore[arg-type]
        )
    with pytest.raises(ValueError, match="route must be one of"):
        cluster.client.submit("agent", {"calls": []}, cfg("u"), route="x")  # type: ignore[arg-type]
    assert ROUTES == ("ui", "inbox", "cli", "queue", "client", "deadline", "api")


def test_a_claim_is_seen_by_everyone_renewed_by_its_holder_and_lapses(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster({"agent": agent()})
    cluster.run("agent", {"calls": [EMAIL]}, cfg("t"))
    (wait,) = cluster.client.inbox("agent").items
    client = cluster.client
    claim = client.claim_wait("agent", "t", wait.interrupt_id, actor="alice", minutes=10)
    assert (claim.holder, claim.taken) == ("alice", True)
    (seen,) = client.inbox("agent").items
    assert (seen.claimed_by, seen.claimed_until) == ("alice", claim.until)
    bob = client.claim_wait("agent", "t", wait.interrupt_id, actor="bob", minutes=10)
    assert (bob.holder, bob.taken) == ("alice", False)
    assert client.claim_wait("agent", "t", wait.interrupt_id, actor="alice", minutes=10).taken
    taken = client.claim_wait(
        "agent", "t", wait.interrupt_id, actor="bob", minutes=10, take_over=True
    )
    assert (taken.holder, taken.taken) == ("bob", True)
    assert not client.release_wait("agent", "t", wait.interrupt_id, actor="alice")
    assert client.release_wait("agent", "t", wait.interrupt_id, actor="bob")
    assert client.inbox("agent").items[0].claimed_by is None
    with pytest.raises(WaitNotPendingError, match="no pending wait 'nope'"):
        client.claim_wait("agent", "t", "nope", actor="alice")
    with pytest.raises(ValueError, match="at most 1440 minutes"):
        client.claim_wait("agent", "t", wait.interrupt_id, actor="alice", minutes=0)


def test_a_lapsed_claim_is_not_shown_and_is_free_to_take(make_cluster: MakeCluster) -> None:
    cluster = make_cluster({"agent": agent()})
    cluster.run("agent", {"calls": [EMAIL]}, cfg("t"))
    (wait,) = cluster.client.inbox("agent").items
    cluster.client.claim_wait("agent", "t", wait.interrupt_id, actor="alice", minutes=0.001)
    cluster.clock.advance(1)
    _lapse(cluster)
    assert cluster.client.inbox("agent").items[0].claimed_by is None
    bob = cluster.client.claim_wait("agent", "t", wait.interrupt_id, actor="bob")
    assert (bob.holder, bob.taken) == ("bob", True)


class Pair(TypedDict, total=False):
    a: Any
    b: Any


def pair() -> Pregel:
    """Two nodes that ask at once: two waits of one thread."""
    g = StateGraph(Pair)
    g.add_node("a", lambda s: {"a": interrupt({"ask": "a"})})
    g.add_node("b", lambda s: {"b": interrupt({"ask": "b"})})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    return g.compile()


def test_a_wait_still_pending_after_its_thread_moves_on_keeps_its_claim(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster({"pair": pair()})
    cluster.run("pair", {}, cfg("t"))
    waits = {w.value["ask"]: w for w in cluster.client.inbox("pair").items}
    a, b = waits["a"], waits["b"]
    claim = cluster.client.claim_wait("pair", "t", a.interrupt_id, actor="alice", minutes=10)
    cluster.client.resume_many(
        "pair", items=[("t", b.interrupt_id)], value="yes", idempotency_key="k"
    )
    cluster.deliver()
    assert cluster.client.get_state("pair", cfg("t")).values.get("b") == "yes"
    (left,) = cluster.client.inbox("pair").items
    assert (left.interrupt_id, left.created_at) == (a.interrupt_id, a.created_at)
    assert (left.claimed_by, left.claimed_until) == ("alice", claim.until)


def _lapse(cluster: InlineCluster) -> None:
    """Let 0.06 s of the store's clock pass (Postgres' own clock: a real pause)."""
    import time

    time.sleep(0.1)
