"""Workers that cannot work do not start: real `graphrun worker` (and `celery worker`)
processes against a malformed URL, an unreachable Postgres or Redis, or a database whose
schema is behind the code exit non-zero within seconds, naming the setting and where it
points (never a password), never say "ready", and fail the health check while they wait.

Every wait below is a generous ceiling (a subprocess timeout), not a timing assertion.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from checkpoint_pg.embedded import scratch_database
from tests.e2e.graphrun_process import graphrun
from workers.local_cluster import LocalCluster

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s3cret-pw"
CEILING = 90.0  # seconds any of these workers may take to give up, however loaded the machine


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def worker_env(cluster: LocalCluster, **overrides: str) -> dict[str, str]:
    env = {**os.environ, **cluster.env, "COLUMNS": "300", "PYTHONPATH": str(ROOT)}
    env.pop("GRAPHRUNTIME_METRICS_PORT", None)
    env["GRAPHRUNTIME_CONNECT_TIMEOUT"] = "2"
    env.update(overrides)
    return env


def run_worker(env: Mapping[str, str], *, celery: bool = False) -> subprocess.CompletedProcess[str]:
    name = f"ff{uuid.uuid4().hex[:6]}@%h"
    command = (
        ["-m", "celery", "-A", "workers.app", "worker", "--concurrency=1", f"--hostname={name}"]
        if celery
        else ["-m", "workers.cli", "worker", "--concurrency", "1", "--hostname", name]
    )
    return subprocess.run(
        [sys.executable, *command],
        env=dict(env),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=CEILING,
        check=False,
    )


def said(done: subprocess.CompletedProcess[str]) -> str:
    return " ".join((done.stdout + done.stderr).split())  # rich and logging wrap lines


def assert_refused(done: subprocess.CompletedProcess[str], code: int, *parts: str) -> None:
    text = said(done)
    assert done.returncode == code, text[-3000:]
    for part in parts:
        assert part in text, text[-3000:]
    assert " ready." not in text
    assert SECRET not in text


@pytest.mark.parametrize("celery", [False, True], ids=["graphrun", "celery"])
def test_an_unreachable_postgres_stops_the_worker_naming_it(
    cluster: LocalCluster, celery: bool
) -> None:
    port = closed_port()
    env = worker_env(cluster, DATABASE_URL=f"postgresql://app:{SECRET}@127.0.0.1:{port}/orders")
    assert_refused(
        run_worker(env, celery=celery),
        3,
        f"DATABASE_URL: Postgres at 127.0.0.1:{port}/orders did not answer within 2s",
        "GRAPHRUNTIME_CONNECT_TIMEOUT",
    )


def test_an_unreachable_redis_stops_the_worker_naming_it(cluster: LocalCluster) -> None:
    port = closed_port()
    env = worker_env(cluster, REDIS_URL=f"redis://:{SECRET}@127.0.0.1:{port}/0")
    assert_refused(
        run_worker(env), 3, f"REDIS_URL: Redis at 127.0.0.1:{port}/0 did not answer within 2s"
    )


@pytest.mark.parametrize(
    ("setting", "value", "says"),
    [
        ("DATABASE_URL", f"postgres//app:{SECRET}@db/orders", "DATABASE_URL is not a Postgres URL"),
        (
            "DATABASE_URL",
            f"postgresql://app:{SECRET}@db:fivefour/orders",
            "DATABASE_URL: port 'fivefour' is not a number",
        ),
        ("REDIS_URL", f"amqp://app:{SECRET}@broker//", "REDIS_URL must start with redis://"),
        ("REDIS_URL", f"redis://:{SECRET}@broker:port/0", "REDIS_URL is malformed"),
    ],
)
def test_a_malformed_url_stops_the_worker_naming_it(
    cluster: LocalCluster, setting: str, value: str, says: str
) -> None:
    assert_refused(run_worker(worker_env(cluster, **{setting: value})), 2, says)


@pytest.fixture
def unmigrated(cluster: LocalCluster) -> Iterator[str]:
    with scratch_database(cluster.env["DATABASE_URL"], "graphruntime_unmigrated") as url:
        yield url


def test_a_schema_behind_the_code_stops_the_worker(cluster: LocalCluster, unmigrated: str) -> None:
    # `celery -A workers.app worker` goes through the same check (the unreachable-Postgres
    # test above runs both)
    done = run_worker(worker_env(cluster, DATABASE_URL=unmigrated))
    assert_refused(
        done,
        3,
        "DATABASE_URL: the database at",
        "is not migrated (checkpoint_pg at version 0 of",
        "run `graphrun db migrate` first",
    )


def test_the_health_check_fails_while_a_worker_waits_for_postgres(cluster: LocalCluster) -> None:
    """The check deploy/ and docker-compose.yml use (a Celery ping of the worker's node)
    answers for a ready worker, and fails for one still waiting on an unreachable Postgres,
    which then exits on its own."""
    host = socket.gethostname()

    def health(node: str) -> subprocess.Popen[str]:
        ping = ["inspect", "ping", "-d", node, "--timeout", "3"]
        return subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workers.app", *ping],
            env=worker_env(cluster),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    name = f"waiting{uuid.uuid4().hex[:6]}"
    env = worker_env(
        cluster,
        DATABASE_URL=f"postgresql://app:{SECRET}@127.0.0.1:{closed_port()}/orders",
        GRAPHRUNTIME_CONNECT_TIMEOUT="15",
    )
    started = time.monotonic()
    with graphrun("worker", "--concurrency", "1", "--hostname", f"{name}@%h", env=env) as worker:
        # both at once: the session's ready worker w0, and the one waiting for Postgres
        ready, waiting = health(f"w0@{host}"), health(f"{name}@{host}")
        ready_said, _ = ready.communicate(timeout=CEILING)
        waiting_said, _ = waiting.communicate(timeout=CEILING)
        assert worker.proc.poll() is None, "the worker is still waiting for Postgres"
        assert ready.returncode == 0, ready_said
        assert waiting.returncode != 0, waiting_said
        assert worker.proc.wait(timeout=CEILING) == 3
        output = "".join(worker.lines) + (worker.proc.stdout.read() if worker.proc.stdout else "")
    assert " ready." not in output
    assert "did not answer within 15s" in " ".join(output.split())
    assert time.monotonic() - started < CEILING
