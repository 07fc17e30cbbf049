"""A node's failure on real workers: the traceback reaches the caller, the worker log
says which node of which run, and the Celery job is named after the node and failed."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from typing import Any

import pytest

from tests.e2e.graphrun_process import graphrun
from workers.client import GraphClient
from workers.errors import RemoteTraceback
from workers.local_cluster import LocalCluster


def _logged(cluster: LocalCluster, *needles: str, timeout: float = 30.0) -> str:
    """The first worker log line holding every needle (celery logs after the job ends)."""
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        for w in cluster.workers:
            for line in list(w.log):
                if all(n in line for n in needles):
                    return line
        time.sleep(0.05)
    raise AssertionError(f"no worker log line with {needles!r} within {timeout}s")


def test_a_node_failure_is_visible_to_the_caller_and_the_operator(
    cluster: LocalCluster, client: GraphClient, thread: Any
) -> None:
    handle = client.submit("failing", {"steps": []}, thread)
    with pytest.raises(ValueError, match="node failed on purpose") as caught:
        handle.wait(timeout=60)
    cause = caught.value.__cause__
    assert isinstance(cause, RemoteTraceback)
    assert "tests/e2e/graphs.py" in cause.text  # the node's frame, from the worker
    assert "in boom" in cause.text
    notes = "\n".join(getattr(caught.value, "__notes__", []))
    assert "node boom" in notes
    assert handle.run_id in notes
    # the worker log names the node, the run and the thread, at ERROR
    line = _logged(cluster, "ERROR", f"node boom failed in run {handle.run_id}")
    assert thread["configurable"]["thread_id"] in line
    # the job carries the node's name (its Celery shadow name) and ends as failed
    _logged(cluster, "failing:boom[", "NodeFailedError")


def test_flower_sees_a_production_workers_job_by_its_node_and_as_failed(
    cluster: LocalCluster, thread: Any
) -> None:
    """Flower shows Celery's task events, which it turns on in `graphrun worker`s (their
    event dispatcher is on for heartbeats): the same is done here, with a receiver."""
    from workers.app import CeleryBroker

    suffix = uuid.uuid4().hex[:8]
    node = f"evt{suffix}@{socket.gethostname()}"
    queues = {"coordinator_queue": f"evt-coord-{suffix}", "task_queue": f"evt-tasks-{suffix}"}
    env = {
        **os.environ,
        **cluster.env,
        "GRAPHRUNTIME_COORDINATOR_QUEUE": queues["coordinator_queue"],
        "GRAPHRUNTIME_TASK_QUEUE": queues["task_queue"],
    }
    env.pop("GRAPHRUNTIME_METRICS_PORT", None)
    client = GraphClient.from_env(cluster.settings().model_copy(update=queues))
    seen: list[dict[str, Any]] = []
    receivers: list[Any] = []
    ready = threading.Event()
    assert isinstance(client.broker, CeleryBroker)
    app = client.broker.app

    def listen() -> None:
        with app.connection_for_read() as conn:
            receiver = app.events.Receiver(conn, handlers={"*": seen.append})
            receivers.append(receiver)
            ready.set()
            # returns once should_stop is set: worker heartbeats wake it every 2 s
            receiver.capture(limit=None, timeout=None, wakeup=True)

    listener = threading.Thread(target=listen, daemon=True)
    args = ("worker", "--hostname", node, "--concurrency", "1")
    try:
        with graphrun(*args, env=env) as worker:
            worker.read_until(" ready.")
            listener.start()
            assert ready.wait(30)
            give_up = time.monotonic() + 60  # a busy machine may answer late
            while not app.control.ping(destination=[node], timeout=2):
                assert time.monotonic() < give_up, f"{node} does not answer pings"
            app.control.enable_events(destination=[node])
            time.sleep(1)  # the worker starts sending task events
            handle = client.submit("failing", {"steps": []}, thread)
            with pytest.raises(ValueError, match="node failed on purpose"):
                handle.wait(timeout=60)

            def failed_boom() -> dict[str, Any] | None:
                names = {e["uuid"]: e["name"] for e in seen if e["type"] == "task-received"}
                return next(
                    (
                        e
                        for e in seen
                        if e["type"] == "task-failed" and names.get(e["uuid"]) == "failing:boom"
                    ),
                    None,
                )

            give_up = time.monotonic() + 30
            while failed_boom() is None and time.monotonic() < give_up:
                time.sleep(0.2)
            failure = failed_boom()
            assert failure is not None, [e["type"] for e in seen][-30:]
            assert failure["hostname"] == node
            assert "NodeFailedError" in failure["exception"]
            assert worker.stop() == 0
    finally:
        for receiver in receivers:
            receiver.should_stop = True
        client.close()
        listener.join(timeout=10)
