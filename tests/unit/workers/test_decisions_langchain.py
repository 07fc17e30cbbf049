"""The decisions module against LangChain's own HumanInTheLoopMiddleware (create_agent
through graphruntime's alias, in a process of its own): its interrupts read as reviews
with the decisions it allows, and the answers made from decisions are what it accepts."""

from __future__ import annotations

import pytest

from tests.unit.compat.test_alias import _AGENT, _ok

pytest.importorskip("langchain.agents", reason="langchain is a dev (oracle) dependency")


def test_a_batched_request_reads_as_a_review_and_an_edit_decision_runs_the_edited_call() -> None:
    out = _ok(
        _AGENT.replace("MODE", '"batched"')
        + """
    from workers.decisions import Decision, Review, answer, read_request
    paused = agent.invoke({"messages": [("user", "mail a")]}, config)
    [pending] = paused["__interrupt__"]
    review = read_request(pending.value, pending.response_schema)
    assert isinstance(review, Review) and review.format == "hitl", review
    [action] = review.actions
    assert (action.name, action.args) == ("send_email", {"to": "a@x", "body": "hi"})
    assert action.allowed == ("approve", "edit", "reject", "respond"), action.allowed
    value = answer(review, Decision("edit", args={"to": "b@x", "body": "hi"}))
    agent.invoke(Command(resume=value), config)
    assert sent == [("b@x", "hi")], sent
    print("ok")
    """
    )
    assert out.strip() == "ok"


def test_a_per_call_request_reads_its_decisions_from_the_response_schema() -> None:
    out = _ok(
        _AGENT.replace("MODE", '"per_call"').replace(
            'HumanInTheLoopMiddleware({"send_email": True}',
            'HumanInTheLoopMiddleware({"send_email": '
            + '{"allowed_decisions": ["approve", "respond"]}}',
        )
        + """
    from workers.decisions import Decision, DecisionError, Review, answer, read_request
    paused = agent.invoke({"messages": [("user", "mail a")]}, config)
    [pending] = paused["__interrupt__"]
    review = read_request(pending.value, pending.response_schema)
    assert isinstance(review, Review) and review.format == "tool_approval", review
    assert review.actions[0].allowed == ("approve", "respond"), review.actions[0].allowed
    try:
        answer(review, "reject")
    except DecisionError as exc:
        assert "it allows approve, respond" in str(exc), exc
    else:
        raise AssertionError("reject was not refused")
    value = answer(review, Decision("respond", message="Already sent."))
    done = agent.invoke(Command(resume={pending.id: value}), config)
    assert sent == [], sent  # answered on the tool's behalf: it did not run
    [tool_message] = [m for m in done["messages"] if isinstance(m, ToolMessage)]
    assert tool_message.content == "Already sent.", tool_message.content
    print("ok")
    """
    )
    assert out.strip() == "ok"
