"""Functional graphs on the in-memory cluster: the coordinator's executor has no
``submit_call`` yet, so ``@task`` calls run inline in the process that runs their caller;
a finished call is not run again when the entrypoint runs again on resume."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from graphruntime.checkpoint import InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.func import entrypoint, task
from graphruntime.types import Command, interrupt
from workers.testing import InlineCluster


def _flow(counts: Counter[str]) -> Any:
    @task
    def double(x: int) -> int:
        counts[f"double({x})"] += 1
        return 2 * x

    @task
    def ask(question: str) -> str:
        counts[question] += 1
        answer: str = interrupt(question)
        return answer

    @entrypoint()
    def flow(xs: list[int]) -> dict[str, Any]:
        doubled = [f.result() for f in [double(x) for x in xs]]
        return {"doubled": doubled, "answer": ask("ok?").result()}

    return flow


def _values(out: Any) -> Any:
    if isinstance(out, dict) and "__interrupt__" in out:
        return [i.value for i in out["__interrupt__"]]
    return out


def test_an_entrypoint_runs_on_the_cluster_as_in_process() -> None:
    counts: Counter[str] = Counter()
    cluster = InlineCluster({"flow": _flow(counts)})
    cfg: RunnableConfig = {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}
    local_counts: Counter[str] = Counter()
    local = _flow(local_counts).with_checkpointer(InMemorySaver())
    local_cfg: RunnableConfig = {"configurable": {"thread_id": "local"}}
    inputs: list[Any] = [[1, 2], Command(resume="yes")]
    for value in inputs:
        assert _values(cluster.run("flow", value, cfg)) == _values(local.invoke(value, local_cfg))
    assert counts == local_counts == {"double(1)": 1, "double(2)": 1, "ok?": 2}
