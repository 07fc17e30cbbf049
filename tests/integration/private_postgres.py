"""A Postgres server of our own (pgserver's binaries, its own data directory) to crash.

Tests that restart or kill Postgres use one of these, never the shared server. A crash
is real: every process of the server frozen (SIGSTOP), then killed (SIGKILL), then the
server started again on the same data directory (crash recovery). Linux only (/proc).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql


class PrivatePostgres:
    """The server of ``pg`` (a pgserver.PostgresServer), restarted and crashed at will."""

    def __init__(self, pg: Any) -> None:
        self.pg = pg
        self.url: str = pg.get_uri()
        self._socket_dir = pg.get_postmaster_info().socket_dir

    def configure(self, settings: Mapping[str, str]) -> None:
        """Server settings that take effect on a reload (``ALTER SYSTEM``: kept across
        restarts and crashes)."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            for name, value in settings.items():
                # ALTER SYSTEM takes no parameters: composed, the name quoted, the value a
                # literal
                query = sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), value)
                conn.execute(query)
            conn.execute("SELECT pg_reload_conf()")
            for name, value in settings.items():
                _wait_until(
                    lambda n=name, v=value: _shows(conn, n, v),
                    timeout=10,
                    what=f"postgres to take {name} = {value}",
                )

    def postmaster_pid(self) -> int | None:
        """The running server's postmaster (None: none runs)."""
        try:
            pid = int((self.pg.pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
        except (FileNotFoundError, ValueError):
            return None
        return pid if _alive(pid) else None

    def processes(self) -> set[int]:
        """The running server's processes: the postmaster and its children."""
        pid = self.postmaster_pid()
        return set() if pid is None else {pid} | _children(pid)

    @contextmanager
    def wal_writer_held(self) -> Iterator[None]:
        """The WAL writer frozen (SIGSTOP) for the block: an async commit's WAL then stays
        in shared memory until a durable commit writes it, or a crash takes it back. (A
        running WAL writer also writes it whenever a WAL page fills or it wakes with
        nothing else to do, so what a crash takes back would depend on the WAL's layout.)
        """
        pid = self.postmaster_pid()
        if pid is None:
            raise RuntimeError("no postgres server runs")
        with psycopg.connect(self.url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'"
            ).fetchone()
        if row is None:
            raise RuntimeError("the server runs no WAL writer")
        writer = int(row[0])
        _signal(writer, signal.SIGSTOP)
        try:
            yield
        finally:
            stat = _proc_stat(str(writer))
            if stat is not None and stat[1] == pid:  # not crashed meanwhile: thaw it
                _signal(writer, signal.SIGCONT)

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every connection is cut, the server comes back on the
        same socket with the same data (pg_ctl reuses the options it was started with)."""
        self._pg_ctl("-w", "-m", "fast", "-l", str(self.pg.log), "restart", timeout=60)

    def crash(
        self, *, stopped_for: float = 0.0, down: float = 0.0, known: Collection[int] = ()
    ) -> None:
        """Kill the server hard, then start it again on the same data: crash recovery.

        Every process of the server is frozen (SIGSTOP), then killed (SIGKILL): nothing
        shuts down, and WAL still in shared memory (async commits the WAL writer had not
        written) is gone. ``stopped_for``: seconds it stays frozen first (a server that
        hangs, its clients waiting on it). ``down``: seconds before the start.
        ``known``: its processes as :meth:`processes` found them a moment ago, frozen at
        once, before the scan for the others (a scan takes milliseconds).
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
        _wait_until(
            lambda: not any(_proc_stat(str(each)) for each in frozen),
            timeout=60,
            what="the killed postgres processes to be reaped",
        )
        time.sleep(down)
        self.start()

    def start(self) -> None:
        """Start the server on its data directory, with the options pgserver gave it."""
        self._pg_ctl(
            "-w",
            *("-o", '-h ""', "-o", f"-k {self._socket_dir}"),
            *("-l", str(self.pg.log), "start"),
        )

    def stop(self) -> None:
        """Stop whatever server runs on the data directory now: pgserver's cleanup stops
        only the one it started, which a restart or a crash replaced."""
        pid = self.postmaster_pid()
        if pid is not None:
            self._pg_ctl("-w", "-m", "immediate", "stop", timeout=60)
            # reaped, so that pgserver's cleanup does not take it for a running server
            _wait_until(lambda: _proc_stat(str(pid)) is None, timeout=30, what="postgres to exit")

    def _pg_ctl(self, *args: str, timeout: float = 120) -> None:
        from pgserver._commands import POSTGRES_BIN_PATH

        done = subprocess.run(
            [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(self.pg.pgdata), *args],
            user=self.pg.system_user,
            timeout=timeout,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            log = self.pg.log
            tail = log.read_text(errors="replace").splitlines()[-30:] if log.exists() else []
            raise RuntimeError(
                f"pg_ctl {' '.join(args)} failed ({done.returncode}): {done.stdout}{done.stderr}"
                + "\nthe server's log ends:\n"
                + "\n".join(tail)
            )


@contextmanager
def private_postgres(
    settings: Mapping[str, str] | None = None, *, folder: Path | None = None
) -> Iterator[PrivatePostgres]:
    """A fresh server in ``folder`` (default: a temporary one), with ``settings``; stopped
    and deleted at exit."""
    from pgserver.postgres_server import get_server

    own = folder is None
    root = Path(tempfile.mkdtemp(prefix="gr-pg-")) if folder is None else folder
    pg = get_server(root / "pg", cleanup_mode="delete")
    server = PrivatePostgres(pg)
    try:
        if settings:
            server.configure(settings)
        yield server
    finally:
        server.stop()
        pg.cleanup()
        if own:
            shutil.rmtree(root, ignore_errors=True)


def _shows(conn: psycopg.Connection[Any], name: str, value: str) -> bool:
    row = conn.execute("SELECT current_setting(%s)", (name,)).fetchone()
    return row is not None and row[0] == value


def _wait_until(predicate: Any, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


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
