"""Failures people can see: the worker's traceback reaches the client, jobs are named
after their nodes and end as failed."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest

from graphruntime.config import RunnableConfig
from tests.unit.workers.graphs import Calls, failing, fan
from workers.coordinator import coordinate
from workers.errors import RemoteTraceback
from workers.executor import execute_tasks
from workers.registry import GraphRegistry
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


def test_a_worker_lacking_the_graph_leaves_the_run_to_one_that_has_it() -> None:
    calls = Calls()
    cluster = InlineCluster({"fan": fan(calls)})
    lacking = dataclasses.replace(
        cluster.workers[0], registry=GraphRegistry.of({}), worker_name="old-worker"
    )
    handle = cluster.client.submit("fan", {"items": ["a", "b"], "log": []}, thread())
    (job,) = cluster.broker.coordinator
    cluster.broker.coordinator.remove(job)
    assert coordinate(lacking, handle.run_id) == []
    assert cluster.store.get_run(handle.run_id).status == "queued"  # not failed
    (again,) = cluster.broker.coordinator
    assert again.run_id == handle.run_id
    assert again.delay > 0
    cluster.deliver(limit=1)  # a worker with the graph dispatches the fan-out
    task_job = cluster.broker.tasks[0]
    cluster.broker.tasks.remove(task_job)
    assert task_job.message is not None
    assert execute_tasks(lacking, task_job.message) == []
    assert calls.counts["work:a"] + calls.counts["work:b"] == 0
    assert [j.message for j in cluster.broker.tasks].count(task_job.message) == 1  # re-sent
    cluster.deliver()
    assert handle.wait(0)["decision"] == "a,b"
