"""A `graphrun` command run as its own process group, read until it says it is up, and
stopped by its pid (SIGKILL for the whole group if it does not stop in time)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class GraphrunProcess:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []

    def read_until(self, marker: str, timeout: float = 90.0) -> str:
        """Output lines until one holds ``marker`` (or the process ends, or ``timeout``)."""
        assert self.proc.stdout is not None
        give_up = time.monotonic() + timeout
        while time.monotonic() < give_up:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            if marker in line:
                return line
        raise AssertionError(f"no {marker!r} in its output:\n{''.join(self.lines)[-3000:]}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)


@contextmanager
def graphrun(*args: str, env: Mapping[str, str]) -> Iterator[GraphrunProcess]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "workers.cli", *args],
        env={**env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        yield GraphrunProcess(proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
