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
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from graphruntime.config import RunnableConfig
from tests.e2e.conftest import FAST_RECOVERY, ROOT, registry_spec
from tests.e2e.private_cluster import logs_on_failure
from workers.client import GraphClient
from workers.local_cluster import LocalCluster
from workers.observability._process import BUILD_INFO

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
    # workers are counted as workers: this one (whose main and two pool processes all beat)
    # counts once, and so does any other worker on the database (the session's cluster)
    workers = value(samples, "graphruntime_live_workers")
    assert workers >= 1
    assert value(samples, "graphruntime_live_worker_processes") >= workers + 2


def test_each_process_build_and_idle_series_are_scraped(observed: Observed) -> None:
    samples = observed.scrape()
    worker = observed.cluster.workers[0].pid
    rss = {
        dict(labels)["pid"]: v
        for (name, labels), v in samples.items()
        if name == "process_resident_memory_bytes"
    }
    roles = {
        dict(labels)["pid"]: dict(labels)["role"]
        for (name, labels), _ in samples.items()
        if name == "process_cpu_seconds_total"
    }
    assert roles[str(worker)] == "main"
    assert sorted(roles.values()) == ["main", "pool", "pool"]
    assert all(v > 0 for v in rss.values())
    assert len(rss) == 3
    (build,) = [dict(labels) for (name, labels), _ in samples.items() if name == BUILD_INFO]
    assert build["version"] == version("graphruntime")
    # a graph no test here runs: its counters are there, at 0, from the worker's start
    idle = {"graph": "ledger_chain"}
    assert ("graphruntime_runs_ended_total", frozenset({**idle, "status": "error"}.items())) in (
        samples
    )
    assert value(samples, "graphruntime_runs_ended_total", **idle, status="error") == 0
    assert value(samples, "graphruntime_sweeper_resends_total", kind="deadline") == 0


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


def test_a_metrics_address_not_of_this_host_stops_the_worker_at_start() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "workers.app", "worker", "--concurrency=1"],
        env=_worker_env(
            GRAPHRUNTIME_METRICS_PORT=str(free_port()), GRAPHRUNTIME_METRICS_ADDRESS="192.0.2.1"
        ),
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "GRAPHRUNTIME_METRICS_ADDRESS: cannot serve metrics on 192.0.2.1:" in done.stderr


BAD_SETTINGS = [
    ({"GRAPHRUNTIME_METRICS_PORT": "0"}, "GRAPHRUNTIME_METRICS_PORT: 0 is not a port to listen on"),
    ({"GRAPHRUNTIME_METRICS_PORT": "70000"}, "GRAPHRUNTIME_METRICS_PORT: 70000 is not a port"),
    (
        {"GRAPHRUNTIME_LOG_FORMAT": "xml"},
        "GRAPHRUNTIME_LOG_FORMAT: Input should be 'text' or 'json'",
    ),
    ({"GRAPHRUNTIME_TRACING": "jaeger"}, "GRAPHRUNTIME_TRACING: Input should be 'off' or 'otel'"),
]


@pytest.mark.parametrize(("setting", "says"), BAD_SETTINGS)
def test_graphrun_worker_refuses_a_bad_observability_setting_by_name(
    setting: dict[str, str], says: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "workers.cli", "worker"],
        env=_worker_env(**setting),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    said = " ".join((done.stdout + done.stderr).split())  # rich wraps long lines
    assert says in said


@pytest.mark.parametrize(("setting", "says"), BAD_SETTINGS[2:])
def test_celery_worker_refuses_a_bad_observability_setting_by_name(
    setting: dict[str, str], says: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "workers.app", "worker", "--concurrency=1"],
        env=_worker_env(**setting),
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode != 0, done.stdout + done.stderr
    assert f"ConfigurationError: Bad configuration: {says}" in done.stderr


# --- the multiprocess directory, per worker start ------------------------------------------

STALE = """
from workers.observability import _metrics
_metrics.start_recording()
for _ in range(5):
    _metrics.record_task("failing", "boom", 0.1, error="ValueError", retry=False)
"""


def _failures(samples: Samples) -> float:
    return value(
        samples,
        "graphruntime_node_failures_total",
        graph="failing",
        node="boom",
        error="ValueError",
    )


def _fail_once(client: GraphClient) -> None:
    with pytest.raises(ValueError, match="node failed on purpose"):
        client.submit("failing", {"steps": []}, thread()).wait(timeout=60)


def test_a_configured_directory_is_emptied_at_each_worker_start(tmp_path: Path) -> None:
    """What an earlier worker left in PROMETHEUS_MULTIPROC_DIR (a killed one, a restarted
    container) is not added to this worker's counters."""
    own = tmp_path / "w0"  # LocalCluster gives worker 0 this subdirectory
    own.mkdir()
    subprocess.run(
        [sys.executable, "-c", STALE],
        cwd=ROOT,
        env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(own)},
        check=True,
        timeout=60,
    )
    assert list(own.glob("*.db")), "the earlier worker's values"
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
            "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
        },
    ) as cluster:
        client = GraphClient.from_env(cluster.settings())
        try:
            with logs_on_failure(cluster):
                observed = Observed(cluster, client, port)
                assert _failures(observed.scrape()) == 0
                _fail_once(client)
                assert _failures(observed.until(lambda s: _check(_failures(s) == 1))) == 1
                # killed: its values stay on disk until the next start in that directory
                cluster.kill_worker(0)
                assert list(own.glob("*.db"))
                cluster.restart_worker(0)
                assert _failures(observed.scrape()) == 0
                _fail_once(client)
                observed.until(lambda s: _check(_failures(s) == 1))
        finally:
            client.close()
    assert own.is_dir(), "a configured directory is the operator's: kept"


def _check(ok: bool) -> None:
    assert ok


def _private_dirs(pid: int) -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(f"graphruntime-metrics-{pid}-*"))


def test_a_private_directory_is_removed_at_shutdown_or_at_the_next_start() -> None:
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
        },
    ) as cluster:
        client = GraphClient.from_env(cluster.settings())
        try:
            with logs_on_failure(cluster):
                observed = Observed(cluster, client, port)
                killed = cluster.workers[0].pid
                (directory,) = _private_dirs(killed)
                _fail_once(client)
                observed.until(lambda s: _check(_failures(s) == 1))
                cluster.kill_worker(0)  # SIGKILL: no shutdown handler runs
                assert directory.is_dir()
                cluster.restart_worker(0)
                assert not directory.exists(), "the killed worker's directory is removed"
                assert _failures(observed.scrape()) == 0
                _fail_once(client)
                observed.until(lambda s: _check(_failures(s) == 1))
                restarted = cluster.workers[0].pid
                assert len(_private_dirs(restarted)) == 1
        finally:
            client.close()
    assert _private_dirs(restarted) == [], "a worker's warm shutdown removes its directory"
