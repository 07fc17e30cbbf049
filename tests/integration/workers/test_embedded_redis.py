"""The embedded Redis is shared: the last process to leave stops it, not the first."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workers.embedded import _alive

pytestmark = pytest.mark.integration

JOIN = (
    "import sys; from workers.embedded import redis_url; "
    "print(redis_url(), flush=True); sys.stdin.read()"
)


def _user(data: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "GRAPHRUNTIME_DATA_DIR": str(data)}
    env.pop("REDIS_URL", None)
    return subprocess.Popen(
        [sys.executable, "-c", JOIN],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _leave(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0


def test_stopping_one_user_leaves_the_server_to_the_others(tmp_path: Path) -> None:
    first, second = _user(tmp_path), _user(tmp_path)
    try:
        assert first.stdout is not None
        assert second.stdout is not None
        url = first.stdout.readline().strip()
        assert second.stdout.readline().strip() == url
        sock = tmp_path / "redis" / "redis.sock"
        assert url == f"redis+socket://{sock}"
        assert sorted(p.name for p in (tmp_path / "redis" / "users").iterdir()) == sorted(
            [str(first.pid), str(second.pid)]
        )
        _leave(first)  # the one that started it
        assert _alive(sock)
        _leave(second)
        give_up = time.monotonic() + 10
        while _alive(sock) and time.monotonic() < give_up:
            time.sleep(0.05)
        assert not _alive(sock)
    finally:
        for proc in (first, second):
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


def test_a_user_that_died_does_not_keep_the_server(tmp_path: Path) -> None:
    crashed, other = _user(tmp_path), _user(tmp_path)
    try:
        assert crashed.stdout is not None
        assert other.stdout is not None
        crashed.stdout.readline()
        other.stdout.readline()
        crashed.kill()  # no atexit: its pid file stays behind
        crashed.wait(timeout=10)
        sock = tmp_path / "redis" / "redis.sock"
        _leave(other)
        give_up = time.monotonic() + 10
        while _alive(sock) and time.monotonic() < give_up:
            time.sleep(0.05)
        assert not _alive(sock)
    finally:
        for proc in (crashed, other):
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
