"""The operator's CLI on a real cluster: status, runs, dead letters, and graphrun dev."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from tests.e2e.fault_graphs import redis_for, resume_message
from tests.e2e.graphrun_process import graphrun
from tests.e2e.test_cli import _graphrun
from workers.client import GraphClient
from workers.embedded import _alive
from workers.local_cluster import LocalCluster

ROOT = Path(__file__).resolve().parents[2]


def _json_lines(out: subprocess.CompletedProcess[str]) -> list[Any]:
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def _until(check: Any, timeout: float = 60.0) -> Any:
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s")


def test_status_and_runs(cluster: LocalCluster, client: GraphClient, thread: Any) -> None:
    client.invoke("chain", {"steps": []}, thread, timeout=60)
    (status,) = _json_lines(_graphrun(cluster, "status", "--json"))
    assert status["workers_alive"] >= 2
    assert set(status["queues"]) == {
        cluster.env["GRAPHRUNTIME_COORDINATOR_QUEUE"],
        cluster.env["GRAPHRUNTIME_TASK_QUEUE"],
    }
    assert status["dead_letters"] >= 0
    tid = thread["configurable"]["thread_id"]
    rows = _json_lines(_graphrun(cluster, "runs", "--thread", tid, "--json"))
    assert [(r["graph"], r["status"]) for r in rows] == [("chain", "success")]
    recent = _json_lines(
        _graphrun(
            cluster, "runs", "--graph", "chain", "--status", "success", "--since", "10m", "--json"
        )
    )
    assert tid in {r["thread_id"] for r in recent}
    assert {r["status"] for r in recent} == {"success"}
    bad = _graphrun(cluster, "runs", "--status", "nonsense")
    assert bad.returncode == 2
    assert "--status must be one of" in bad.stderr


def test_dead_letters_list_replay_and_purge(
    cluster: LocalCluster, client: GraphClient, thread: Any
) -> None:
    redis = redis_for(cluster.env["REDIS_URL"])
    queue = cluster.env["GRAPHRUNTIME_RESUME_QUEUE"]
    tid = thread["configurable"]["thread_id"]
    # a resume for a thread that is not paused yet: refused, dead-lettered
    early = resume_message("fan", tid, "ship", key=f"early-{uuid.uuid4()}")
    poison = "{not json " + uuid.uuid4().hex
    redis.lpush(queue, early)
    redis.lpush(queue, poison)

    def both_listed() -> dict[str, Any] | None:
        out = _graphrun(cluster, "dead", "list", "--json", "--limit", "1000")
        found = {e["message"]: e for e in _json_lines(out) if e["message"] in (early, poison)}
        return found if len(found) == 2 else None

    listed = _until(both_listed)
    assert "InvalidResumeError" in listed[early]["error"]
    # the thread pauses now; the early resume, replayed, applies
    client.invoke("fan", {"n": 2}, thread, timeout=60)
    sha = listed[early]["sha256"][:16]
    replayed = _json_lines(_graphrun(cluster, "dead", "replay", "--sha256", sha, "--json"))
    assert replayed == [{"replayed": 1, "skipped": []}]
    _until(lambda: client.get_state("fan", thread).values.get("decision") == "ship")
    purged = _json_lines(
        _graphrun(cluster, "dead", "purge", "--sha256", listed[poison]["sha256"], "--json")
    )
    assert purged == [{"purged": 1}]
    left = {e["message"] for e in _json_lines(_graphrun(cluster, "dead", "list", "--json"))}
    assert early not in left
    assert poison not in left
    none = _graphrun(cluster, "dead", "purge", "--sha256", "ffffffffffff")
    assert none.returncode == 1
    assert "no dead letter" in none.stderr
    neither = _graphrun(cluster, "dead", "replay")
    assert neither.returncode == 2


def test_graphrun_dev_runs_a_cluster_until_interrupted(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(
        GRAPHRUNTIME_DATA_DIR=str(tmp_path / "data"),
        GRAPHRUNTIME_GRAPHS="chain=tests.e2e.graphs:chain_graph",
        COLUMNS="300",
    )
    with graphrun("dev", "--workers", "1", "--json", env=env) as dev:
        dev.read_until("Ctrl-C stops", timeout=120)
        banner = "".join(dev.lines)
        sock = tmp_path / "data" / "redis" / "redis.sock"
        assert f"redis-cli -s {sock} LPUSH graphruntime:resume" in banner
        pids = [int(p) for p in banner.split("(pids ", 1)[1].split(")", 1)[0].split(", ")]
        (settings_line,) = [json.loads(line) for line in dev.lines if line.startswith("{")]
        assert settings_line["worker_pids"] == pids
        assert settings_line["REDIS_URL"] == f"redis+socket://{sock}"
        # a client in "another shell" reaches it with the printed settings
        from workers.settings import Settings

        url = settings_line["DATABASE_URL"]
        assert f"export DATABASE_URL='{url}'" in banner
        client = GraphClient.from_env(
            Settings(
                database_url=url,
                redis_url=f"redis+socket://{sock}",
                graphs="chain=tests.e2e.graphs:chain_graph",
            )
        )
        try:
            out = client.invoke(
                "chain", {"steps": []}, {"configurable": {"thread_id": "d"}}, timeout=60
            )
            assert out["steps"]
        finally:
            client.close()
        assert dev.stop(signal.SIGINT) == 0
        for pid in pids:
            _until(lambda pid=pid: not _pid_alive(pid), timeout=30)
        _until(lambda: not _alive(sock), timeout=30)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_graphrun_worker_takes_a_node_name_and_a_role(
    cluster: LocalCluster, client: GraphClient, thread: Any
) -> None:
    name = f"probe{uuid.uuid4().hex[:6]}"
    env = {**os.environ, **cluster.env, "COLUMNS": "300"}
    env.pop("GRAPHRUNTIME_METRICS_PORT", None)  # the cluster's workers hold its ports
    env["GRAPHRUNTIME_CONCURRENCY"] = "1"  # not --concurrency: the setting sets it
    args = ("worker", "--role", "coordinator", "--hostname", f"{name}@%h")
    with graphrun(*args, "--json", env=env) as worker:
        ready = json.loads(worker.read_until(" ready."))  # --json: Celery's lines too
        assert ready["event"].startswith(f"{name}@"), ready
        # the node answers by its name, and consumes only the coordinator queue
        from workers.app import CeleryBroker

        assert isinstance(client.broker, CeleryBroker)
        inspect = client.broker.app.control.inspect(
            destination=[f"{name}@{socket.gethostname()}"], timeout=2
        )
        # a busy machine may answer the first broadcast late: ask until it answers
        replies = _until(lambda: inspect.active_queues(), timeout=60)
        queues = {q["name"] for qs in replies.values() for q in qs}
        assert queues == {cluster.env["GRAPHRUNTIME_COORDINATOR_QUEUE"]}, replies
        stats = _until(lambda: inspect.stats(), timeout=60)
        assert [s["pool"]["max-concurrency"] for s in stats.values()] == [1], stats
        assert client.invoke("chain", {"steps": []}, thread, timeout=60)["steps"]
        assert worker.stop() == 0


def test_hostile_inbox_filters_exit_2_with_the_reason(cluster: LocalCluster) -> None:
    """A filter nested 5,000 deep, NUL characters, an age of a million years: exit 2
    and one line saying what is wrong, never a traceback."""
    deep = '{"x":' * 5000 + "{}" + "}" * 5000
    cases = [
        (["--where", deep], "nest"),
        (["--where", '{"team": "o\\u0000ps"}'], "NUL"),
        (["--older-than", "99999999999d"], "older-than"),
        (["--cursor", "not-a-cursor"], "cursor"),
    ]
    for args, reason in cases:
        out = _graphrun(cluster, "inbox", "list", "--graph", "ticket", *args)
        assert out.returncode == 2, (args, out.stderr)
        assert reason in out.stderr, (args, out.stderr)
        assert "Traceback" not in out.stderr, out.stderr
