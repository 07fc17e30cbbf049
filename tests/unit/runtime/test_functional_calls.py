"""``@task`` calls through the executor seam: ids, saved results, and a distributed model.

``SecondPassExecutor`` drives a step the way a cluster of workers would: a call with no
saved result is dispatched (only its path travels, JSON-encoded, as in a job message)
and its caller suspends; each dispatched call then runs as a "job" on a loop rebuilt
from the saver, which re-creates the call from its path alone; then the caller runs
again from its first line and gets the saved results. Nothing is shared in memory
between the driver and the jobs but the saver and the step's ``resume_taken_by``.
"""

from __future__ import annotations

import asyncio
import binascii
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from langgraph.pregel._algo import _xxhash_str
from langgraph.pregel._algo import task_path_str as lg_task_path_str

from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.func import entrypoint, task
from graphruntime.pregel import Pregel
from graphruntime.pregel._algo import PreparedTask
from graphruntime.pregel._call import CallSuspended, failed_future
from graphruntime.pregel._calls import LoopCalls
from graphruntime.pregel._driver import drive, perform_saves
from graphruntime.pregel._executors import ThreadExecutor
from graphruntime.pregel._loop import PregelLoop
from graphruntime.pregel._loop_state import TaskResult
from graphruntime.pregel._retry import run_task
from graphruntime.pregel._run import run_options
from graphruntime.pregel._stream import StreamSink
from graphruntime.types import Command, interrupt


class SecondPassExecutor:
    """A step executor that runs each submitted call only on a second pass (see module)."""

    def __init__(self, graph: Pregel, saver: InMemorySaver, config: RunnableConfig) -> None:
        self.graph = graph
        self.saver = saver
        self.config = config
        self.input: Any = None
        self.jobs: list[tuple[Any, str]] = []  # (JSON path, id) as a job message carries them
        self.passes = 0
        self.job_runs = 0
        self.resume_taken_by: str | None = None
        self.ran: set[str] = set()  # calls a job of the current run recorded

    def submit_call(self, loop: LoopCalls, task: PreparedTask) -> Any:
        if task.id in self.ran:
            # a job of this run ran it and it did not finish: its error or interrupt
            failure = loop.recorded_failure(task.id)
            assert failure is not None
            return failed_future(failure)
        self.jobs.append((json.loads(json.dumps(task.path)), task.id))
        return failed_future(CallSuspended(task.path))

    def execute(self, loop: PregelLoop, tasks: Sequence[PreparedTask]) -> Iterator[TaskResult]:
        waiting = list(tasks)
        while waiting:
            self.passes += 1
            suspended = []
            loop.resume_taken_by = self.resume_taken_by
            for t in waiting:
                t.writes.clear()
                outcome = run_task(t, loop.task_config(t), ())
                if isinstance(outcome, CallSuspended):
                    suspended.append(t)
                else:
                    yield TaskResult(t, outcome)
            self.resume_taken_by = loop.resume_taken_by
            assert not suspended or self.jobs, "a caller suspended without dispatching"
            self._run_jobs()
            # the driver re-reads the step's writes, as a coordinator re-opens the step
            saved = self.saver.get_tuple(loop.checkpoint_config)
            assert saved is not None
            loop.pending_writes = list(saved.pending_writes or [])
            waiting = suspended

    def _run_jobs(self) -> None:
        while self.jobs:
            path, task_id = self.jobs.pop(0)
            self.job_runs += 1
            job = PregelLoop(
                self.graph,
                self.config,
                checkpointer=self.saver,
                sink=StreamSink(set(), False),
                options=run_options(self.graph, self.config),
            )
            job.open_step(self.input)
            job.resume_taken_by = self.resume_taken_by
            job.calls = self
            call = job.plan_task(path)
            assert call is not None, f"the call at {path} could not be re-created"
            assert call.id == task_id
            outcome = run_task(call, job.task_config(call), ())
            self.resume_taken_by = job.resume_taken_by
            if isinstance(outcome, CallSuspended):
                self.jobs.append((path, task_id))  # its own calls run first
            else:
                job.record(call, outcome)
                perform_saves(job)  # a job stores what it recorded
                self.ran.add(task_id)

    def run(self, input: Any) -> Any:
        self.input = input
        self.ran.clear()
        self.resume_taken_by = None
        loop = PregelLoop(
            self.graph,
            self.config,
            checkpointer=self.saver,
            sink=StreamSink({"values"}, False),
            options=run_options(self.graph, self.config),
        )
        loop.first(input)
        values = [p for _, mode, p in drive(loop, self) if mode == "values"]
        if loop.interrupts:
            return {"__interrupt__": [i.value for i in loop.interrupts]}
        return values[-1] if values else None


def _in_process(graph: Pregel, input: Any, config: RunnableConfig) -> Any:
    out = graph.invoke(input, config)
    if isinstance(out, dict) and "__interrupt__" in out:
        return {"__interrupt__": [i.value for i in out["__interrupt__"]]}
    return out


def _workflow(calls: Counter[str], *, with_interrupt: bool = False) -> Any:
    lock = threading.Lock()

    def count(name: str) -> None:
        with lock:
            calls[name] += 1

    @task
    def double(x: int) -> int:
        count(f"double({x})")
        return 2 * x

    @task
    def total(xs: list[int]) -> int:
        count("total")
        # a task calling tasks: its own calls are jobs too
        return sum(f.result() for f in [double(x) for x in xs])

    @task
    def ask(question: str) -> str:
        count(f"ask({question})")
        answer: str = interrupt(question)
        return answer

    def flow(xs: list[int]) -> dict[str, Any]:
        futures = [double(x) for x in xs]  # dispatched together: they run in parallel
        doubled = [f.result() for f in futures]
        summed = total(doubled).result()
        out: dict[str, Any] = {"doubled": doubled, "total": summed}
        if with_interrupt:
            out["first"] = ask("first?").result()
            out["second"] = ask("second?").result()
        return out

    return flow


@pytest.mark.parametrize("with_interrupt", [False, True])
def test_second_pass_executor_gives_the_in_process_results(with_interrupt: bool) -> None:
    local_calls: Counter[str] = Counter()
    local = entrypoint(checkpointer=InMemorySaver())(
        _workflow(local_calls, with_interrupt=with_interrupt)
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    cluster_calls: Counter[str] = Counter()
    saver = InMemorySaver()
    cluster = entrypoint(checkpointer=saver)(
        _workflow(cluster_calls, with_interrupt=with_interrupt)
    )
    executor = SecondPassExecutor(cluster, saver, config)

    inputs: list[Any] = [[1, 2, 3]]
    if with_interrupt:
        inputs += [Command(resume="yes"), Command(resume="no")]
    for value in inputs:
        assert executor.run(value) == _in_process(local, value, config)

    expected = {"double(1)": 1, "double(2)": 2, "double(3)": 1, "double(4)": 1, "double(6)": 1}
    if with_interrupt:
        # an interrupted task runs again on resume, in-process too
        expected.update({"ask(first?)": 2, "ask(second?)": 2})
    # a task that makes no calls runs exactly as often as in-process: saved results are
    # reused; one that makes calls (total) is replayed until they are all saved
    assert local_calls.pop("total") == 1
    assert cluster_calls.pop("total") > 1
    assert cluster_calls == local_calls == expected
    assert executor.job_runs >= 7


def test_second_pass_executor_runs_async_entrypoints() -> None:
    @task
    async def inc(x: int) -> int:
        return x + 1

    async def flow(x: int) -> list[int]:
        first = await inc(x)
        return list(await asyncio.gather(inc(first), inc(first + 10)))

    saver = InMemorySaver()
    graph = entrypoint(checkpointer=saver)(flow)
    config: RunnableConfig = {"configurable": {"thread_id": "a"}}
    executor = SecondPassExecutor(graph, saver, config)
    assert executor.run(1) == [3, 13]
    assert executor.passes == 3  # inc(1); then both gathered calls together; then done


def test_call_ids_are_langgraphs() -> None:
    seen: list[tuple[str, int, PreparedTask]] = []

    class Recording(ThreadExecutor):
        def submit_call(self, loop: LoopCalls, task: PreparedTask) -> Any:
            seen.append((loop.checkpoint["id"], loop.step, task))
            return super().submit_call(loop, task)

    @task
    def leaf(x: int) -> int:
        return x

    @task
    def branch(x: int) -> int:
        return int(leaf(x).result())

    @entrypoint()
    def flow(x: int) -> int:
        return int(branch(x).result()) + int(leaf(x).result())

    loop = PregelLoop(
        flow,
        {"configurable": {}},
        checkpointer=None,
        sink=StreamSink({"values"}, False),
        options=run_options(flow, {}),
    )
    loop.first(3)
    executor = Recording()
    try:
        list(drive(loop, executor))
    finally:
        executor.close()
    assert sorted(t.name for _, _, t in seen) == ["branch", "leaf", "leaf"]
    for checkpoint_id, step, call in seen:
        _, caller_path, index, marker = call.path
        assert marker is True
        ns = call.checkpoint_ns.rsplit(":", 1)[0]
        expected = _xxhash_str(
            binascii.unhexlify(checkpoint_id.replace("-", "")),
            ns,
            str(step),
            call.name,
            "__pregel_push",
            lg_task_path_str(caller_path),
            str(index),
        )
        assert call.id == expected
    # the nested call is namespaced under its caller, as LangGraph does
    (branch_task,) = [t for _, _, t in seen if t.name == "branch"]
    (nested,) = [t for _, _, t in seen if t.path[1] == branch_task.path]
    assert nested.checkpoint_ns.startswith(branch_task.checkpoint_ns + "|leaf:")


def test_a_finished_call_is_not_run_again_on_resume() -> None:
    calls: Counter[str] = Counter()

    @task
    def setup() -> int:
        calls["setup"] += 1
        return 2

    @task
    def ask(question: str) -> str:
        calls[question] += 1
        answer: str = interrupt(question)
        return answer

    @entrypoint(checkpointer=InMemorySaver())
    def flow(_: Any) -> list[str]:
        n = setup().result()
        return [ask(f"q{i}").result() for i in range(n)]

    config: RunnableConfig = {"configurable": {"thread_id": "r"}}
    assert [i.value for i in flow.invoke(1, config)["__interrupt__"]] == ["q0"]
    # the resume answers q0 only: q1, asked after it in the same run, interrupts
    assert [i.value for i in flow.invoke(Command(resume="a"), config)["__interrupt__"]] == ["q1"]
    assert flow.invoke(Command(resume="b"), config) == ["a", "b"]
    assert calls == {"setup": 1, "q0": 2, "q1": 2}


def test_a_call_outside_a_graph_is_refused() -> None:
    @task
    def alone() -> None:
        return None

    with pytest.raises(RuntimeError):
        alone()


def test_calls_run_inline_under_an_executor_without_submit_call() -> None:
    class Plain:
        def execute(self, loop: PregelLoop, tasks: Sequence[PreparedTask]) -> Iterator[TaskResult]:
            for t in tasks:
                yield TaskResult(t, run_task(t, loop.task_config(t), ()))

    ran_in: list[int] = []

    @task
    def inner(x: int) -> int:
        ran_in.append(threading.get_ident())
        return x + 1

    @entrypoint()
    def flow(x: int) -> int:
        return int(inner(x).result()) + int(inner(x + 1).result())

    loop = PregelLoop(
        flow,
        {"configurable": {}},
        checkpointer=None,
        sink=StreamSink({"updates", "values"}, False),
        options=run_options(flow, {}),
    )
    loop.first(1)
    chunks = [(mode, payload) for _, mode, payload in drive(loop, Plain())]
    assert chunks == [
        ("updates", {"inner": 2}),
        ("updates", {"inner": 3}),
        ("updates", {"flow": 5}),
        ("values", 5),
    ]
    assert ran_in == [threading.get_ident()] * 2


def test_a_step_waits_for_calls_its_caller_did_not_wait_for() -> None:
    finished: list[str] = []

    @task
    def slow(x: int) -> int:
        time.sleep(0.05)
        finished.append("sync")
        return x

    @task
    async def aslow(x: int) -> int:
        await asyncio.sleep(0.05)
        finished.append("async")
        return x

    @entrypoint()
    def flow(x: int) -> str:
        slow(x)  # never awaited
        return "done"

    @entrypoint()
    async def aflow(x: int) -> str:
        aslow(x)  # never awaited
        return "done"

    # the call's update streams in the same step, after the caller's
    assert list(flow.stream(1)) == [{"flow": "done"}, {"slow": 1}]

    async def run() -> list[Any]:
        return [c async for c in aflow.astream(1)]

    assert asyncio.run(run()) == [{"aflow": "done"}, {"aslow": 1}]
    assert finished == ["sync", "async"]
