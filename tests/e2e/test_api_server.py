"""`graphrun serve` on real workers: the LangGraph Server API as langgraph-sdk, the JS SDK
and RemoteGraph use it, compared with `langgraph dev`, and through faults (a worker
killed mid-run, the server restarted mid-stream, two servers on one database)."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from tests.api_diff import normalize, scenario, servers
from workers.local_cluster import LocalCluster

ROOT = Path(__file__).resolve().parents[2]

EXPECTED_DIFFERENCES = {
    "threads.get_state.checkpoint": (
        "a state read at a checkpoint: langgraph dev echoes the requested checkpoint without "
        "its checkpoint_ns; graphrun serve answers it whole, as for the head state"
    ),
    "runs.wait.resume.nothing_pending": (
        "a resume of a thread that waits on nothing: LangGraph runs it (the value is "
        "dropped); graphrun serve refuses it with 400 and queues nothing"
    ),
}


WEBHOOK_SECRET = "s3cret-s3cret-s3cret"


def server_env(cluster: LocalCluster, data: Path) -> dict[str, str]:
    """A server's environment: every server on the database signs webhooks alike (any of
    them may deliver a run's)."""
    return {
        **cluster.env,
        "GRAPHRUNTIME_DATA_DIR": str(data),
        "GRAPHRUNTIME_WEBHOOK_SECRET": WEBHOOK_SECRET,
    }


@pytest.fixture(scope="module")
def api(
    cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[servers.Server]:
    env = server_env(cluster, tmp_path_factory.mktemp("serve"))
    with servers.serve(env) as server:
        yield server


@pytest.fixture(scope="module")
def sdk(api: servers.Server) -> Any:
    return get_sync_client(url=api.url)


def test_differential_scenario_against_langgraph_dev(api: servers.Server, tmp_path: Path) -> None:
    """Every endpoint of the scenario answers as langgraph dev does, but for the listed
    differences (README: differences of graphrun serve)."""
    with servers.reference(tmp_path) as reference:
        theirs = scenario.run(reference.url)
    ours = scenario.run(api.url)
    found = {name: (a, b) for name, a, b in normalize.compare(ours, theirs)}
    unexpected = {k: v for k, v in found.items() if k not in EXPECTED_DIFFERENCES}
    assert not unexpected, json.dumps(unexpected, indent=1, default=str)[:6000]
    assert set(found) == set(EXPECTED_DIFFERENCES), "a listed difference is gone: update the list"


def test_js_sdk_from_npm(api: servers.Server) -> None:
    """@langchain/langgraph-sdk 2.x in node: threads, a streamed run that interrupts, the
    resume, search by status, history and a join of a resumable stream by its last id."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed (apt-get install nodejs npm)")
    prefix = ROOT / ".data" / "js-sdk"
    if not (prefix / "node_modules" / "@langchain" / "langgraph-sdk").is_dir():
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                "@langchain/langgraph-sdk@2",
            ],
            check=True,
            timeout=300,
            capture_output=True,
        )
    # an ES module finds its packages from where it lives: beside node_modules
    script = prefix / "scenario.mjs"
    shutil.copyfile(ROOT / "tests" / "api_diff" / "js" / "scenario.mjs", script)
    done = subprocess.run(
        [node, str(script), api.url],
        env={"PATH": "/usr/bin:/bin"},
        cwd=prefix,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["interrupted"]["status"] == "interrupted"
    assert report["resumed"]["answer"] == "yes"
    assert report["events"][0] == "metadata"
    assert report["rejoined"] == report["tail"], report
    assert report["found"] == 1
    assert report["history"] >= 3
    assert report["stopped"] == "success"  # the run under way ended before the cancel


def test_remote_graph_as_a_subgraph(api: servers.Server) -> None:
    """LangGraph's RemoteGraph, a node of a LangGraph parent graph, runs the deployment's
    graphs on our workers: the result, streamed subgraph chunks, an interrupt surfacing in
    the parent (as with langgraph dev, a resume of the parent sends the node's input
    again: RemoteGraph does not forward resumes)."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, StateGraph
    from langgraph.pregel.remote import RemoteGraph

    from tests.api_diff.app.graphs import State

    def parent_of(graph_id: str) -> Any:
        builder = StateGraph(State)
        builder.add_node("remote", RemoteGraph(graph_id, url=api.url))
        builder.add_edge(START, "remote")
        return builder.compile(checkpointer=InMemorySaver())

    chain = parent_of("api_chain")
    config: Any = {"configurable": {"thread_id": str(uuid.uuid4())}}
    chunks = list(chain.stream({"topic": "remote"}, config, subgraphs=True))
    assert [c for ns, c in chunks if ns and ns[0].startswith("remote:")] == [
        {"plan": {"steps": ["plan"]}},
        {"publish": {"steps": ["publish"]}},
    ]
    assert chain.get_state(config).values["steps"] == ["plan", "publish"]
    approval = parent_of("api_approval")
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    paused = approval.invoke({"topic": "remote"}, config)
    assert [i.value for i in paused["__interrupt__"]] == [
        {"question": "Publish?", "topic": "remote"}
    ]
    assert approval.get_state(config).next == ("remote",)


def test_bad_input_is_refused_and_nothing_written(sdk: Any, api: servers.Server) -> None:
    thread = sdk.threads.create()
    tid = thread["thread_id"]
    with httpx.Client(base_url=api.url) as http:
        unknown = http.post(f"/threads/{tid}/runs", json={"assistant_id": "api_chain", "nope": 1})
        assert unknown.status_code == 422
        assert "nope" in unknown.json()["detail"]
        big = http.post(
            f"/threads/{tid}/runs",
            content=b'{"assistant_id": "api_chain", "input": "' + b"x" * (11 << 20) + b'"}',
            headers={"content-type": "application/json"},
        )
        assert big.status_code == 413
        missing = http.post(
            f"/threads/{tid}/runs", json={"assistant_id": str(uuid.uuid4()), "input": {}}
        )
        assert missing.status_code == 404
        mode = http.post(
            f"/threads/{tid}/runs",
            json={"assistant_id": "api_chain", "input": {}, "stream_mode": "messages"},
        )
        assert mode.status_code == 422
        assert "messages" in mode.json()["detail"]
    assert sdk.runs.list(tid) == []
    # a resume map naming an interrupt the thread does not wait on: 400 with the pending ids
    sdk.runs.wait(tid, "api_approval", input={"topic": "t"})
    pending = sdk.threads.get(tid)["interrupts"]
    (waits,) = pending.values()
    with httpx.Client(base_url=api.url) as http:
        wrong = http.post(
            f"/threads/{tid}/runs",
            json={"assistant_id": "api_approval", "command": {"resume": {"0" * 32: "x"}}},
        )
    assert wrong.status_code == 400, wrong.text
    assert waits[0]["id"] in wrong.json()["detail"]
    assert len(sdk.runs.list(tid)) == 1


def test_multitask_strategies_and_cancel(sdk: Any) -> None:
    """reject refuses a second run while one is under way (409, nothing queued); enqueue
    queues it behind; cancel ends the run as interrupted."""
    tid = sdk.threads.create()["thread_id"]
    slow = sdk.runs.create(tid, "api_slow", input={"topic": "3"})
    with pytest.raises(httpx.HTTPStatusError) as refused:
        sdk.runs.create(tid, "api_slow", input={"topic": "0"}, multitask_strategy="reject")
    assert refused.value.response.status_code == 409
    assert len(sdk.runs.list(tid)) == 1
    queued = sdk.runs.create(tid, "api_slow", input={"topic": "0"})
    assert sdk.threads.get(tid)["status"] == "busy"
    sdk.runs.cancel(tid, slow["run_id"], wait=True)
    # a cancel is a barrier: the run a worker is advancing ends first, the queued one
    # (graphruntime cancels a thread's runs, not one of them) is cancelled
    assert sdk.runs.get(tid, slow["run_id"])["status"] == "success"
    assert sdk.runs.get(tid, queued["run_id"])["status"] == "interrupted"
    assert sdk.threads.get(tid)["status"] == "idle"
    again = sdk.runs.wait(tid, "api_slow", input={"topic": "0"})
    assert again["steps"][-1] == "nap"


def test_resume_through_the_api_after_a_worker_sigkill_finishes_once(
    cluster: LocalCluster, sdk: Any
) -> None:
    """A resume sent through the API while the worker that would run it is killed: the
    run finishes once (the publish step's custom event is streamed once)."""
    tid = sdk.threads.create()["thread_id"]
    sdk.runs.wait(tid, "api_approval", input={"topic": "kill"})
    cluster.kill_worker(0)
    try:
        run = sdk.runs.create(
            tid, "api_approval", command={"resume": "yes"}, stream_mode=["custom"]
        )
        result = sdk.runs.join(tid, run["run_id"])
    finally:
        cluster.restart_worker(0)
    assert result["answer"] == "yes"
    assert result["steps"] == ["plan", "review", "publish"]
    runs = sdk.runs.list(tid)
    assert [r["status"] for r in runs] == ["success", "success"]
    state = sdk.threads.get_state(tid)
    assert state["values"]["steps"].count("publish") == 1


def test_a_stream_survives_the_servers_restart(cluster: LocalCluster, tmp_path: Path) -> None:
    """A client streaming a resumable run rejoins a restarted server with Last-Event-ID and
    gets every event once, in order."""
    env = server_env(cluster, tmp_path)
    port = servers.free_port()
    server = servers.start_serve(env, port=port)
    try:
        client: Any = get_sync_client(url=server.url)
        tid = client.threads.create()["thread_id"]
        seen: list[tuple[str, Any, str | None]] = []
        stream = client.runs.stream(
            tid,
            "api_approval",
            input={"topic": "restart"},
            stream_mode=["values", "updates"],
            stream_resumable=True,
        )
        run_id = None
        for part in stream:
            if part.event == "metadata":
                run_id = part.data["run_id"]
                continue
            seen.append((part.event, part.data, part.id))
            break  # the first event, then the server goes away
        assert run_id is not None
        servers.stop(server.proc)
        server = servers.start_serve(env, port=port)
        client = get_sync_client(url=server.url)
        last = seen[-1][2]
        for part in client.runs.join_stream(tid, run_id, last_event_id=last):
            seen.append((part.event, part.data, part.id))
    finally:
        servers.stop(server.proc)
    ids = [tuple(int(x) for x in i.split(".")) for _, _, i in seen if i is not None]
    assert ids == sorted(set(ids)), ids  # none twice, in order
    with servers.serve(env) as fresh:
        everything = list(
            get_sync_client(url=fresh.url).runs.join_stream(tid, run_id, last_event_id="-1")
        )
    assert [(p.event, p.data) for p in everything if p.event != "metadata"] == [
        (e, d) for e, d, _ in seen
    ]


def test_two_servers_behind_one_database_serve_the_same_threads(
    cluster: LocalCluster, api: servers.Server, tmp_path: Path
) -> None:
    env = server_env(cluster, tmp_path)
    with servers.serve(env) as other:
        one: Any = get_sync_client(url=api.url)
        two: Any = get_sync_client(url=other.url)
        tid = one.threads.create(metadata={"two": "servers"})["thread_id"]
        one.runs.wait(tid, "api_approval", input={"topic": "shared"})
        assert two.threads.get(tid)["status"] == "interrupted"
        found = two.threads.search(status="interrupted", metadata={"two": "servers"})
        assert [t["thread_id"] for t in found] == [tid]
        done = two.runs.wait(tid, "api_approval", command={"resume": "yes"})
        assert done["answer"] == "yes"
        assert one.threads.get(tid)["status"] == "idle"


def test_a_cron_fires_once_however_many_servers(
    cluster: LocalCluster, api: servers.Server, tmp_path: Path
) -> None:
    env = server_env(cluster, tmp_path)
    sdk: Any = get_sync_client(url=api.url)
    tid = sdk.threads.create()["thread_id"]
    with servers.serve(env):
        cron = sdk.crons.create_for_thread(
            tid, "api_chain", schedule="0 0 1 1 *", input={"topic": "c"}
        )
        try:
            _due_now(cluster, cron["cron_id"])  # rather than wait for January
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not sdk.runs.list(tid):
                time.sleep(0.2)
            time.sleep(3)  # both servers swept the due cron meanwhile
            runs = sdk.runs.list(tid)
            moved = sdk.crons.search(thread_id=tid)[0]["next_run_date"]
        finally:
            sdk.crons.delete(cron["cron_id"])
    assert moved.startswith(str(time.gmtime().tm_year + 1))
    assert len(runs) == 1, runs


def _due_now(cluster: LocalCluster, cron_id: str) -> None:
    import psycopg

    with psycopg.connect(cluster.env["DATABASE_URL"], autocommit=True) as conn:
        conn.execute(
            "UPDATE graphruntime_api_crons SET next_run_at = now() WHERE cron_id = %s", (cron_id,)
        )


def test_webhook_is_posted_signed(cluster: LocalCluster, tmp_path: Path) -> None:
    import hashlib
    import hmac
    from http.server import BaseHTTPRequestHandler, HTTPServer

    received: list[tuple[bytes, str | None]] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            received.append((body, self.headers.get("x-graphruntime-signature")))
            self.send_response(500 if len(received) == 1 else 200)  # the first one fails
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    hook = HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    secret = WEBHOOK_SECRET
    env = server_env(cluster, tmp_path)
    try:
        with servers.serve(env) as server:
            sdk: Any = get_sync_client(url=server.url)
            url = f"http://127.0.0.1:{hook.server_address[1]}/done"
            sdk.runs.wait(None, "api_chain", input={"topic": "hook"}, webhook=url)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and len(received) < 2:
                time.sleep(0.2)
    finally:
        hook.shutdown()
    assert len(received) >= 2, received
    body, sig = received[-1]
    assert sig == "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    assert json.loads(body)["status"] == "success"
