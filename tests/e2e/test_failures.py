"""A node's failure on real workers: the traceback reaches the caller, the worker log
says which node of which run, and the Celery job is named after the node and failed."""

from __future__ import annotations

import time
from typing import Any

import pytest

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
