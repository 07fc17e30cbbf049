"""Chat model tokens streamed from the workers as they are produced, and a LangChain agent
(``create_agent`` with HumanInTheLoopMiddleware, built through the langgraph alias in the
workers) paused, found in the inbox, approved with an edit, finishing with the edited call.

Progress is shown without timing: the models stop mid-reply at a gate in Redis that the
client opens only once it has read their first tokens from ``client.stream``. Had the
tokens been stored only when the node ended, the client would read nothing until the
gate gave up (:data:`GATE_TIMEOUT`), and the model records which way it went on.

The agent's client runs in a process of its own (agent_client.py): a process that loads
the agent needs the alias, and this one must keep the real LangGraph for other tests.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import uuid
from typing import Any

import pytest

from tests.e2e.conftest import ROOT
from tests.e2e.fault_graphs import redis_for
from tests.e2e.stream_graphs import (
    GATE_AFTER,
    STREAM_TIMEOUT,
    gate_result_key,
    stream_opening_gates,
)
from workers.client import GraphClient
from workers.local_cluster import LocalCluster


def cfg(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


@pytest.fixture(scope="module")
def redis(cluster: LocalCluster) -> Any:
    return redis_for(cluster.env["REDIS_URL"])


def test_parallel_task_jobs_stream_their_tokens_as_they_run(
    client: GraphClient, redis: Any
) -> None:
    gate = f"talk-{uuid.uuid4().hex[:8]}"
    gates = {"left": f"{gate}-left", "right": f"{gate}-right"}
    chunks = list(
        stream_opening_gates(
            client,
            redis,
            "talk",
            {"messages": [("user", f"[gate:{gate}]")]},
            cfg(f"talk-{gate}"),
            gates,
        )
    )
    for node, node_gate in gates.items():
        assert redis.lrange(gate_result_key(node_gate), 0, -1) == [b"opened"], node
        mine = [(m, shut) for m, md, shut in chunks if md["langgraph_node"] == node]
        # read while the node still waited at its gate: before it (and the run) ended
        assert sum(shut for _, shut in mine) == GATE_AFTER
        assert "".join(str(m.content) for m, _ in mine) == (
            "the quick brown fox jumps over the lazy dog"
        )


@pytest.mark.skipif(
    importlib.util.find_spec("langchain") is None, reason="langchain is a dev (oracle) dependency"
)
def test_an_agent_streams_pauses_for_approval_and_runs_the_edited_call(
    cluster: LocalCluster, redis: Any
) -> None:
    gate = f"agent-{uuid.uuid4().hex[:8]}"
    thread_id = f"lc-agent-{gate}"
    done = subprocess.run(
        [sys.executable, "-m", "tests.e2e.agent_client", thread_id, gate, "b@x.io"],
        env={**cluster.env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3 * STREAM_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])

    # the model's tokens: read while it waited at its gate, before it (and the run) ended
    assert redis.lrange(gate_result_key(gate), 0, -1) == [b"opened"]
    tokens = [c for c in seen["chunks"] if c["node"] == "model"]
    assert sum(c["shut"] for c in tokens) == GATE_AFTER
    assert {c["type"] for c in tokens} == {"AIMessageChunk"}
    assert "".join(c["content"] for c in tokens) == "I will email the report now."
    [call] = [c for t in tokens for c in t["tool_call_chunks"]]
    body = f"the report {gate}"
    assert call["name"] == "send_email"
    assert json.loads(call["args"]) == {"to": "a@x.io", "body": body}

    # paused before the tool ran, found in the inbox by action and args, edited
    [wait] = seen["waits"]
    assert wait["thread_id"] == thread_id
    assert wait["value"]["action_requests"][0]["args"] == {"to": "a@x.io", "body": body}
    assert seen["outcomes"] == ["applied"]
    assert seen["resumed"] == "success"
    # the tool ran once, with the edited args; the agent finished on its answer
    sent = [json.loads(x) for x in redis.lrange(f"e2e:agent:sent:{body}", 0, -1)]
    assert sent == [{"to": "b@x.io", "body": body}]
    assert seen["last_message"].startswith("Done: ")
    assert seen["last_message"].endswith("sent to b@x.io")
    assert seen["left_waiting"] == 0
