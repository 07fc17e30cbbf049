"""Fail fast on bad configuration: production commands refuse to start, saying why."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(
    args: list[str], env: dict[str, str], timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    base = {k: v for k, v in base.items() if not k.startswith("GRAPHRUNTIME_")}
    base["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        args, env={**base, **env}, capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


def graphrun(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-m", "workers.cli", *args], env or {})


def test_production_commands_refuse_to_start_without_their_services() -> None:
    for command in (["db", "migrate"], ["worker"]):
        out = graphrun(*command)
        assert out.returncode == 2, out
        assert "DATABASE_URL is not set" in out.stderr
        assert "GRAPHRUNTIME_EMBEDDED=1" in out.stderr
    out = graphrun("worker", env={"DATABASE_URL": "postgresql://nowhere/db"})
    assert out.returncode == 2
    assert "REDIS_URL is not set" in out.stderr


def test_a_variable_set_but_empty_is_an_error() -> None:
    for name in ("DATABASE_URL", "REDIS_URL", "GRAPHRUNTIME_GRAPHS"):
        out = graphrun("db", "migrate", env={name: ""})
        assert out.returncode == 2, out
        assert f"{name} set but empty" in out.stderr


def test_embedded_mode_says_so_with_the_path() -> None:
    out = graphrun("db", "migrate", "--embedded")
    assert out.returncode == 0, out.stderr
    assert "using the embedded Postgres in" in out.stderr
    assert "development only" in out.stderr


def test_a_broken_registry_entry_stops_the_worker_at_start() -> None:
    env = {
        "GRAPHRUNTIME_EMBEDDED": "1",
        "GRAPHRUNTIME_GRAPHS": "fan=tests.e2e.graphs:fan_graph,bad=no_such_module:graph",
        "GRAPHRUNTIME_COORDINATOR_QUEUE": "graphruntime.coordinator.broken",
        "GRAPHRUNTIME_TASK_QUEUE": "graphruntime.tasks.broken",
    }
    out = _run(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "workers.app",
            "worker",
            "--pool=prefork",
            "-c",
            "1",
        ],
        env,
    )
    assert out.returncode == 3, out.stderr[-2000:]
    assert "bad=no_such_module:graph cannot be loaded" in out.stderr
    assert "ModuleNotFoundError" in out.stderr
    assert "ready." not in out.stderr
