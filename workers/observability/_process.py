"""What a worker's ``/metrics`` adds to the counters: its processes and its build.

prometheus-client's multiprocess mode serves only the values the processes write to
files, so its ``process_*`` metrics (CPU, memory, file descriptors) are gone. They are read
here instead, at each scrape, from ``/proc`` for the worker's main process and each of its
pool processes, labelled ``pid`` and ``role`` (``main`` or ``pool``); on a system without
``/proc`` there are none.
"""

from __future__ import annotations

import functools
import glob
import os
import platform
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

BUILD_INFO = "graphruntime_build_info"


def children(pid: int, proc: str = "/proc") -> list[int]:
    """The processes ``pid`` forked (its pool), from ``/proc``; [] where it cannot tell."""
    found: set[int] = set()
    listed = glob.glob(os.path.join(proc, str(pid), "task", "*", "children"))
    for path in listed:
        try:
            with open(path) as f:
                found.update(int(p) for p in f.read().split())
        except OSError:  # the thread ended meanwhile
            continue
    if listed:
        return sorted(found)
    # a kernel without /proc/<pid>/task/<tid>/children: every process's parent, from stat
    for stat in glob.glob(os.path.join(proc, "[0-9]*", "stat")):
        try:
            with open(stat, "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and int(fields[1]) == pid:
            found.add(int(os.path.basename(os.path.dirname(stat))))
    return sorted(found)


class WorkerProcessesCollector:
    """``process_*`` of the main process (``os.getpid()`` when collected, unless given) and
    of each of its children, one series per process (labels ``pid``, ``role``)."""

    def __init__(self, main: int | None = None, proc: str = "/proc") -> None:
        self.main = main
        self.proc = proc

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.metrics_core import Metric
        from prometheus_client.process_collector import ProcessCollector

        main = self.main if self.main is not None else os.getpid()
        merged: dict[str, Metric] = {}
        roles = [(main, "main")] + [(pid, "pool") for pid in children(main, self.proc)]
        for pid, role in roles:
            one = ProcessCollector(pid=functools.partial(int, pid), proc=self.proc, registry=None)
            for family in one.collect():
                into = merged.setdefault(
                    family.name, Metric(family.name, family.documentation, family.type)
                )
                for sample in family.samples:
                    labels = {**sample.labels, "pid": str(pid), "role": role}
                    into.add_sample(sample.name, labels, sample.value)
        yield from merged.values()


class BuildInfoCollector:
    """``graphruntime_build_info{version, python, celery} 1``: what this worker runs."""

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        info = GaugeMetricFamily(
            BUILD_INFO,
            "The worker's build: graphruntime's version, Python's and Celery's (always 1).",
            labels=["version", "python", "celery"],
        )
        info.add_metric(
            [_version("graphruntime"), platform.python_version(), _version("celery")], 1.0
        )
        yield info


def _version(distribution: str) -> str:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "unknown"
