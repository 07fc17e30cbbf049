"""A cluster on this machine: embedded Postgres and Redis plus N real ``celery worker``s.

The demo and the end-to-end tests use it. Every process it starts is stopped by
its pid when the cluster closes, and every wait has a timeout.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from workers.errors import StartupError
from workers.settings import Settings


@dataclass
class WorkerProcess:
    index: int
    proc: subprocess.Popen[str]
    log: list[str] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)

    @property
    def pid(self) -> int:
        return self.proc.pid


class LocalCluster:
    """Start with ``with LocalCluster(graphs="name=module:attr", workers=2) as cluster:``."""

    def __init__(
        self,
        graphs: str,
        *,
        workers: int = 2,
        concurrency: int = 1,
        extra_env: dict[str, str] | None = None,
        pythonpath: Sequence[str] = (),
        startup_timeout: float = 60.0,
        echo: bool = False,
    ) -> None:
        self.graphs = graphs
        self.n_workers = workers
        self.concurrency = concurrency
        self.extra_env = dict(extra_env or {})
        self.pythonpath = list(pythonpath)
        self.startup_timeout = startup_timeout
        self.echo = echo
        """Also print each worker's output, prefixed with its slot (``graphrun dev``)."""
        self.workers: list[WorkerProcess] = []
        self.env: dict[str, str] = {}

    # --- services ------------------------------------------------------------------------

    def start(self) -> LocalCluster:
        from checkpoint_pg.embedded import data_dir, embedded_url
        from workers.embedded import data_dir as redis_dir
        from workers.embedded import redis_url

        root = str(Path(__file__).resolve().parent.parent)
        # Queues of their own: clusters sharing one Redis never take each other's work.
        suffix = uuid.uuid4().hex[:8]
        queues = {
            "GRAPHRUNTIME_COORDINATOR_QUEUE": f"graphruntime.coordinator.{suffix}",
            "GRAPHRUNTIME_TASK_QUEUE": f"graphruntime.tasks.{suffix}",
            "GRAPHRUNTIME_RESUME_QUEUE": f"graphruntime:resume:{suffix}",
        }
        self.env = {
            **os.environ,
            "DATABASE_URL": os.environ.get("DATABASE_URL")
            or embedded("Postgres", data_dir() / "pg", embedded_url),
            "REDIS_URL": os.environ.get("REDIS_URL") or embedded("Redis", redis_dir(), redis_url),
            "PYTHONPATH": os.pathsep.join(
                [*self.pythonpath, root, os.environ.get("PYTHONPATH", "")]
            ),
            "PYTHONUNBUFFERED": "1",
            **queues,
            **self.extra_env,
        }
        if self.graphs:
            self.env["GRAPHRUNTIME_GRAPHS"] = self.graphs
        else:  # the graphs come from GRAPHRUNTIME_CONFIG (a langgraph.json)
            self.env.pop("GRAPHRUNTIME_GRAPHS", None)
        self._migrate()
        for i in range(self.n_workers):
            self.workers.append(self._spawn(i))
        deadline = time.monotonic() + self.startup_timeout
        for w in self.workers:
            if not w.ready.wait(max(0.0, deadline - time.monotonic())):
                self.stop()
                raise StartupError(
                    f"celery worker {w.index} (pid {w.pid}) not ready in "
                    f"{self.startup_timeout}s; its log:\n" + "\n".join(w.log[-40:])
                )
        return self

    def settings(self) -> Settings:
        """Settings for a client of this cluster (its database, broker, graphs and queues)."""
        env = self.env
        fields: dict[str, Any] = {
            "database_url": env["DATABASE_URL"],
            "redis_url": env["REDIS_URL"],
            "coordinator_queue": env["GRAPHRUNTIME_COORDINATOR_QUEUE"],
            "task_queue": env["GRAPHRUNTIME_TASK_QUEUE"],
            "resume_queue": env["GRAPHRUNTIME_RESUME_QUEUE"],
        }
        if env.get("GRAPHRUNTIME_GRAPHS"):  # unset when they come from GRAPHRUNTIME_CONFIG
            fields["graphs"] = env["GRAPHRUNTIME_GRAPHS"]
        return Settings(**fields)

    def _migrate(self) -> None:
        subprocess.run(
            [sys.executable, "-m", "workers.cli", "db", "migrate"],
            env=self.env,
            check=True,
            timeout=120,
            capture_output=True,
        )

    def _celery_app(self, index: int) -> tuple[str, str, str]:
        """The Celery app, queues and hostname of worker ``index``."""
        settings = self.settings()
        queues = f"{settings.coordinator_queue},{settings.task_queue}"
        return "workers.app", queues, f"w{index}@%h"

    def worker_env(self, index: int) -> dict[str, str]:
        """Worker ``index``'s environment: the cluster's, with what must differ between
        workers on one host: ``GRAPHRUNTIME_METRICS_PORT`` (if set) plus ``index``, and
        ``PROMETHEUS_MULTIPROC_DIR`` (if set) a subdirectory ``w<index>`` of it."""
        env = dict(self.env)
        port = env.get("GRAPHRUNTIME_METRICS_PORT", "").strip()
        if port.isdigit():  # anything else: the worker refuses it by name
            env["GRAPHRUNTIME_METRICS_PORT"] = str(int(port) + index)
        directory = env.get("PROMETHEUS_MULTIPROC_DIR")
        if directory:
            own = Path(directory) / f"w{index}"
            own.mkdir(parents=True, exist_ok=True)
            env["PROMETHEUS_MULTIPROC_DIR"] = str(own)
        return env

    def _spawn(self, index: int) -> WorkerProcess:
        app, queues, hostname = self._celery_app(index)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                app,
                "worker",
                f"--concurrency={self.concurrency}",
                f"--queues={queues}",
                f"--hostname={hostname}",
                "--loglevel=INFO",
                "--pool=prefork",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
            env=self.worker_env(index),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        worker = WorkerProcess(index, proc)
        threading.Thread(target=self._pump, args=(worker,), daemon=True).start()
        return worker

    def _pump(self, worker: WorkerProcess) -> None:
        """Keep the worker's output in memory and in ``<data dir>/logs/worker-<pid>.log``."""
        from checkpoint_pg.embedded import data_dir

        assert worker.proc.stdout is not None
        folder = data_dir() / "logs"
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / f"worker-{worker.pid}.log", "w") as log_file:
            for line in worker.proc.stdout:
                worker.log.append(line.rstrip())
                log_file.write(line)
                log_file.flush()
                if self.echo:
                    sys.stdout.write(f"[w{worker.index}] {line}")
                    sys.stdout.flush()
                if " ready." in line:
                    worker.ready.set()

    def restart_worker(self, index: int) -> WorkerProcess:
        """Start a fresh worker in slot ``index`` (after killing the old one)."""
        new = self._spawn(index)
        if not new.ready.wait(self.startup_timeout):
            raise StartupError(
                f"restarted worker {index} (pid {new.pid}) not ready in "
                f"{self.startup_timeout}s; its log:\n" + "\n".join(new.log[-40:])
            )
        self.workers[index] = new
        return new

    def kill_worker(self, index: int, sig: int = signal.SIGKILL) -> None:
        """Kill a worker's whole process group (main process and its pool children)."""
        w = self.workers[index]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(w.pid, sig)
        w.proc.wait(timeout=30)

    def stop(self) -> None:
        for w in self.workers:
            if w.proc.poll() is None:
                try:
                    os.killpg(w.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
        for w in self.workers:
            try:
                w.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(w.pid, signal.SIGKILL)
                w.proc.wait(timeout=10)
        self.workers = []

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def embedded(what: str, path: Path, start: Callable[[], str]) -> str:
    """Start (or join) an embedded service, saying so on stderr with where it lives."""
    url = start()
    sys.stderr.write(f"graphruntime: using the embedded {what} in {path} (development only)\n")
    return url
