"""Functional graphs on the in-memory cluster: each ``@task`` call an entrypoint makes
runs as a task job (labelled ``graph:task``); the entrypoint runs again in the
coordinator once its calls are done, and a finished call never runs again, neither
then nor when the entrypoint runs again on resume. Results match the in-process run."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from typing import Any

import pytest

from graphruntime.checkpoint import InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.func import entrypoint, task
from graphruntime.types import Command, interrupt
from workers.errors import NondeterministicCallError
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
        counts["flow"] += 1
        doubled = [f.result() for f in [double(x) for x in xs]]
        return {"doubled": doubled, "answer": ask("ok?").result()}

    return flow


def _chained(counts: Counter[str]) -> Any:
    @task
    def inc(x: int) -> int:
        counts[f"inc({x})"] += 1
        return x + 1

    @task
    def fail(x: int) -> int:
        counts["fail"] += 1
        raise ValueError(f"no {x}")

    @entrypoint()
    def chained(x: int) -> dict[str, Any]:
        a = inc(x).result()
        b = inc(a).result()
        try:
            fail(b).result()
            caught = ""
        except ValueError as exc:
            caught = str(exc)
        return {"b": b, "caught": caught}

    return chained


def _async_flow(counts: Counter[str]) -> Any:
    @task
    async def square(x: int) -> int:
        counts[f"square({x})"] += 1
        await asyncio.sleep(0)
        return x * x

    @entrypoint()
    async def async_flow(xs: list[int]) -> list[int]:
        return list(await asyncio.gather(*[square(x) for x in xs]))

    return async_flow


def _values(out: Any) -> Any:
    if isinstance(out, dict) and "__interrupt__" in out:
        return [i.value for i in out["__interrupt__"]]
    return out


def _local(build: Any, inputs: list[Any]) -> tuple[list[Any], Counter[str]]:
    counts: Counter[str] = Counter()
    graph = build(counts).with_checkpointer(InMemorySaver())
    cfg: RunnableConfig = {"configurable": {"thread_id": "local"}}
    return [_values(graph.invoke(value, cfg)) for value in inputs], counts


def _call_jobs(cluster: InlineCluster, graph: str) -> list[str]:
    return [job.label for job in cluster.broker.sent if job.kind == "execute"]


def test_an_entrypoints_calls_run_as_task_jobs_and_never_twice() -> None:
    counts: Counter[str] = Counter()
    cluster = InlineCluster({"flow": _flow(counts)})
    cfg: RunnableConfig = {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}
    inputs: list[Any] = [[1, 2], Command(resume="yes")]
    outputs = [_values(cluster.run("flow", value, cfg)) for value in inputs]
    expected, local_counts = _local(_flow, inputs)
    assert outputs == expected == [["ok?"], {"doubled": [2, 4], "answer": "yes"}]
    calls = {k: v for k, v in counts.items() if k != "flow"}
    assert calls == {k: v for k, v in local_counts.items() if k != "flow"}
    assert calls == {"double(1)": 1, "double(2)": 1, "ok?": 2}
    # both doubles in one round of jobs, then ask; on resume ask alone
    assert sorted(_call_jobs(cluster, "flow")) == [
        "flow:ask",
        "flow:ask",
        "flow:double",
        "flow:double",
    ]


def test_sequential_calls_and_a_failed_call_the_caller_catches() -> None:
    counts: Counter[str] = Counter()
    cluster = InlineCluster({"chained": _chained(counts)})
    cfg: RunnableConfig = {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}
    out = cluster.run("chained", 1, cfg)
    expected, local_counts = _local(_chained, [1])
    assert [out] == expected == [{"b": 3, "caught": "no 3"}]
    assert counts - Counter({"flow": counts["flow"]}) == local_counts
    assert _call_jobs(cluster, "chained") == ["chained:inc", "chained:inc", "chained:fail"]
    state = cluster.client.get_state("chained", cfg)
    assert state.values == {"b": 3, "caught": "no 3"}


def test_an_async_entrypoint_gathers_its_calls_as_parallel_jobs() -> None:
    counts: Counter[str] = Counter()
    cluster = InlineCluster({"async_flow": _async_flow(counts)})
    cfg: RunnableConfig = {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}
    out = cluster.run("async_flow", [1, 2, 3], cfg)
    assert out == [1, 4, 9]
    assert counts == {"square(1)": 1, "square(2)": 1, "square(3)": 1}
    jobs = [j for j in cluster.broker.sent if j.kind == "execute"]
    assert len(jobs) == 3


def test_a_call_the_caller_does_not_make_again_fails_the_run() -> None:
    runs: list[int] = []

    @task
    def heads(x: int) -> int:
        return x

    @task
    def tails(x: int) -> int:
        return -x

    @entrypoint()
    def fickle(x: int) -> int:
        runs.append(x)
        # another task on every other run: the job cannot find the call it was sent for
        call = heads if len(runs) % 2 else tails
        return int(call(x).result())

    cluster = InlineCluster({"fickle": fickle})
    cfg: RunnableConfig = {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}
    with pytest.raises(NondeterministicCallError, match="could not be re-created"):
        cluster.run("fickle", 1, cfg)
    assert cluster.store.get_run(cluster.broker.sent[0].run_id).status == "error"


def _asks(order: str) -> Any:
    @task
    def ask(question: str) -> str:
        answer: str = interrupt(question)
        return answer

    @entrypoint()
    def asks(x: int) -> list[str]:
        if order == "call first":
            first = ask("q1").result()
            return [first, interrupt("q2")]
        first = interrupt("q0")
        return [first, ask("q1").result()]

    return asks


@pytest.mark.parametrize("order", ["call first", "caller first"])
def test_one_resume_value_answers_one_interrupt_across_caller_and_calls(order: str) -> None:
    cluster = InlineCluster({"asks": _asks(order)})
    cfg: RunnableConfig = {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}
    inputs: list[Any] = [1, Command(resume="A"), Command(resume="B")]
    outputs = [_values(cluster.run("asks", value, cfg)) for value in inputs]
    expected, _ = _local(lambda counts: _asks(order), inputs)
    assert outputs == expected
    assert outputs[-1] == ["A", "B"]
