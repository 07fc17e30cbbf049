"""Failures people can see: the worker's traceback reaches the client, jobs are named
after their nodes and end as failed."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from graphruntime.config import RunnableConfig
from tests.unit.workers.graphs import Calls, failing, fan
from workers.coordinator import coordinate
from workers.errors import RemoteTraceback
from workers.executor import execute_tasks
from workers.testing import InlineCluster


def thread() -> RunnableConfig:
    return {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}


def test_a_node_error_carries_the_workers_traceback_and_where_it_was_raised() -> None:
    cluster = InlineCluster({"boom": failing(Calls())})
    handle = cluster.client.submit("boom", {"log": []}, thread())
    failures = coordinate(cluster.workers[0], handle.run_id)
    assert len(failures) == 1
    assert "KeyError" in failures[0]
    with pytest.raises(KeyError) as caught:
        handle.wait(0)
    cause = caught.value.__cause__
    assert isinstance(cause, RemoteTraceback)
    assert "in boom" in cause.text  # the node's own frame
    assert 'raise KeyError("missing")' in cause.text
    notes = "\n".join(getattr(caught.value, "__notes__", []))
    assert handle.run_id in notes
    assert "worker" in notes
    run = cluster.store.get_run(handle.run_id)
    assert run.error is not None
    assert run.error["traceback"] == cause.text


def test_a_failed_task_job_reports_its_node_and_is_labelled_with_it() -> None:
    calls = Calls()
    cluster = InlineCluster({"fan": fan(calls)})
    handle = cluster.client.submit("fan", {"items": ["a", "bad"], "log": []}, thread())
    cluster.deliver(limit=1)
    jobs = list(cluster.broker.tasks)
    assert [job.label for job in jobs] == ["fan:work", "fan:work"]
    outcomes: list[Any] = []
    for job in jobs:
        cluster.broker.tasks.remove(job)
        assert job.message is not None
        outcomes.append(execute_tasks(cluster.workers[0], job.message))
    failed = [line for lines in outcomes for line in lines]
    assert any("node work: ValueError: bad item 'bad'" in line for line in failed)
    with pytest.raises(ValueError, match="bad item") as caught:
        handle.wait(0)
    assert isinstance(caught.value.__cause__, RemoteTraceback)
    assert "in work" in caught.value.__cause__.text
    assert "node work" in "\n".join(getattr(caught.value, "__notes__", []))
