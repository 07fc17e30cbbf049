"""A warm shutdown of a worker whose resident is busy (workers/_drain.py).

The shared cluster's workers have one process each and host no resident; this test
starts a worker of two processes of its own. While a client queues runs one after
another, the worker's resident takes them from the table without messages and would
stay RESIDENT_SECONDS (60 s); a SIGTERM to the worker's main process (what `docker
stop` sends) must send it away, so the warm shutdown ends within seconds, the runs it
took finished.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import uuid
from pathlib import Path

import pytest
import redis as redis_lib

from graphruntime.config import RunnableConfig
from tests.e2e.conftest import FAST_RECOVERY
from tests.e2e.fault_graphs import wait_until
from workers.client import GraphClient
from workers.local_cluster import LocalCluster

ROOT = Path(__file__).resolve().parents[2]


def _cfg() -> RunnableConfig:
    return {"configurable": {"thread_id": f"shutdown-{uuid.uuid4()}"}}


def test_a_warm_shutdown_sends_a_busy_resident_away() -> None:
    with LocalCluster(
        "chain=tests.e2e.graphs:chain_graph",
        workers=1,
        concurrency=2,
        pythonpath=[str(ROOT)],
        extra_env=FAST_RECOVERY,
    ) as cluster:
        settings = cluster.settings()
        client = GraphClient.from_env(settings)
        r = redis_lib.Redis.from_url(str(settings.redis_url).replace("redis+socket://", "unix://"))
        residents = f"graphruntime:resident:{settings.coordinator_queue}:*"
        stop = threading.Event()
        submitted: list[str] = []

        def keep_submitting() -> None:
            while not stop.is_set():
                submitted.append(client.submit("chain", {"steps": []}, _cfg()).run_id)
                stop.wait(0.01)

        try:
            client.invoke("chain", {"steps": []}, _cfg(), timeout=60)
            wait_until(lambda: r.keys(residents), timeout=30, what="the worker's resident")
            feeder = threading.Thread(target=keep_submitting, daemon=True)
            feeder.start()
            wait_until(
                lambda: len(submitted) >= 20, timeout=30, what="runs queued one after another"
            )
            worker = cluster.workers[0]
            os.kill(worker.pid, signal.SIGTERM)  # the main process only: a warm shutdown
            try:
                code = worker.proc.wait(timeout=30)  # a resident left alone stays 60 s
            except subprocess.TimeoutExpired:
                pytest.fail("the warm shutdown waited for the resident")
            assert code == 0
            assert not r.keys(residents)
            stop.set()
            feeder.join(30)
            statuses = {client.store.get_run(run_id).status for run_id in submitted}
            assert statuses <= {"success", "queued"}  # taken and finished, or left queued
            assert "success" in statuses
        finally:
            stop.set()
            client.close()
            r.close()
