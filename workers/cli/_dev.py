"""``graphrun dev``: embedded Postgres and Redis plus workers, in the foreground."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING, Annotated, Any, Literal, overload

import typer

from workers.cli._output import console, errors, fail, json_line
from workers.errors import StartupError, WorkerError

if TYPE_CHECKING:
    from workers.local_cluster import LocalCluster


def dev(
    workers: Annotated[int, typer.Option(min=1, help="Worker processes to start.")] = 2,
    concurrency: Annotated[
        int | None,
        typer.Option(
            min=1, help="Pool processes per worker (default: GRAPHRUNTIME_CONCURRENCY, 1)."
        ),
    ] = None,
    graphs: Annotated[
        str | None,
        typer.Option(help="name=module:attribute entries (default: GRAPHRUNTIME_GRAPHS)."),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print the settings that reach it as one JSON line."),
    ] = False,
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            help="A langgraph.json: the workers serve its graphs and `graphrun serve` the "
            "LangGraph Server API for them, as `langgraph dev` does.",
        ),
    ] = None,
    port: Annotated[int, typer.Option(min=1, max=65535, help="The API's port (--config).")] = 2024,
) -> None:
    """Run a development cluster here: embedded Postgres and Redis (under the project's
    .data, or GRAPHRUNTIME_DATA_DIR) and N celery workers, until Ctrl-C stops them all.
    With --config, also the LangGraph Server API on 127.0.0.1:PORT."""
    from workers.cli._worker import use_config
    from workers.local_cluster import LocalCluster
    from workers.settings import load_settings

    use_config(config)  # checked now; the workers and the server read GRAPHRUNTIME_CONFIG
    try:
        settings = load_settings(**({"graphs": graphs} if graphs else {}))
    except WorkerError as exc:
        fail(f"{type(exc).__name__}: {exc}", 2)
    if not settings.graphs and not settings.config:
        fail(
            "no graphs: pass --config langgraph.json or --graphs name=module:attribute, or "
            "set GRAPHRUNTIME_GRAPHS",
            2,
        )
    cluster = LocalCluster(
        settings.graphs,
        workers=workers,
        concurrency=concurrency
        or (settings.concurrency if "concurrency" in settings.model_fields_set else 1),
        pythonpath=[os.getcwd()],
        # the default queue names, so clients and `graphrun` in other shells reach them
        extra_env={
            "GRAPHRUNTIME_COORDINATOR_QUEUE": settings.coordinator_queue,
            "GRAPHRUNTIME_TASK_QUEUE": settings.task_queue,
            "GRAPHRUNTIME_RESUME_QUEUE": settings.resume_queue,
        },
        echo=True,
    )
    stop = threading.Event()

    def interrupted(*_: Any) -> None:
        stop.set()

    failed = False
    server: subprocess.Popen[bytes] | None = None
    previous = signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    try:
        try:
            cluster.start()
            if settings.config:
                server = _start_server(cluster, settings.config, port)
        except RuntimeError as exc:  # a service or worker did not start: 3, as a worker's
            fail(str(exc), 3)
        env = cluster.env
        sock = env["REDIS_URL"].removeprefix("redis+socket://")
        out = errors if as_json else console  # with --json, stdout has only the JSON line
        if as_json:
            json_line(
                {
                    "DATABASE_URL": env["DATABASE_URL"],
                    "REDIS_URL": env["REDIS_URL"],
                    "GRAPHRUNTIME_GRAPHS": settings.graphs,
                    "redis_socket": sock,
                    "resume_queue": settings.resume_queue,
                    "worker_pids": [w.pid for w in cluster.workers],
                    "metrics": _metrics_urls(cluster, bare=True),
                }
            )
        out.print(
            "\n[bold]graphruntime dev cluster[/bold] (development only): "
            f"{workers} workers (pids {', '.join(str(w.pid) for w in cluster.workers)}), "
            f"graphs {settings.graphs or settings.config}\n"
            "In another shell, to reach it:\n"
            f"  export DATABASE_URL='{env['DATABASE_URL']}'\n"
            f"  export REDIS_URL='{env['REDIS_URL']}'\n"
            # clients need no graph code: the workers answer what needs it
            "A resume message, by hand:\n"
            f"  redis-cli -s {sock} LPUSH {settings.resume_queue} "
            '\'{"graph": "G", "thread_id": "T", "resume": "yes", "idempotency_key": "K"}\'\n'
            + _metrics_urls(cluster)
            + (
                f"LangGraph Server API: http://127.0.0.1:{port} (server pid {server.pid}); "
                f"get_client(url='http://127.0.0.1:{port}')\n"
                if server is not None
                else ""
            )
            + "Ctrl-C stops the workers (and the embedded services, if nothing else uses them).",
            highlight=False,
            soft_wrap=True,  # the export lines must paste whole, at any terminal width
        )
        while not stop.wait(0.5):
            if server is not None and server.poll() is not None:
                errors.print(
                    f"the API server exited with {server.returncode}; stopping", style="red"
                )
                failed = True
                break
            dead = [w for w in cluster.workers if w.proc.poll() is not None]
            if dead:
                errors.print(
                    f"worker {dead[0].index} exited with {dead[0].proc.returncode}; stopping",
                    style="red",
                )
                failed = True
                break
    finally:
        signal.signal(signal.SIGINT, previous)
        if server is not None:
            _stop(server)
        cluster.stop()
        errors.print("stopped")
    if failed:
        raise typer.Exit(1)


def _start_server(cluster: LocalCluster, config: str, port: int) -> subprocess.Popen[bytes]:
    """``graphrun serve`` for the cluster, on loopback; up once it answers /ok."""
    import urllib.request

    proc = subprocess.Popen(
        [sys.executable, "-m", "workers.cli", "serve", "--config", config, "--port", str(port)],
        env=cluster.env,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise StartupError(f"graphrun serve exited with {proc.returncode} at start")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ok", timeout=1):
                return proc
        except OSError:
            time.sleep(0.2)
    _stop(proc)
    raise StartupError(f"graphrun serve did not answer on port {port} within 60s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@overload
def _metrics_urls(cluster: LocalCluster) -> str: ...
@overload
def _metrics_urls(cluster: LocalCluster, *, bare: Literal[True]) -> list[str]: ...
def _metrics_urls(cluster: LocalCluster, *, bare: bool = False) -> str | list[str]:
    """Where each worker serves its metrics (GRAPHRUNTIME_METRICS_PORT: one port per worker):
    a banner line, or (``bare``) the URLs."""
    ports = [cluster.worker_env(w.index).get("GRAPHRUNTIME_METRICS_PORT") for w in cluster.workers]
    if not all(ports):
        return [] if bare else ""
    address = cluster.env.get("GRAPHRUNTIME_METRICS_ADDRESS", "0.0.0.0")
    host = "127.0.0.1" if address == "0.0.0.0" else address
    urls = [f"http://{host}:{port}/metrics" for port in ports]
    return urls if bare else f"Metrics (one port per worker): {', '.join(urls)}\n"
