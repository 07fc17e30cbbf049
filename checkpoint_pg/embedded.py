"""A real Postgres for development and tests, without installing one.

:func:`database_url` returns ``DATABASE_URL`` when it is set (production, or CI
pointing at a service). Otherwise it starts an embedded server once per process
with the pip package ``pgserver`` in ``$GRAPHRUNTIME_DATA_DIR/pg`` (default:
``<project>/.data/pg``) and returns its URL.

pgserver shares one server per data directory between processes: each process
that asks registers its pid in the data directory, and the last one to exit
stops the server (an ``atexit`` hook). It runs as root too: it then creates a
``pgserver`` system user and runs postgres as that user. The server listens on
a Unix socket inside the data directory only, never on TCP.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from checkpoint_pg.errors import EmbeddedPostgresError

__all__ = ("data_dir", "database_url", "embedded_url", "scratch_database")

_lock = threading.Lock()
_server: Any = None  # pgserver.PostgresServer, kept alive for the whole process


def data_dir() -> Path:
    """Where embedded services keep their data: ``$GRAPHRUNTIME_DATA_DIR`` or ``<project>/.data``.

    The project is the nearest directory at or above the working directory
    that holds a ``pyproject.toml``; without one, the working directory.
    """
    configured = os.environ.get("GRAPHRUNTIME_DATA_DIR")
    if configured:
        return Path(configured).expanduser().resolve()
    cwd = Path.cwd().resolve()
    for folder in (cwd, *cwd.parents):
        if (folder / "pyproject.toml").is_file():
            return folder / ".data"
    return cwd / ".data"


def database_url() -> str:
    """``DATABASE_URL`` if set, else the URL of the embedded server (started on first use)."""
    return os.environ.get("DATABASE_URL") or embedded_url()


def embedded_url(database: str = "postgres") -> str:
    """Start the embedded server if this process has not yet, and return a URL to ``database``."""
    global _server
    with _lock:
        if _server is None:
            _server = _start(data_dir() / "pg")
        url: str = _server.get_uri(database)
        return url


def _start(pgdata: Path) -> Any:
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        # platformdirs warns at import when XDG_RUNTIME_DIR is unset (CI, containers);
        # pgserver then uses /tmp/runtime-<uid>, which is fine for its lock file.
        warnings.simplefilter("ignore")
        try:
            # Optional dependency, imported on first use.
            from pgserver.postgres_server import PostgresServer, get_server
        except ImportError as exc:
            raise EmbeddedPostgresError(
                "No DATABASE_URL is set and the embedded Postgres is unavailable: "
                "install it with `pip install 'graphruntime[postgres]'` (package pgserver), "
                "or set DATABASE_URL=postgresql://user:password@host:5432/dbname"
            ) from exc
    try:
        return _get_server(pgdata, get_server, PostgresServer._lock)
    except Exception:  # noqa: BLE001 - pgserver raises bare errors (pg_ctl's exit status)
        time.sleep(1.0)  # pg_ctl gives up early on a loaded machine: once more
    try:
        return _get_server(pgdata, get_server, PostgresServer._lock)
    except Exception as exc:
        raise EmbeddedPostgresError(
            f"The embedded Postgres in {pgdata} did not start: {exc}. Its log is "
            f"{pgdata / 'log'}; set DATABASE_URL to use a server of your own"
        ) from exc


def _get_server(pgdata: Path, get_server: Any, lock: Any) -> Any:
    if pgdata.exists():
        with lock:
            _forget_dead_handles(pgdata)
    return get_server(pgdata, cleanup_mode="stop")


def _forget_dead_handles(pgdata: Path) -> None:
    """Drop pids of processes that died without their exit hook (SIGKILL, OOM).

    pgserver stops the shared server when the *last* registered process exits;
    a pid that can never unregister itself would keep the server alive forever.
    """
    handles = pgdata / ".handle_pids.json"
    try:
        pids = json.loads(handles.read_text())
    except (OSError, ValueError):
        return
    if not isinstance(pids, list):
        return
    alive = [pid for pid in pids if isinstance(pid, int) and _is_alive(pid)]
    if alive != pids:
        handles.write_text(json.dumps(alive))


def _is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def scratch_database(server_url: str, prefix: str) -> Iterator[str]:
    """A new empty database on ``server_url``, dropped on exit; yields its URL.

    For tests and benchmarks that need tables of their own next to others' on one
    server (the embedded one, or ``DATABASE_URL``'s).
    """
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_conninfo(server_url, dbname=name)
    finally:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
