"""The operator's CLI against the real cluster: resume a thread, list its runs."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from workers.client import GraphClient
from workers.local_cluster import LocalCluster


def _graphrun(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **cluster.env, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "workers.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_resumes_an_interrupted_thread_once(
    cluster: LocalCluster, client: GraphClient, thread: Any
) -> None:
    client.invoke("fan", {"n": 2}, thread, timeout=60)
    thread_id = thread["configurable"]["thread_id"]
    first = _graphrun(
        cluster,
        "resume",
        "--graph",
        "fan",
        "--thread",
        thread_id,
        "--value",
        '"ship it"',
        "--key",
        "cli-1",
    )
    assert first.returncode == 0, first.stdout + first.stderr
    assert "ship it" in first.stdout
    assert client.get_state("fan", thread).values["decision"] == "ship it"
    again = _graphrun(
        cluster,
        "resume",
        "--graph",
        "fan",
        "--thread",
        thread_id,
        "--value",
        '"ship it"',
        "--key",
        "cli-1",
        "--no-wait",
    )
    assert again.returncode == 0
    assert "already submitted" in again.stdout

    runs = _graphrun(cluster, "runs", "--thread", thread_id)
    assert runs.returncode == 0
    assert runs.stdout.count("success") == 1
    assert "interrupted" in runs.stdout


def test_cli_rejects_a_value_that_is_not_json(cluster: LocalCluster, thread: Any) -> None:
    out = _graphrun(cluster, "resume", "--graph", "fan", "--thread", "x", "--value", "not json")
    assert out.returncode == 2
    assert "must be JSON" in out.stderr
