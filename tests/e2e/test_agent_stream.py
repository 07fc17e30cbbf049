"""Chat model tokens streamed from the workers as they are produced, and a LangChain agent
(``create_agent`` with HumanInTheLoopMiddleware, built through the langgraph alias in the
workers) paused, found in the inbox, approved with an edit, finishing with the edited call.

Progress is shown without timing: the models stop mid-reply at a gate in Redis that
this test opens only once it has read their first tokens from ``client.stream``. Had the
tokens been stored only when the node ended, the test would read nothing until the gate
gave up (:data:`GATE_TIMEOUT`), and the model records which way it went on.
"""

from __future__ import annotations

import importlib.util
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from graphruntime.compat import LangGraphAliasError, alias_langgraph
from tests.e2e.fault_graphs import redis_for, wait_until
from tests.e2e.stream_graphs import GATE_AFTER, gate_result_key, open_gate
from workers.client import GraphClient
from workers.decisions import Decision
from workers.local_cluster import LocalCluster

if importlib.util.find_spec("langchain") is None:  # found, not imported: see aliased()
    pytest.skip("langchain is a dev (oracle) dependency", allow_module_level=True)

TIMEOUT = 120.0


def cfg(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


@pytest.fixture(scope="module")
def redis(cluster: LocalCluster) -> Any:
    return redis_for(cluster.env["REDIS_URL"])


@pytest.fixture(scope="module")
def aliased() -> None:
    """This process imports the agent's module too (the client's registry does): the alias
    must be on before anything imports langchain here, as in the workers."""
    try:
        alias_langgraph()
    except LangGraphAliasError as exc:
        pytest.fail(f"run tests/e2e in a pytest process of its own (scripts/test.sh does): {exc}")


def _stream_opening_gates(
    client: GraphClient, redis: Any, graph: str, input: Any, config: Any, gates: dict[str, str]
) -> Iterator[tuple[Any, dict[str, Any], bool]]:
    """``client.stream(..., stream_mode="messages")``, opening the gate of a node (``gates``:
    node -> gate) once GATE_AFTER of its tokens were read; each chunk with whether its
    node's gate was still shut when it arrived."""
    seen: dict[str, int] = {}
    for message, metadata in client.stream(
        graph, input, config, stream_mode="messages", timeout=TIMEOUT
    ):
        node = metadata["langgraph_node"]
        shut = node in gates and seen.get(node, 0) < GATE_AFTER
        yield message, metadata, shut
        seen[node] = seen.get(node, 0) + 1
        if node in gates and seen[node] == GATE_AFTER:
            open_gate(redis, gates[node])


def test_parallel_task_jobs_stream_their_tokens_as_they_run(
    client: GraphClient, redis: Any
) -> None:
    gate = f"talk-{uuid.uuid4().hex[:8]}"
    gates = {"left": f"{gate}-left", "right": f"{gate}-right"}
    chunks = list(
        _stream_opening_gates(
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


def test_an_agent_streams_pauses_for_approval_and_runs_the_edited_call(
    aliased: None, client: GraphClient, redis: Any
) -> None:
    gate = f"agent-{uuid.uuid4().hex[:8]}"
    thread_id = f"lc-agent-{gate}"
    chunks = list(
        _stream_opening_gates(
            client,
            redis,
            "lc_agent",
            {"messages": [("user", f"Mail the report [gate:{gate}]")]},
            cfg(thread_id),
            {"model": gate},
        )
    )
    assert redis.lrange(gate_result_key(gate), 0, -1) == [b"opened"]
    tokens = [(m, md, shut) for m, md, shut in chunks if md["langgraph_node"] == "model"]
    assert sum(shut for *_, shut in tokens) == GATE_AFTER  # streamed before the model ended
    assert type(tokens[0][0]).__name__ == "AIMessageChunk"
    assert "".join(str(m.content) for m, *_ in tokens) == "I will email the report now."
    [call] = [c for m, *_ in tokens for c in m.tool_call_chunks]
    body = f"the report {gate}"
    assert (call["name"], json.loads(call["args"] or "{}")) == (
        "send_email",
        {"to": "a@x.io", "body": body},
    )

    # paused before the tool ran; the inbox finds it by action and args
    (wait,) = client.inbox("lc_agent", action="send_email", args={"body": body}).items
    assert wait.thread_id == thread_id
    assert wait.value["action_requests"][0]["args"] == {"to": "a@x.io", "body": body}
    assert redis.lrange(f"e2e:agent:sent:{body}", 0, -1) == []

    edited = {"to": "b@x.io", "body": body}
    outcomes = client.resume_many(
        "lc_agent",
        items=[(thread_id, wait.interrupt_id)],
        decision=Decision("edit", args=edited),
        idempotency_key=f"edit-{thread_id}",
        actor="alice",
    )
    assert [o.outcome for o in outcomes] == ["applied"]
    wait_until(
        lambda: client.resume_history("lc_agent", cfg(thread_id))[0].status == "success",
        timeout=TIMEOUT,
        what="the resumed run's end",
    )
    # the tool ran once, with the edited args; the agent finished on its answer
    assert [json.loads(x) for x in redis.lrange(f"e2e:agent:sent:{body}", 0, -1)] == [edited]
    messages = client.get_state("lc_agent", cfg(thread_id)).values["messages"]
    assert messages[-1].content.startswith("Done: ")
    assert messages[-1].content.endswith("sent to b@x.io")
    assert client.inbox("lc_agent", thread=thread_id).items == []
