"""The functional API on real workers: an entrypoint runs under the coordinator and each
``@task`` call it makes is a task job, so one entrypoint's calls spread over the worker
processes; a resumed entrypoint replays its finished calls from their saved results."""

from __future__ import annotations

import os
from typing import Any

from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.types import Command
from tests.e2e.fault_graphs import redis_for
from tests.e2e.graphs import survey
from workers.client import GraphClient
from workers.local_cluster import LocalCluster


def _interrupts(out: Any) -> list[Any]:
    assert isinstance(out, dict)
    return [i.value for i in out["__interrupt__"]]


def test_an_entrypoints_task_calls_run_as_jobs_in_two_workers(
    cluster: LocalCluster, client: GraphClient, thread: RunnableConfig
) -> None:
    paused = client.invoke("survey", 8, thread, timeout=60)
    assert _interrupts(paused) == [{"question": "approve?", "count": 8}]
    done = client.invoke("survey", Command(resume="yes"), thread, timeout=60)

    local = survey.with_checkpointer(InMemorySaver())
    local_cfg: RunnableConfig = {"configurable": {"thread_id": "local"}}
    assert _interrupts(local.invoke(8, local_cfg)) == _interrupts(paused)
    expected = local.invoke(Command(resume="yes"), local_cfg)
    assert {k: v for k, v in done.items() if k != "pids"} == {
        k: v for k, v in expected.items() if k != "pids"
    }
    assert done["total"] == 28
    assert done["decision"] == "yes"
    # each worker leads its own process group; its pool processes ran the calls
    groups = {os.getpgid(pid) for pid in set(done["pids"])}
    assert groups <= {w.pid for w in cluster.workers}, "a call ran outside the workers"
    assert len(groups) >= 2, "the calls of one entrypoint ran in one worker"

    # every measure call ran once, though the entrypoint ran again after each round of
    # calls and on the resume
    redis_url = cluster.settings().redis_url
    assert redis_url is not None
    key = f"e2e:survey:{thread['configurable']['thread_id']}"
    counts = {k.decode(): int(v) for k, v in redis_for(redis_url).hgetall(key).items()}
    assert counts == {f"measure({i})": 1 for i in range(8)}
    # the calls are tasks of the entrypoint's step, as in-process
    state = client.get_state("survey", thread)
    assert state.values == done
