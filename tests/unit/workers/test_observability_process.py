"""What a worker's /metrics adds beyond the pool's counters: process_* of each of its
processes, its build, and the series that exist at 0 before anything happened."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version

import pytest
from prometheus_client import CollectorRegistry

from workers.observability import (
    BuildInfoCollector,
    WorkerProcessesCollector,
    _metrics,
    disable_metrics,
    start_recording,
)
from workers.observability._process import children


@pytest.fixture
def child() -> Iterator[int]:
    """A process this one forked, alive for the test (a stand-in for a pool process)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="process metrics are read from /proc")
def test_each_process_of_the_worker_has_its_own_process_metrics(child: int) -> None:
    assert child in children(os.getpid())
    registry = CollectorRegistry()
    registry.register(WorkerProcessesCollector())
    main = {"pid": str(os.getpid()), "role": "main"}
    pool = {"pid": str(child), "role": "pool"}
    for labels in (main, pool):
        assert (registry.get_sample_value("process_resident_memory_bytes", labels) or 0) > 0
        assert registry.get_sample_value("process_cpu_seconds_total", labels) is not None
        assert (registry.get_sample_value("process_open_fds", labels) or 0) > 0
        assert (registry.get_sample_value("process_start_time_seconds", labels) or 0) > 0


def test_children_of_a_process_that_is_not_there_are_none() -> None:
    assert children(2**22 + 7) == []  # no such pid


def test_build_info_names_the_versions() -> None:
    registry = CollectorRegistry()
    registry.register(BuildInfoCollector())
    labels = {
        "version": version("graphruntime"),
        "python": platform.python_version(),
        "celery": version("celery"),
    }
    assert registry.get_sample_value("graphruntime_build_info", labels) == 1.0


def test_known_series_exist_at_zero_before_anything_happened() -> None:
    registry = CollectorRegistry()
    start_recording(registry)
    try:
        _metrics.record_known({"approvals": ["review", "publish"]})
    finally:
        disable_metrics()

    def at(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    for status in ("success", "interrupted", "error"):
        assert at("graphruntime_runs_ended_total", graph="approvals", status=status) == 0
    for kind in ("inline", "distributed"):
        assert at("graphruntime_steps_total", graph="approvals", kind=kind) == 0
    for node in ("review", "publish"):
        assert at("graphruntime_task_retries_total", graph="approvals", node=node) == 0
        assert at("graphruntime_task_duration_seconds_count", graph="approvals", node=node) == 0
    assert at("graphruntime_step_duration_seconds_count", graph="approvals") == 0
    for kind in ("task", "run", "deadline"):
        assert at("graphruntime_sweeper_resends_total", kind=kind) == 0
    assert at("graphruntime_dead_letters_pushed_total") == 0
    assert at("graphruntime_runs_ended_total", graph="other", status="success") is None
