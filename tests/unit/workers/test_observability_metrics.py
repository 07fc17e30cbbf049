"""Metrics: what the hooks count (read from a registry of the test's own), the cluster
gauges at scrape time, and multiprocess mode across forked processes (in a subprocess)."""

from __future__ import annotations

import errno
import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from graphruntime.config import RunnableConfig
from tests.unit.workers.graphs import Calls, chain, fan, flaky
from workers.dead_letters import DeadLetters
from workers.dispatch import QueueDepths
from workers.errors import ConfigurationError
from workers.local_cluster import LocalCluster
from workers.observability import (
    GAUGES,
    METRICS,
    ClusterCollector,
    MetricsServer,
    _metrics,
    disable_metrics,
    start_recording,
    step_start,
    swept,
)
from workers.settings import load_settings
from workers.store import Overview
from workers.testing import InlineCluster

ROOT = Path(__file__).resolve().parents[3]


def thread() -> RunnableConfig:
    return {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}


@pytest.fixture
def registry() -> Iterator[CollectorRegistry]:
    reg = CollectorRegistry()
    start_recording(reg)
    yield reg
    disable_metrics()


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


# --- settings ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"metrics_port": 0}, "GRAPHRUNTIME_METRICS_PORT: 0 is not a port"),
        ({"metrics_port": 70000}, "GRAPHRUNTIME_METRICS_PORT: 70000 is not a port"),
        ({"metrics_port": "http"}, "GRAPHRUNTIME_METRICS_PORT: Input should be a valid integer"),
        ({"log_format": "xml"}, "GRAPHRUNTIME_LOG_FORMAT: Input should be 'text' or 'json'"),
        ({"tracing": "jaeger"}, "GRAPHRUNTIME_TRACING: Input should be 'off' or 'otel'"),
    ],
)
def test_bad_observability_settings_are_refused_by_name(overrides: Any, says: str) -> None:
    with pytest.raises(ConfigurationError, match=says):
        load_settings(**overrides)


def test_observability_settings_default_to_off() -> None:
    settings = load_settings(database_url="x", redis_url="y")
    assert (settings.metrics_port, settings.log_format, settings.tracing) == (None, "text", "off")
    assert load_settings(metrics_port="9808").metrics_port == 9808


# --- what the hooks count ------------------------------------------------------------------


def test_a_failed_fan_out_counts_the_failure_the_run_the_steps_and_each_attempt(
    registry: CollectorRegistry,
) -> None:
    cluster = InlineCluster({"fan": fan(Calls())})
    with pytest.raises(ValueError, match="bad item"):
        cluster.run("fan", {"items": ["a", "bad", "c"], "log": []}, thread())
    labels = {"graph": "fan", "node": "work"}
    assert sample(registry, "graphruntime_node_failures_total", **labels, error="ValueError") == 1
    assert sample(registry, "graphruntime_task_duration_seconds_count", **labels) == 3
    assert sample(registry, "graphruntime_runs_ended_total", graph="fan", status="error") == 1
    assert sample(registry, "graphruntime_runs_ended_total", graph="fan", status="success") == 0
    # __start__ ran in the coordinator; the three work tasks as task jobs
    assert sample(registry, "graphruntime_steps_total", graph="fan", kind="inline") == 1
    assert sample(registry, "graphruntime_steps_total", graph="fan", kind="distributed") == 1
    assert sample(registry, "graphruntime_step_duration_seconds_count", graph="fan") == 2


def test_a_run_counts_with_the_status_its_batch_committed(registry: CollectorRegistry) -> None:
    """Held checkpoints that cannot be stored turn a success into an error: counted as such."""
    from checkpoint_pg import CheckpointStoreError
    from graphruntime.errors import CheckpointConflict
    from tests.unit.workers.test_held_checkpoints import cluster_with

    cluster, faults = cluster_with(chain(Calls(), n=2))
    faults.verdict = lambda t: CheckpointConflict("the thread moved (test)")
    cluster.client.submit("g", {"log": []}, thread())
    cluster.deliver(limit=1)  # refused: sent again, not ended, not counted
    assert sample(registry, "graphruntime_runs_ended_total", graph="g", status="success") == 0
    faults.verdict = lambda t: CheckpointStoreError("PostgresSaver.pipelined failed (test)")
    cluster.deliver()
    assert sample(registry, "graphruntime_runs_ended_total", graph="g", status="error") == 1
    assert sample(registry, "graphruntime_runs_ended_total", graph="g", status="success") == 0


def test_a_chain_counts_inline_steps_and_a_success(registry: CollectorRegistry) -> None:
    cluster = InlineCluster({"chain": chain(Calls(), n=3)})
    cluster.run("chain", {"log": []}, thread())
    assert sample(registry, "graphruntime_steps_total", graph="chain", kind="inline") == 4
    assert sample(registry, "graphruntime_steps_total", graph="chain", kind="distributed") == 0
    assert sample(registry, "graphruntime_runs_ended_total", graph="chain", status="success") == 1
    assert sample(registry, "graphruntime_node_failures_total", graph="chain", node="n1") == 0


def test_retried_attempts_are_counted_as_retries_not_failures(
    registry: CollectorRegistry,
) -> None:
    cluster = InlineCluster({"flaky": flaky(Calls(), failures=2)})
    cluster.run("flaky", {"log": []}, thread())
    labels = {"graph": "flaky", "node": "flaky"}
    assert sample(registry, "graphruntime_task_retries_total", **labels) == 2
    assert sample(registry, "graphruntime_task_duration_seconds_count", **labels) == 3
    assert registry.get_sample_value(
        "graphruntime_node_failures_total", {**labels, "error": "ConnectionError"}
    ) in (None, 0.0)


def test_sweeper_resends_are_counted_by_kind(registry: CollectorRegistry) -> None:
    swept((3, 1, 0))
    swept((1, 0, 2))
    assert sample(registry, "graphruntime_sweeper_resends_total", kind="task") == 4
    assert sample(registry, "graphruntime_sweeper_resends_total", kind="run") == 1
    assert sample(registry, "graphruntime_sweeper_resends_total", kind="deadline") == 2


class _Pipeline:
    def __init__(self, lists: dict[str, list[Any]]) -> None:
        self.lists = lists
        self.ops: list[Any] = []

    def lpush(self, key: str, value: Any) -> None:
        def push() -> int:
            self.lists.setdefault(key, []).insert(0, value)
            return len(self.lists[key])

        self.ops.append(push)

    def llen(self, key: str) -> None:
        self.ops.append(lambda: len(self.lists.get(key, [])))

    def rpop(self, key: str) -> None:
        self.ops.append(lambda: self.lists[key].pop() if self.lists.get(key) else None)

    def incrby(self, key: str, n: int) -> None:
        self.ops.append(lambda: n)

    def execute(self) -> list[Any]:
        return [op() for op in self.ops]


class _FakeRedis:
    def __init__(self) -> None:
        self.lists: dict[str, list[Any]] = {}

    def pipeline(self, transaction: bool = True) -> _Pipeline:
        return _Pipeline(self.lists)


def test_dead_letters_pushed_and_dropped_are_counted(registry: CollectorRegistry) -> None:
    redis = _FakeRedis()
    letters = DeadLetters("q", max_entries=2)
    for i in range(3):
        letters.push(redis, f"message {i}", "refused")
    assert sample(registry, "graphruntime_dead_letters_pushed_total") == 3
    assert sample(registry, "graphruntime_dead_letters_dropped_total") == 1


def test_nothing_is_recorded_once_metrics_are_off() -> None:
    registry = CollectorRegistry()
    start_recording(registry)
    disable_metrics()
    InlineCluster({"chain": chain(Calls(), n=2)}).run("chain", {"log": []}, thread())
    assert sample(registry, "graphruntime_runs_ended_total", graph="chain", status="success") == 0
    assert sample(registry, "graphruntime_steps_total", graph="chain", kind="inline") == 0


def test_every_metric_is_documented_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    for name in [*METRICS, *GAUGES]:
        assert re.search(rf"`{name}(\{{[a-z,]+\}})?`", readme), f"{name} is not in the README"


# --- step latency --------------------------------------------------------------------------


def test_a_step_starts_at_its_checkpoint_or_when_its_run_was_created_if_later() -> None:
    now = datetime.now(UTC)
    view: Any = SimpleNamespace(checkpoint_ts=(now - timedelta(days=2)).isoformat())
    resumed: Any = SimpleNamespace(created_at=now - timedelta(seconds=3))
    assert step_start(view, resumed) == now - timedelta(seconds=3)
    fresh: Any = SimpleNamespace(created_at=now - timedelta(days=3))
    assert step_start(view, fresh) == now - timedelta(days=2)


# --- cluster gauges ------------------------------------------------------------------------


def _overview() -> Overview:
    return Overview(queued=2, running=3, pending_interrupts=4, overdue=1, workers=5)


def _scrape(collector: ClusterCollector) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in collector.collect()
        for s in family.samples
    }


def test_cluster_gauges_are_read_at_scrape_time() -> None:
    depths = [QueueDepths(7, 11)]
    collector = ClusterCollector(lambda: depths[0], _overview, ("coord", "tasks"))
    got = _scrape(collector)
    assert got[("graphruntime_queue_depth", (("queue", "coord"),))] == 7
    assert got[("graphruntime_queue_depth", (("queue", "tasks"),))] == 11
    assert got[("graphruntime_runs_in_flight", (("status", "queued"),))] == 2
    assert got[("graphruntime_runs_in_flight", (("status", "running"),))] == 3
    assert got[("graphruntime_pending_interrupts", ())] == 4
    assert got[("graphruntime_overdue_interrupts", ())] == 1
    assert got[("graphruntime_live_workers", ())] == 5
    assert got[("graphruntime_cluster_up", (("source", "redis"),))] == 1
    depths[0] = QueueDepths(0, 1)
    assert _scrape(collector)[("graphruntime_queue_depth", (("queue", "coord"),))] == 0


def test_a_failing_source_leaves_its_gauges_out_and_the_scrape_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken() -> QueueDepths:
        raise ConnectionError("redis is down")

    registry = CollectorRegistry()
    registry.register(ClusterCollector(broken, _overview, ("coord", "tasks")))
    text = generate_latest(registry).decode()
    assert 'graphruntime_cluster_up{source="redis"} 0.0' in text
    assert 'graphruntime_cluster_up{source="postgres"} 1.0' in text
    assert "graphruntime_queue_depth{" not in text
    assert "graphruntime_live_workers 5.0" in text
    assert "redis is down" in caplog.text


def test_a_hung_source_is_given_up_on_and_not_read_again_while_it_hangs() -> None:
    release = threading.Event()
    calls: list[int] = []

    def hung() -> Overview:
        calls.append(1)
        release.wait(30)
        return _overview()

    collector = ClusterCollector(lambda: QueueDepths(1, 1), hung, ("c", "t"), timeout=0.1)
    try:
        first = _scrape(collector)
        second = _scrape(collector)
    finally:
        release.set()
    for got in (first, second):
        assert got[("graphruntime_cluster_up", (("source", "postgres"),))] == 0
        assert got[("graphruntime_cluster_up", (("source", "redis"),))] == 1
        assert ("graphruntime_live_workers", ()) not in got
    assert len(calls) == 1


# --- the server and multiprocess mode ------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_port_in_use_is_a_configuration_error_that_names_the_setting(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigurationError, match=f"GRAPHRUNTIME_METRICS_PORT.*:{port}"):
            MetricsServer(port, "127.0.0.1", str(tmp_path), private=False)


def test_an_address_not_of_this_host_is_a_configuration_error_that_names_it(
    tmp_path: Path,
) -> None:
    # 192.0.2.1 is TEST-NET-1: no host has it
    with pytest.raises(ConfigurationError, match=r"GRAPHRUNTIME_METRICS_ADDRESS: .*192\.0\.2\.1"):
        MetricsServer(_free_port(), "192.0.2.1", str(tmp_path), private=False)


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "METRICS_ADDRESS"),
        (OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address"), "METRICS_ADDRESS"),
        (OSError(errno.EACCES, "Permission denied"), "METRICS_PORT: .*below 1024"),
        (OSError(errno.EADDRINUSE, "Address already in use"), "METRICS_PORT: .*another worker"),
    ],
)
def test_why_the_port_cannot_be_listened_on_names_the_setting_to_change(
    error: OSError, says: str
) -> None:
    assert re.search(says, _metrics._listen_problem(80, "example", error))


def test_private_directories_of_workers_that_are_gone_are_removed(tmp_path: Path) -> None:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait(timeout=30)
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead_dir = tmp_path / f"graphruntime-metrics-{ended.pid}-a1"
        mine = tmp_path / f"graphruntime-metrics-{os.getpid()}-b2"  # a restarted container
        live = tmp_path / f"graphruntime-metrics-{alive.pid}-c3"
        other = tmp_path / "graphruntime-metrics-notapid-d4"
        for d in (dead_dir, mine, live, other):
            d.mkdir()
            (d / "counter_1.db").write_bytes(b"x")
        _metrics._remove_abandoned(str(tmp_path))
        assert not dead_dir.exists()
        assert not mine.exists()
        assert live.exists(), "a running worker's directory is left alone"
        assert other.exists()
    finally:
        alive.kill()
        alive.wait(timeout=30)


def test_an_unwritable_configured_directory_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "missing"))
    with pytest.raises(ConfigurationError, match=r"PROMETHEUS_MULTIPROC_DIR=.*not a directory"):
        _metrics.enable_metrics(_free_port(), "127.0.0.1")
    assert not _metrics.metrics_enabled()


FORKED = textwrap.dedent(
    """
    import json, os, sys, urllib.request
    from workers.observability import _metrics

    server = _metrics.enable_metrics(int(sys.argv[1]), "127.0.0.1")
    directory = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    children = []
    for i in range(2):
        pid = os.fork()
        if pid == 0:
            _metrics.record_task("g", "n", 0.5 + i, error="ValueError" if i else None, retry=False)
            _metrics.process_stopped()
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    _metrics.record_resends(2, 0, 1)  # the main process records too (its sweeper)
    url = f"http://127.0.0.1:{server.port}/metrics"
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    server.close()
    print(json.dumps({"text": text, "dir": directory, "kept": os.path.isdir(directory),
                      "children": children,
                      "env_after": os.environ.get("PROMETHEUS_MULTIPROC_DIR")}))
    """
)


def _run_forked(env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", FORKED, str(_free_port())],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_forked_processes_are_added_up_in_the_main_process_scrape() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    result = _run_forked(env)
    text = result["text"]
    assert 'graphruntime_task_duration_seconds_count{graph="g",node="n"} 2.0' in text
    assert 'graphruntime_task_duration_seconds_sum{graph="g",node="n"} 2.0' in text
    assert 'graphruntime_node_failures_total{error="ValueError",graph="g",node="n"} 1.0' in text
    assert 'graphruntime_sweeper_resends_total{kind="task"} 2.0' in text
    assert 'graphruntime_sweeper_resends_total{kind="deadline"} 1.0' in text
    assert "graphruntime-metrics-" in result["dir"]
    assert not result["kept"], "the private directory is removed when the server closes"
    assert result["env_after"] is None, "nothing points at the removed directory"


def test_a_configured_directory_is_used_emptied_first_and_kept(tmp_path: Path) -> None:
    stale = tmp_path / "counter_99999.db"
    stale.write_bytes(b"left from an earlier worker")
    result = _run_forked({**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)})
    assert result["dir"] == str(tmp_path)
    assert result["kept"]
    assert result["env_after"] == str(tmp_path)
    assert not stale.exists()
    assert 'graphruntime_task_duration_seconds_count{graph="g",node="n"} 2.0' in result["text"]


# --- workers sharing a host ----------------------------------------------------------------


def test_workers_of_a_local_cluster_get_a_metrics_port_and_directory_each(tmp_path: Path) -> None:
    cluster = LocalCluster("g=m:a", workers=3)
    cluster.env = {
        "GRAPHRUNTIME_METRICS_PORT": "9540",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
        "OTHER": "same",
    }
    envs = [cluster.worker_env(i) for i in range(3)]
    assert [e["GRAPHRUNTIME_METRICS_PORT"] for e in envs] == ["9540", "9541", "9542"]
    assert [e["PROMETHEUS_MULTIPROC_DIR"] for e in envs] == [
        str(tmp_path / f"w{i}") for i in range(3)
    ]
    assert all((tmp_path / f"w{i}").is_dir() for i in range(3))
    assert {e["OTHER"] for e in envs} == {"same"}
    cluster.env = {"GRAPHRUNTIME_METRICS_PORT": "http"}  # left for the worker to refuse
    assert cluster.worker_env(1) == {"GRAPHRUNTIME_METRICS_PORT": "http"}
    cluster.env = {}
    assert cluster.worker_env(1) == {}


FORKED_WORKER = textwrap.dedent(
    """
    import os, sys, urllib.request
    from workers import observability
    from workers.settings import load_settings

    settings = load_settings(metrics_port=int(sys.argv[1]), metrics_address="127.0.0.1")
    server = observability.start_worker(settings)
    directory = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    pid = os.fork()
    if pid == 0:  # a pool process
        observability.process_started()
        os._exit(0 if server._server.socket.fileno() == -1 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the pool process kept the listening socket"
    url = f"http://127.0.0.1:{server.port}/metrics"
    assert urllib.request.urlopen(url, timeout=10).status == 200
    observability.stop_worker()
    assert not os.path.exists(directory)
    assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ
    print("ok")
    """
)


def test_pool_processes_let_go_of_the_metrics_socket_and_shutdown_cleans_up() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    done = subprocess.run(
        [sys.executable, "-c", FORKED_WORKER, str(_free_port())],
        cwd=ROOT,
        env={**env, "DATABASE_URL": "postgresql://x@127.0.0.1:1/x", "REDIS_URL": "redis://x:1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "ok"
