"""`graphrun inbox list/resume` and `graphrun resume` with HITL filters and decisions, on an
in-memory cluster (the CLI's client replaced by the cluster's)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.unit.workers.test_approvals_decisions import DELETE, EMAIL, agent, cfg
from workers.testing import InlineCluster


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> InlineCluster:
    from workers.client import GraphClient

    c = InlineCluster({"agent": agent()})
    monkeypatch.setattr(GraphClient, "from_env", classmethod(lambda cls, s=None, **_: c.client))
    monkeypatch.setattr(c.client, "close", lambda: None)
    # the in-memory cluster has no services to reach first
    monkeypatch.setattr("workers.cli._output.reach_services", lambda **_: None)
    return c


def cli(*args: str) -> Any:
    from workers.cli import app

    return CliRunner().invoke(app, list(args))


def said(result: Any) -> str:
    """What the command printed, with the console's line wrapping undone."""
    return " ".join(result.output.split())


def test_inbox_list_filters_by_thread_action_and_args(cluster: InlineCluster) -> None:
    cluster.run("agent", {"calls": [EMAIL, DELETE]}, cfg("a"))
    cluster.run("agent", {"calls": [DELETE]}, cfg("b"))
    result = cli("inbox", "list", "--action", "send_email", "--json")
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["thread_id"] for line in result.stdout.splitlines()] == ["a"]
    result = cli("inbox", "list", "--args", '{"path": "/tmp/r"}', "--thread", "b", "--json")
    assert [json.loads(line)["thread_id"] for line in result.stdout.splitlines()] == ["b"]
    assert cli("inbox", "list", "--args", "[1]").exit_code == 2


def test_inbox_resume_takes_a_decision_and_records_route_inbox(cluster: InlineCluster) -> None:
    cluster.run("agent", {"calls": [EMAIL, DELETE]}, cfg("a"))
    result = cli(
        "inbox", "resume", "--graph", "agent", "--where", "{}", "--key", "k",
        "--decision", "approve", "--decision", '{"type": "reject", "message": "no"}',
        "--actor", "alice", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["outcome"] == "applied"
    cluster.deliver()
    values = cluster.client.get_state("agent", cfg("a")).values
    assert values["answer"] == {
        "decisions": [{"type": "approve"}, {"type": "reject", "message": "no"}]
    }
    (record,) = cluster.client.resume_history("agent", cfg("a"))
    assert (record.route, record.actor) == ("inbox", "alice")


def test_inbox_resume_refuses_a_decision_the_review_does_not_allow_writing_nothing(
    cluster: InlineCluster,
) -> None:
    cluster.run("agent", {"calls": [DELETE]}, cfg("a"))
    sent = len(cluster.broker.sent)
    result = cli(
        "inbox", "resume", "--graph", "agent", "--where", "{}", "--key", "k",
        "--decision", "edit", "--edit-args", '{"path": "/"}',
    )  # fmt: skip
    assert result.exit_code == 2
    assert "does not allow 'edit': it allows approve, reject" in said(result)
    assert "nothing was resumed" in said(result)
    assert len(cluster.broker.sent) == sent
    assert cluster.client.resume_history("agent", cfg("a")) == []
    both = cli("inbox", "resume", "--graph", "agent", "--where", "{}", "--key", "k",
               "--value", "1", "--decision", "approve")  # fmt: skip
    assert both.exit_code == 2
    assert "not both" in said(both)


def test_resume_answers_a_threads_waits_with_a_decision(cluster: InlineCluster) -> None:
    cluster.run("agent", {"calls": [EMAIL]}, cfg("a"))
    result = cli(
        "resume", "--graph", "agent", "--thread", "a", "--decision", "edit",
        "--edit-args", '{"to": "team@x.io"}', "--no-wait", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    cluster.deliver()
    assert cluster.client.get_state("agent", cfg("a")).values["answer"] == {
        "decisions": [
            {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "team@x.io"}}}
        ]
    }
    (record,) = cluster.client.resume_history("agent", cfg("a"))
    assert record.route == "cli"
    refused = cli("resume", "--graph", "agent", "--thread", "a", "--decision", "approve")
    assert refused.exit_code == 1
    assert "no pending wait" in said(refused)
    cluster.run("agent", {"calls": [DELETE]}, cfg("b"))
    wrong = cli("resume", "--graph", "agent", "--thread", "b", "--decision", "respond",
                "--message", "hi")  # fmt: skip
    assert wrong.exit_code == 2
    assert "it allows approve, reject" in said(wrong)
