"""`graphrun` tells the truth on the real cluster: its exit codes say when the broker or the
database is down (naming the host, never a password, without a traceback), a mistyped thread
is not "cancelled", tables fit 80 columns with whole ids on demand, workers are counted as
workers, and a run of a graph no worker serves fails at once with why."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from typing import Any

import pytest

from graphruntime.config import RunnableConfig
from workers.client import GraphClient
from workers.errors import UnknownGraphError
from workers.local_cluster import LocalCluster

SECRET = "s3cret-pw"
CEILING = 90.0


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def graphrun(cluster: LocalCluster, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workers.cli", *args],
        env={
            **os.environ,
            **cluster.env,
            "COLUMNS": "80",
            "GRAPHRUNTIME_CONNECT_TIMEOUT": "2",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=CEILING,
        check=False,
    )


def test_status_with_redis_down_exits_1_and_still_shows_postgres(cluster: LocalCluster) -> None:
    port = closed_port()
    done = graphrun(cluster, "status", REDIS_URL=f"redis://:{SECRET}@127.0.0.1:{port}/0")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "workers alive" in done.stdout  # what Postgres says is still shown
    assert f"REDIS_URL: Redis at 127.0.0.1:{port}/0 does not answer" in done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    as_json = graphrun(cluster, "status", "--json", REDIS_URL=f"redis://127.0.0.1:{port}/0")
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["broker_reachable"] is False


def test_status_with_postgres_down_exits_1_naming_the_host(cluster: LocalCluster) -> None:
    port = closed_port()
    done = graphrun(
        cluster, "status", DATABASE_URL=f"postgresql://app:{SECRET}@127.0.0.1:{port}/orders"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith(
        f"StoreUnavailableError: DATABASE_URL: Postgres at 127.0.0.1:{port}/orders did not "
        "answer within 2s"
    )
    assert len(done.stderr.strip().splitlines()) == 1  # one line, no traceback
    assert SECRET not in done.stdout + done.stderr


def test_status_counts_workers_not_processes(cluster: LocalCluster, client: GraphClient) -> None:
    done = graphrun(cluster, "status", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    status = json.loads(done.stdout)
    assert status["broker_reachable"] is True
    # the session's workers w0 and w1 beat from their main process and their pool process
    host = socket.gethostname()
    live = client.store.live_workers(client.settings.stale_after)
    for node in (f"w0@{host}", f"w1@{host}"):
        assert len([w for w in live if w["node"] == node]) >= 2, live
        assert {tuple(w["graphs"]) for w in live if w["node"] == node} == {
            tuple(sorted(client.registry.names()))
        }
    assert 2 <= status["workers_alive"] < status["worker_processes"]


def test_cancel_of_an_unknown_thread_says_so_and_changes_nothing(
    cluster: LocalCluster, client: GraphClient
) -> None:
    thread_id = f"typo-{uuid.uuid4()}"
    done = graphrun(cluster, "cancel", "--graph", "chain", "--thread", thread_id, "--reason", "x")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"ThreadNotFoundError: Cannot cancel thread {thread_id!r}: no run" in done.stderr
    assert "cancelled (" not in done.stdout
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    assert client.store.runs_of_thread(thread_id, 5) == []
    assert client.saver.get_tuple(config) is None


def test_cancel_of_a_known_thread_still_cancels(
    cluster: LocalCluster, client: GraphClient, thread: Any
) -> None:
    client.invoke("fan", {"n": 2}, thread, timeout=60)  # paused at its interrupt
    tid = thread["configurable"]["thread_id"]
    done = graphrun(cluster, "cancel", "--graph", "fan", "--thread", tid, "--reason", "dup")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"thread {tid} cancelled" in " ".join(done.stdout.split())


def test_tables_fit_80_columns_and_wide_shows_whole_ids(
    cluster: LocalCluster, client: GraphClient
) -> None:
    graph = "chain"
    tid = f"a-rather-long-thread-name-for-an-order-{uuid.uuid4()}"
    handle = client.submit(graph, {"steps": []}, {"configurable": {"thread_id": tid}})
    handle.wait(timeout=60)
    narrow = graphrun(cluster, "runs", "--thread", tid)
    assert narrow.returncode == 0, narrow.stderr
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 80
    assert handle.run_id[:7] + "…" in narrow.stdout
    assert "--wide or --json shows them whole" in narrow.stderr
    wide = graphrun(cluster, "runs", "--thread", tid, "--wide")
    assert wide.returncode == 0, wide.stderr
    (row,) = [line for line in wide.stdout.splitlines() if handle.run_id in line]
    assert tid in row
    for command in (("inbox", "list"), ("inbox", "history", "--graph", graph, "--thread", tid)):
        shown = graphrun(cluster, *command)
        assert shown.returncode == 0, shown.stderr
        table = [x for x in shown.stdout.splitlines() if not x.startswith("next page: ")]
        # the next-page cursor is printed whole on a line of its own, to paste back
        assert all(len(line) <= 80 for line in table), shown.stdout


def test_a_run_of_a_graph_no_worker_serves_fails_at_once(cluster: LocalCluster) -> None:
    """The client knows graph "unserved" (its own GRAPHRUNTIME_GRAPHS), no worker does: the
    run fails with why as soon as the workers' heartbeats show that none serves it (a few
    seconds here), not after GRAPHRUNTIME_UNSERVED_GRAPH_TIMEOUT (600 s)."""
    settings = cluster.settings().model_copy(
        update={
            "graphs": cluster.env["GRAPHRUNTIME_GRAPHS"] + ",unserved=tests.e2e.graphs:chain_graph"
        }
    )
    client = GraphClient.from_env(settings)
    try:
        handle = client.submit(
            "unserved", {"steps": []}, {"configurable": {"thread_id": str(uuid.uuid4())}}
        )
        with pytest.raises(UnknownGraphError, match="No live worker serves graph 'unserved'"):
            handle.wait(timeout=CEILING)
        assert handle.status() == "error"
    finally:
        client.close()


def test_a_run_without_a_thread_id_is_told_it_needs_one(client: GraphClient) -> None:
    with pytest.raises(ValueError, match="A run on the workers needs a thread_id") as caught:
        client.invoke("chain", {"steps": []})
    assert "Checkpointer" not in str(caught.value)


@pytest.mark.parametrize("command", ["serve", "ui"])
def test_a_server_with_postgres_down_exits_3_as_a_worker_does(
    cluster: LocalCluster, command: str, tmp_path: Any
) -> None:
    """`graphrun serve` and `graphrun ui` start services, as `graphrun worker` does: a
    database that does not answer stops them at start with the worker's code, 3, in one
    line naming the setting (2 stays for a bad setting)."""
    config = tmp_path / "langgraph.json"
    config.write_text(json.dumps({"graphs": {"chain": "tests.e2e.graphs:chain_graph"}}))
    port = closed_port()
    args = ("serve", "--config", str(config)) if command == "serve" else ("ui",)
    done = graphrun(
        cluster,
        *args,
        "--port",
        "8797",
        DATABASE_URL=f"postgresql://app:{SECRET}@127.0.0.1:{port}/x",
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stderr.startswith(
        f"StoreUnavailableError: DATABASE_URL: Postgres at 127.0.0.1:{port}/x did not answer"
    ), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1  # one line, no traceback
    assert SECRET not in done.stdout + done.stderr
    bad = graphrun(cluster, *args, "--port", "8797", DATABASE_URL="mysql://nope")
    assert bad.returncode == 2, bad.stdout + bad.stderr
    assert "DATABASE_URL" in bad.stderr


def test_read_only_commands_need_no_redis_url(
    cluster: LocalCluster, client: GraphClient, thread: Any
) -> None:
    """`runs`, `inbox list` and `inbox history` read Postgres only: they run without
    REDIS_URL; what needs the broker (`status`, `inbox resume`) still refuses, exit 2."""
    client.invoke("fan", {"n": 2}, thread, timeout=60)  # paused at its interrupt
    tid = thread["configurable"]["thread_id"]
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "GRAPHRUNTIME_EMBEDDED")}
    env |= {k: v for k, v in cluster.env.items() if k != "REDIS_URL"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "workers.cli", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=CEILING,
            check=False,
        )

    runs = run("runs", "--thread", tid, "--json")
    assert runs.returncode == 0, runs.stderr
    assert [json.loads(line)["status"] for line in runs.stdout.splitlines()] == ["interrupted"]
    waits = run("inbox", "list", "--thread", tid, "--json")
    assert waits.returncode == 0, waits.stderr
    assert {json.loads(line)["thread_id"] for line in waits.stdout.splitlines()} == {tid}
    shown = run("inbox", "history", "--graph", "fan", "--thread", tid, "--json")
    assert shown.returncode == 0, shown.stderr
    for needs_redis in (
        ("status",),
        ("inbox", "resume", "--graph", "fan", "--key", tid, "--item", f"{tid}:x", "--value", "1"),
    ):
        refused = run(*needs_redis)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert refused.stderr.startswith("ConfigurationError: REDIS_URL is not set"), refused.stderr
    assert client.get_state("fan", thread).next == ("approve",)  # nothing was resumed


def test_the_next_page_cursor_pastes_back(cluster: LocalCluster, client: GraphClient) -> None:
    """`inbox list` prints its next-page cursor on one line at 80 columns, so that what a
    person copies from it is the whole cursor, which lists the next page."""
    tids = [f"cursor-{uuid.uuid4()}" for _ in range(2)]
    for tid in tids:
        client.invoke("fan", {"n": 2}, {"configurable": {"thread_id": tid}}, timeout=60)
    first = graphrun(cluster, "inbox", "list", "--graph", "fan", "--limit", "1")
    assert first.returncode == 0, first.stderr
    (line,) = [x for x in first.stdout.splitlines() if x.startswith("next page: --cursor ")]
    cursor = line.removeprefix("next page: --cursor ").strip()
    assert len(cursor) > 80  # it would wrap at 80 columns
    second = graphrun(
        cluster, "inbox", "list", "--graph", "fan", "--limit", "1", "--cursor", cursor
    )
    assert second.returncode == 0, second.stderr
    assert "next page: --cursor " in second.stdout
