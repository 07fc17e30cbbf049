"""Metrics and JSON logs of real celery workers: a node failure shows up in the metrics
scraped over HTTP and in the worker's JSON log; a fan-out's latencies are added up over
the pool processes that ran it; a metrics port in use stops the worker at start."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from graphruntime.config import RunnableConfig
from tests.e2e.conftest import FAST_RECOVERY, ROOT, registry_spec
from tests.e2e.private_cluster import logs_on_failure
from workers.client import GraphClient
from workers.local_cluster import LocalCluster

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Observed:
    cluster: LocalCluster
    client: GraphClient
    port: int

    def scrape(self) -> Samples:
        url = f"http://127.0.0.1:{self.port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        return {
            (s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }

    def until(self, check: Callable[[Samples], None], timeout: float = 30.0) -> Samples:
        """Scrape until ``check`` passes (a worker counts a run's end just after the client
        can see it)."""
        give_up = time.monotonic() + timeout
        while True:
            samples = self.scrape()
            try:
                check(samples)
                return samples
            except AssertionError:
                if time.monotonic() > give_up:
                    raise
            time.sleep(0.2)


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture(scope="module")
def observed() -> Iterator[Observed]:
    """One worker with two pool processes, metrics on a port of its own, JSON logs."""
    port = free_port()
    with LocalCluster(
        registry_spec(),
        workers=1,
        concurrency=2,
        pythonpath=[str(ROOT)],
        extra_env={
            **FAST_RECOVERY,
            "GRAPHRUNTIME_METRICS_PORT": str(port),
            "GRAPHRUNTIME_METRICS_ADDRESS": "127.0.0.1",
            "GRAPHRUNTIME_LOG_FORMAT": "json",
            "E2E_WORK_SECONDS": "0.2",  # long enough for both pool processes to take some
        },
    ) as cluster:
        client = GraphClient.from_env(cluster.settings())
        try:
            with logs_on_failure(cluster):
                yield Observed(cluster, client, port)
        finally:
            client.close()


def thread() -> RunnableConfig:
    return {"configurable": {"thread_id": f"obs-{time.monotonic_ns()}"}}


def test_a_node_failure_and_a_fan_out_show_in_the_scraped_metrics(observed: Observed) -> None:
    failing = observed.client.submit("failing", {"steps": []}, thread())
    with pytest.raises(ValueError, match="node failed on purpose"):
        failing.wait(timeout=60)
    fan = observed.client.submit("fan", {"n": 6}, thread())
    result = fan.wait(timeout=60)
    assert len(set(result["pids"])) == 2, "the fan-out should have used both pool processes"
    queues = observed.cluster.settings()

    def check(samples: Samples) -> None:
        failures = value(
            samples,
            "graphruntime_node_failures_total",
            graph="failing",
            node="boom",
            error="ValueError",
        )
        assert failures == 1
        assert value(samples, "graphruntime_runs_ended_total", graph="failing", status="error") == 1
        assert (
            value(samples, "graphruntime_runs_ended_total", graph="fan", status="interrupted") == 1
        )
        # six observations made in two processes, added up by the main process
        work = {"graph": "fan", "node": "work"}
        assert value(samples, "graphruntime_task_duration_seconds_count", **work) == 6
        assert value(samples, "graphruntime_task_duration_seconds_sum", **work) >= 6 * 0.2
        assert value(samples, "graphruntime_steps_total", graph="fan", kind="distributed") == 1
        assert value(samples, "graphruntime_steps_total", graph="fan", kind="inline") >= 2
        assert value(samples, "graphruntime_step_duration_seconds_count", graph="fan") >= 3

    samples = observed.until(check)
    # gauges, read from Redis and Postgres at scrape time
    assert value(samples, "graphruntime_cluster_up", source="redis") == 1
    assert value(samples, "graphruntime_cluster_up", source="postgres") == 1
    for queue in (queues.coordinator_queue, queues.task_queue):
        assert ("graphruntime_queue_depth", frozenset({("queue", queue)})) in samples
    assert ("graphruntime_runs_in_flight", frozenset({("status", "queued")})) in samples
    assert value(samples, "graphruntime_pending_interrupts") >= 1  # the fan waits at approve
    assert ("graphruntime_overdue_interrupts", frozenset()) in samples
    assert value(samples, "graphruntime_live_workers") >= 3  # the main process and two children


def test_json_logs_carry_the_run_and_node_of_a_node_failure(observed: Observed) -> None:
    handle = observed.client.submit("failing", {"steps": []}, thread())
    with pytest.raises(ValueError, match="node failed on purpose"):
        handle.wait(timeout=60)
    give_up = time.monotonic() + 30
    found: dict[str, Any] | None = None
    while found is None and time.monotonic() < give_up:
        for line in list(observed.cluster.workers[0].log):
            if line.startswith("{") and "node boom failed" in line and handle.run_id in line:
                found = json.loads(line)
                break
        else:
            time.sleep(0.1)
    assert found is not None, "no JSON line for the node failure"
    assert found["level"] == "error"
    assert found["run_id"] == handle.run_id
    assert found["node"] == "boom"
    assert found["graph"] == "failing"
    assert "ValueError: node failed on purpose" in found["exception"]
    assert found["process_name"].startswith("ForkPoolWorker")
    log = list(observed.cluster.workers[0].log)
    records = [json.loads(line) for line in log if line.startswith("{")]
    assert any(r["event"].endswith(" ready.") for r in records)  # Celery's own lines too
    text_lines = [line for line in log if re.match(r"\[\d{4}-\d\d-\d\d ", line)]
    assert text_lines == [], "a log line in Celery's text format"


def _worker_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHRUNTIME_")}
    return {
        **env,
        "REDIS_URL": "redis://127.0.0.1:1/0",
        "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
        "PYTHONPATH": str(ROOT),
        **extra,
    }


def test_a_metrics_port_in_use_stops_the_worker_at_start() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "celery", "-A", "workers.app", "worker", "--concurrency=1"],
            env=_worker_env(
                GRAPHRUNTIME_METRICS_PORT=str(port), GRAPHRUNTIME_METRICS_ADDRESS="127.0.0.1"
            ),
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"GRAPHRUNTIME_METRICS_PORT: cannot serve metrics on 127.0.0.1:{port}" in done.stderr


def test_graphrun_worker_refuses_metrics_port_zero() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "workers.cli", "worker"],
        env=_worker_env(GRAPHRUNTIME_METRICS_PORT="0"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    said = " ".join((done.stdout + done.stderr).split())  # rich wraps long lines
    assert "GRAPHRUNTIME_METRICS_PORT: 0 is not a port to listen on" in said
