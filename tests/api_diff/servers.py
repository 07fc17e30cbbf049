"""The two servers the API tests talk to, as processes stopped by their pids: `graphrun
serve` for a cluster, and `langgraph dev` (the reference, dev/test only)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

APP = Path(__file__).resolve().parent / "app"
CONFIG = APP / "langgraph.json"
REFERENCE_CONFIG = APP / "langgraph.reference.json"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ok(url: str, proc: subprocess.Popen[bytes], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server at {url} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the server at {url} did not answer within {timeout}s")


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


class Server:
    """A server process and its URL."""

    def __init__(self, proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
        self.proc = proc
        self.url = url
        self.log = log


def start_serve(env: Mapping[str, str], port: int | None = None, log: Path | None = None) -> Server:
    """`graphrun serve` for the cluster whose environment is ``env``."""
    port = port or free_port()
    log = log or Path(env.get("GRAPHRUNTIME_DATA_DIR", "/tmp")) / f"serve-{port}.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "workers.cli",
                "serve",
                "--config",
                str(CONFIG),
                "--port",
                str(port),
            ],
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = Server(proc, f"http://127.0.0.1:{port}", log)
    try:
        wait_ok(server.url, proc)
    except RuntimeError:
        stop(proc)
        raise RuntimeError(
            f"graphrun serve did not start; its log:\n{log.read_text()[-4000:]}"
        ) from None
    return server


@contextlib.contextmanager
def serve(env: Mapping[str, str]) -> Iterator[Server]:
    server = start_serve(env)
    try:
        yield server
    finally:
        stop(server.proc)


@contextlib.contextmanager
def reference(log_dir: Path) -> Iterator[Server]:
    """`langgraph dev` on the same graphs (LangGraph's own classes, picked by the config's env)."""
    port = free_port()
    log = log_dir / f"langgraph-dev-{port}.log"
    langgraph = Path(sys.executable).with_name("langgraph")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHRUNTIME_")}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                str(langgraph),
                "dev",
                "--config",
                REFERENCE_CONFIG.name,
                "--port",
                str(port),
                "--no-browser",
                "--no-reload",
            ],
            cwd=APP,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = Server(proc, f"http://127.0.0.1:{port}", log)
    try:
        wait_ok(server.url, proc)
        yield server
    finally:
        stop(proc)
