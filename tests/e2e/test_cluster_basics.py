"""The basic contract of running graphs on real workers."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from typing import Any

import pytest

from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.errors import InvalidResumeError
from graphruntime.types import Command, StateUpdate
from tests.e2e.fault_graphs import redis_for
from tests.e2e.graphs import chain_graph, fan_graph, pair_graph
from workers.client import GraphClient
from workers.errors import UnknownGraphError
from workers.local_cluster import LocalCluster
from workers.store import PostgresRunStore


def _pool(client: GraphClient) -> Any:
    """The client's Postgres pool (e2e clients always run on the Postgres store)."""
    assert isinstance(client.store, PostgresRunStore)
    return client.store.pool


def _in_process(graph: Any, *inputs: Any) -> list[Any]:
    local = graph.with_checkpointer(InMemorySaver())
    cfg = {"configurable": {"thread_id": "local"}}
    return [local.invoke(i, cfg) for i in inputs]


def _strip_ids(out: Any) -> Any:
    if isinstance(out, dict) and "__interrupt__" in out:
        return {**out, "__interrupt__": [i.value for i in out["__interrupt__"]]}
    return out


def test_fan_out_spreads_over_processes_and_resumes(client: GraphClient, thread: Any) -> None:
    paused = client.invoke("fan", {"n": 6}, thread, timeout=60)
    resumed = client.invoke("fan", Command(resume="yes"), thread, timeout=60)
    expected = _in_process(fan_graph, {"n": 6}, Command(resume="yes"))
    assert _strip_ids(paused)["__interrupt__"] == _strip_ids(expected[0])["__interrupt__"]
    assert sorted(paused["items"]) == sorted(expected[0]["items"])
    assert resumed["decision"] == "yes"
    assert len(set(resumed["pids"])) >= 2, "the Send tasks of one step ran in one process"
    state = client.get_state("fan", thread)
    assert state.next == ()
    assert state.values["decision"] == "yes"


def test_big_fan_out_runs_in_chunks_with_the_same_result(client: GraphClient, thread: Any) -> None:
    # the cluster chunks steps of more than 8 tasks, up to 3 per job (tests/e2e/conftest.py)
    paused = client.invoke("fan", {"n": 40}, thread, timeout=60)
    expected = _in_process(fan_graph, {"n": 40})[0]
    assert sorted(paused["items"]) == sorted(expected["items"])
    assert len(paused["pids"]) == 40
    with _pool(client).connection() as conn:
        rows = conn.execute(
            "SELECT task_id, worker, started_at, status FROM graphruntime_step_tasks "
            "WHERE thread_id = %s",
            (thread["configurable"]["thread_id"],),
        ).fetchall()
    assert len(rows) == 40
    assert {r["status"] for r in rows} == {"done"}
    # a job claims its tasks in one statement: they share a start time and a worker
    jobs = Counter((r["worker"], r["started_at"]) for r in rows)
    assert len(jobs) == 14, jobs  # ceil(40 / 3)
    assert max(jobs.values()) == 3
    assert len({w for w, _ in jobs}) >= 2, "all chunks ran in one worker process"


def test_retry_policy_retries_as_new_jobs(
    cluster: LocalCluster, client: GraphClient, thread: Any
) -> None:
    out = client.invoke("flaky", {"steps": []}, thread, timeout=60)
    assert out == {"steps": ["flaky"]}
    tid = thread["configurable"]["thread_id"]
    redis_url = cluster.settings().redis_url
    assert redis_url is not None
    pids = redis_for(redis_url).lrange(f"e2e:flaky:{tid}", 0, -1)
    assert len(pids) == 3  # max_attempts
    # the first attempt ran in the coordinator; each retry was a job of its own (job id #n)
    run_id = client.store.runs_of_thread(tid)[0]["run_id"]

    def logged(attempt: int) -> bool:
        # celery logs "succeeded" after the job returns, which may be after the run ended
        logs = [line for w in cluster.workers for line in list(w.log)]
        return any(f"{run_id}:" in ln and f"#{attempt}] succeeded" in ln for ln in logs)

    for attempt in (1, 2):
        give_up = time.monotonic() + 30
        while not logged(attempt) and time.monotonic() < give_up:
            time.sleep(0.05)
        assert logged(attempt), attempt


def test_resume_with_update_reaches_every_task_job(client: GraphClient, thread: Any) -> None:
    """Command(resume=..., update=...) on a step whose tasks run as separate jobs."""

    def resume(out: Any) -> Command[Any]:
        ids = {i.value: i.id for i in out["__interrupt__"]}
        return Command(resume={ids["a"]: "A", ids["b"]: "B"}, update={"note": "u"})

    local = pair_graph.with_checkpointer(InMemorySaver())
    local_cfg: RunnableConfig = {"configurable": {"thread_id": "local"}}
    expected = local.invoke(resume(local.invoke({"seen": []}, local_cfg)), local_cfg)
    paused = client.invoke("pair", {"seen": []}, thread, timeout=60)
    assert client.invoke("pair", resume(paused), thread, timeout=60) == expected
    assert expected == {"note": "u", "seen": ["a:A:u", "b:B:u"]}
    assert client.get_state("pair", thread).values == local.get_state(local_cfg).values


def test_chain_matches_in_process(client: GraphClient, thread: Any) -> None:
    out = client.invoke("chain", {"steps": []}, thread, timeout=60)
    assert out == _in_process(chain_graph, {"steps": []})[0]
    history = list(client.get_state_history("chain", thread))
    assert len(history) == 12  # input + __start__ + 10 nodes, as in-process


def test_node_error_is_raised_to_the_caller(client: GraphClient, thread: Any) -> None:
    with pytest.raises(ValueError, match="node failed on purpose"):
        client.invoke("failing", {"steps": []}, thread, timeout=60)
    state = client.get_state("failing", thread)
    assert state.next == ("boom",)  # the sibling's writes stay pending; only boom re-runs
    assert state.values["steps"] == ["ok"]


def test_unknown_graph_is_a_clear_error(client: GraphClient, thread: Any) -> None:
    with pytest.raises(UnknownGraphError, match="GRAPHRUNTIME_GRAPHS"):
        client.invoke("no-such-graph", {}, thread)


def test_resume_of_a_finished_thread_changes_nothing(client: GraphClient, thread: Any) -> None:
    client.invoke("chain", {"steps": []}, thread, timeout=60)
    before = client.get_state("chain", thread)
    with pytest.raises(InvalidResumeError, match="no pending interrupt"):
        client.invoke("chain", Command(resume="late"), thread)
    assert client.get_state("chain", thread) == before


def test_same_resume_twice_applies_once(client: GraphClient, thread: Any) -> None:
    client.invoke("fan", {"n": 2}, thread, timeout=60)
    first = client.submit("fan", Command(resume="ok"), thread, idempotency_key="k1")
    second = client.submit("fan", Command(resume="ok"), thread, idempotency_key="k1")
    assert first.run_id == second.run_id
    assert not second.created
    assert first.wait(60)["decision"] == "ok"


def test_a_subgraph_with_a_saver_of_its_own_runs_each_node_once(
    cluster: LocalCluster, client: GraphClient
) -> None:
    """LangGraph's docs example: a subgraph compiled with its own InMemorySaver, called
    inside a node, pauses; 10 threads paused then resumed. Its node before the pause runs
    once per thread, as in LangGraph: the workers save it with the cluster's saver (a
    resume on another worker process used to find that process's own saver empty and
    run the subgraph again from its start)."""
    ledger = redis_for(cluster.env["REDIS_URL"])
    tids = [f"e2e-own-saver-{uuid.uuid4()}" for _ in range(10)]
    for tid in tids:
        out = client.invoke("ownsaver", {"foo": "x"}, {"configurable": {"thread_id": tid}})
        assert [i.value for i in out["__interrupt__"]] == ["answer?"]
    for tid in tids:
        out = client.invoke("ownsaver", Command(resume="yes"), {"configurable": {"thread_id": tid}})
        assert out["bar"] == "yes"
    assert [int(ledger.get(f"e2e:own-saver:{tid}") or 0) for tid in tids] == [1] * 10


def test_state_edits_from_a_client_without_the_graph(cluster: LocalCluster, thread: Any) -> None:
    """A client whose registry lacks the graph (an ops box) edits a thread through the
    workers: bulk_update_state (StateUpdate tuples) as update_state, with the state an
    in-process graph reaches by the same edits."""
    remote = GraphClient.from_env(cluster.settings().model_copy(update={"graphs": ""}))
    try:
        assert not remote.local("chain")
        local = chain_graph.with_checkpointer(InMemorySaver())
        local_cfg: RunnableConfig = {"configurable": {"thread_id": "local"}}
        local.invoke({"steps": []}, local_cfg)
        remote.invoke("chain", {"steps": []}, thread, timeout=60)
        supersteps = [
            [StateUpdate({"steps": ["x"]}, "n9")],
            [StateUpdate({"steps": ["y"]}, "n8"), StateUpdate({"steps": ["z"]}, "n8")],
        ]
        local.bulk_update_state(local_cfg, supersteps)
        edited = remote.bulk_update_state("chain", thread, supersteps)
        assert edited["configurable"]["thread_id"] == thread["configurable"]["thread_id"]
        local.update_state(local_cfg, {"steps": ["w"]}, "n9")
        remote.update_state("chain", thread, {"steps": ["w"]}, "n9")
        state = remote.get_state("chain", thread)
        assert state.values == local.get_state(local_cfg).values
        assert state.values["steps"][-4:] == ["x", "y", "z", "w"]
    finally:
        remote.close()
