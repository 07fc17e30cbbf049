"""The embedded Postgres: DATABASE_URL wins; otherwise a server that stops with its last user."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from checkpoint_pg import embedded

pytestmark = pytest.mark.integration

_CHILD = """
import json, os, psycopg
from checkpoint_pg.embedded import database_url
url = database_url()
with psycopg.connect(url) as conn:
    pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
postmaster = int(open(os.path.join(os.environ["GRAPHRUNTIME_DATA_DIR"], "pg", "postmaster.pid"))
                 .readline())
print(json.dumps({"url": url, "postmaster": postmaster}))
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A stopped child of init may linger as a zombie for a moment.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _run_child(data_dir: Path) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["GRAPHRUNTIME_DATA_DIR"] = str(data_dir)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _wait_gone(pid: int) -> bool:
    deadline = time.monotonic() + 15
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_database_url_prefers_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://example/db")
    assert embedded.database_url() == "postgresql://example/db"


def test_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GRAPHRUNTIME_DATA_DIR", str(tmp_path / "data"))
    assert embedded.data_dir() == tmp_path / "data"
    monkeypatch.delenv("GRAPHRUNTIME_DATA_DIR")
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text("")
    monkeypatch.chdir(project / "src")
    assert embedded.data_dir() == project / ".data"


@pytest.mark.slow
def test_embedded_server_stops_when_its_last_process_exits(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first = _run_child(data_dir)
    assert "host=" in str(first["url"])
    postmaster = first["postmaster"]
    assert isinstance(postmaster, int)
    assert _wait_gone(postmaster), f"postgres {postmaster} outlived the only process using it"

    # A process killed without its exit hook leaves its pid registered; the next
    # start forgets it, so the server still stops when the last live user exits.
    handles = data_dir / "pg" / ".handle_pids.json"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    handles.write_text(json.dumps([int(dead.stdout)]))
    second = _run_child(data_dir)
    postmaster = second["postmaster"]
    assert isinstance(postmaster, int)
    assert _wait_gone(postmaster), "a dead process's handle kept the server alive"
