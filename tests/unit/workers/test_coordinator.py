"""The coordinator and task jobs on an in-memory cluster: no Celery, Redis or Postgres.

Messages wait on an inline broker until the test delivers them, so the order jobs
finish in, duplicates and lost messages are the test's to choose.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from graphruntime.checkpoint import InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.errors import InvalidResumeError
from graphruntime.types import Command
from tests.unit.workers.graphs import (
    Calls,
    approval,
    chain,
    failing,
    fan,
    flaky,
    parallel_questions,
)
from workers.errors import GraphMismatchError, ResumeConflictError
from workers.testing import InlineCluster, Job


def thread() -> RunnableConfig:
    return {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}


def _only(job: Job) -> Any:
    """A ``pick`` for :meth:`InlineCluster.deliver` that delivers ``job`` and nothing else."""
    return lambda waiting: job


def in_process(graph: Any, inputs: list[Any]) -> list[Any]:
    local = graph.with_checkpointer(InMemorySaver())
    cfg = thread()
    return [local.invoke(i, cfg) for i in inputs]


def test_a_chain_runs_inline_in_one_coordinator_job() -> None:
    calls = Calls()
    cluster = InlineCluster({"chain": chain(calls)})
    out = cluster.run("chain", {"log": []}, thread())
    assert out == in_process(chain(Calls()), [{"log": []}])[0]
    assert [job.kind for job in cluster.broker.sent] == ["coordinate"]
    assert calls.counts == {"n0": 1, "n1": 1, "n2": 1}


def test_a_fan_out_runs_as_task_jobs_and_the_last_one_continues_the_run() -> None:
    calls = Calls()
    cluster = InlineCluster({"fan": fan(calls)})
    cfg = thread()
    handle = cluster.client.submit("fan", {"items": ["a", "b", "c"], "log": []}, cfg)
    cluster.deliver(limit=1)  # the coordinator: the fan-out step is dispatched
    assert [job.kind for job in cluster.broker.tasks] == ["execute"] * 3
    assert cluster.store.get_run(handle.run_id).status == "running"
    cluster.deliver()
    assert handle.wait(0) == in_process(fan(Calls()), [{"items": ["a", "b", "c"], "log": []}])[0]
    assert calls.counts == {"work:a": 1, "work:b": 1, "work:c": 1, "join": 1}
    # no coordinator message for the barrier: the last task job continued the run
    assert [job.kind for job in cluster.broker.sent].count("coordinate") == 1


def test_interrupts_of_parallel_tasks_come_back_in_task_order() -> None:
    """Whatever order the jobs finish in, __interrupt__ lists them as in-process does."""
    graph = parallel_questions(Calls())
    expected = in_process(parallel_questions(Calls()), [{"items": ["x", "y", "z"]}])[0]
    for order in ([0, 1, 2], [2, 1, 0], [1, 2, 0]):
        cluster = InlineCluster({"q": graph})
        handle = cluster.client.submit("q", {"items": ["x", "y", "z"]}, thread())
        cluster.deliver(limit=1)
        jobs = list(cluster.broker.tasks)
        for i in order:
            cluster.deliver(pick=_only(jobs[i]))
        out = handle.wait(0)
        assert [i.value for i in out["__interrupt__"]] == [
            i.value for i in expected["__interrupt__"]
        ]


def test_a_resume_is_checked_once_before_anything_is_written() -> None:
    cluster = InlineCluster({"approval": approval(Calls())})
    cfg = thread()
    paused = cluster.run("approval", {"items": ["a"], "log": []}, cfg)
    (question,) = paused["__interrupt__"]
    history = list(cluster.client.get_state_history("approval", cfg))
    with pytest.raises(InvalidResumeError, match="matches no pending interrupt"):
        cluster.run("approval", Command(resume={"f" * 32: "no"}), cfg)
    assert list(cluster.client.get_state_history("approval", cfg)) == history
    assert cluster.client.get_state("approval", cfg).interrupts == (question,)
    done = cluster.run("approval", Command(resume={question.id: "yes"}), cfg)
    assert done["decision"] == "yes"


def test_a_resume_sent_while_a_run_is_in_flight_queues_behind_it() -> None:
    """No ThreadBusyError for a resume: it is checked when its turn comes."""
    cluster = InlineCluster({"approval": approval(Calls())})
    cfg = thread()
    first = cluster.client.submit("approval", {"items": ["a", "b"], "log": []}, cfg)
    cluster.deliver(limit=1)  # the fan-out is out as task jobs: the run is in flight
    resume = cluster.client.submit("approval", Command(resume="yes"), cfg)
    cluster.deliver()
    assert first.wait(0)["__interrupt__"]
    assert resume.wait(0)["decision"] == "yes"


def test_the_same_resume_twice_applies_once_and_a_different_one_conflicts() -> None:
    calls = Calls()
    cluster = InlineCluster({"approval": approval(calls)})
    cfg = thread()
    cluster.run("approval", {"items": ["a"], "log": []}, cfg)
    one = cluster.client.submit("approval", Command(resume="yes"), cfg, idempotency_key="k")
    two = cluster.client.submit("approval", Command(resume="yes"), cfg, idempotency_key="k")
    assert (one.run_id, one.created, two.created) == (two.run_id, True, False)
    with pytest.raises(ResumeConflictError, match="different request"):
        cluster.client.submit("approval", Command(resume="no"), cfg, idempotency_key="k")
    with pytest.raises(ResumeConflictError, match="already being resumed"):
        cluster.client.submit("approval", Command(resume="no"), cfg)
    cluster.deliver()
    assert one.wait(0)["decision"] == "yes"
    assert calls.counts["approve"] == 2  # the pause, then the one resume


def test_a_thread_belongs_to_the_graph_that_started_it() -> None:
    cluster = InlineCluster({"chain": chain(Calls()), "approval": approval(Calls())})
    cfg = thread()
    cluster.run("chain", {"log": []}, cfg)
    with pytest.raises(GraphMismatchError, match="belongs to graph 'chain'"):
        cluster.client.submit("approval", Command(resume="yes"), cfg)
    with pytest.raises(GraphMismatchError):
        cluster.client.submit("approval", {"items": []}, cfg)


def test_a_resume_of_a_thread_that_never_ran_changes_nothing() -> None:
    cluster = InlineCluster({"approval": approval(Calls())})
    cfg = thread()
    with pytest.raises(InvalidResumeError, match="no checkpoints"):
        cluster.client.submit("approval", Command(resume="yes"), cfg)
    # nothing was bound: the thread can still start under any graph
    assert cluster.store.runs_of_thread(cfg["configurable"]["thread_id"]) == []
    assert cluster.store.bind_thread(cfg["configurable"]["thread_id"], "other") == "other"


def test_a_node_error_ends_the_run_with_that_error() -> None:
    cluster = InlineCluster({"boom": failing(Calls())})
    with pytest.raises(KeyError, match="missing"):
        cluster.run("boom", {"log": []}, thread())


def test_a_node_error_in_a_task_job_ends_the_run_with_that_error() -> None:
    calls = Calls()
    cluster = InlineCluster({"fan": fan(calls)})
    cfg = thread()
    with pytest.raises(ValueError, match="bad item 'bad'"):
        cluster.run("fan", {"items": ["a", "bad"], "log": []}, cfg)
    local = fan(Calls()).with_checkpointer(InMemorySaver())
    lcfg = thread()
    with pytest.raises(ValueError, match="bad item 'bad'"):
        local.invoke({"items": ["a", "bad"], "log": []}, lcfg)
    # the finished sibling's writes are kept, as in-process
    assert cluster.client.get_state("fan", cfg).next == local.get_state(lcfg).next
    assert calls.counts["join"] == 0


def test_runs_of_a_thread_go_in_order_whichever_message_comes_first() -> None:
    calls = Calls()
    cluster = InlineCluster({"chain": chain(calls, n=1)})
    cfg = thread()
    first = cluster.client.submit("chain", {"log": ["first"]}, cfg)
    second = cluster.client.submit("chain", {"log": ["second"]}, cfg)
    cluster.deliver(pick=lambda waiting: waiting[-1])  # the second run's message first
    assert first.wait(0)["log"] == ["first", "n0"]
    assert second.wait(0)["log"] == ["first", "n0", "second", "n0"]


def test_a_redelivered_task_job_runs_nothing_again() -> None:
    calls = Calls()
    cluster = InlineCluster({"fan": fan(calls)})
    handle = cluster.client.submit("fan", {"items": ["a", "b"], "log": []}, thread())
    cluster.deliver(limit=1)
    jobs = list(cluster.broker.tasks)
    cluster.broker.tasks.extend(jobs)  # every task message delivered twice
    cluster.deliver()
    assert handle.wait(0)["decision"] == "a,b"
    assert calls.counts == {"work:a": 1, "work:b": 1, "join": 1}


def test_a_copy_of_a_running_task_does_not_run_it_while_its_worker_is_alive() -> None:
    calls = Calls()
    cluster = InlineCluster({"fan": fan(calls)})
    handle = cluster.client.submit("fan", {"items": ["a", "b"], "log": []}, thread())
    cluster.deliver(limit=1)
    job = cluster.broker.tasks[0]
    assert job.message is not None
    ref = job.message.tasks[0]
    # worker 0 claims the task (it is running it)...
    claimed = cluster.store.claim_tasks(
        job.run_id, job.message.checkpoint_id, [(ref.id, ref.path, 0)], "worker-0", 10
    )
    assert claimed.ids == [ref.id]
    # ...so a copy delivered to worker 1 does nothing
    cluster.deliver(1, pick=_only(job))
    assert calls.counts == {}
    assert cluster.store.get_run(handle.run_id).status == "running"


def test_a_task_of_a_dead_worker_is_re_sent_and_finished_by_another() -> None:
    from workers.sweeper import sweep_once

    calls = Calls()
    cluster = InlineCluster({"fan": fan(calls)})
    handle = cluster.client.submit("fan", {"items": ["a", "b"], "log": []}, thread())
    cluster.deliver(limit=1)
    job = cluster.broker.tasks.pop(0)  # worker 0 took it, claimed it, and died
    assert job.message is not None
    ref = job.message.tasks[0]
    cluster.store.claim_tasks(
        job.run_id, job.message.checkpoint_id, [(ref.id, ref.path, 0)], "worker-0", 10
    )
    cluster.deliver(1)  # the other task
    ctx = cluster.workers[1]
    assert sweep_once(ctx).tasks_resent == 0  # worker 0 is alive as far as anyone knows
    cluster.clock.advance(ctx.stale + 1)
    cluster.beat("worker-1")  # only worker 1 still beats
    assert sweep_once(ctx).tasks_resent == 1
    assert sweep_once(ctx).tasks_resent == 0  # re-sent once, not every sweep
    cluster.deliver(1)
    assert handle.wait(0)["decision"] == "a,b"
    assert calls.counts == {"work:a": 1, "work:b": 1, "join": 1}


def test_lost_messages_are_re_sent_once_the_queues_are_empty() -> None:
    from workers.sweeper import sweep_once

    calls = Calls()
    cluster = InlineCluster({"fan": fan(calls)})
    handle = cluster.client.submit("fan", {"items": ["a", "b", "c"], "log": []}, thread())
    cluster.deliver(limit=1)
    lost = cluster.broker.lose_all()  # a Redis restart without persistence
    assert len(lost) == 3
    ctx = cluster.workers[0]
    assert sweep_once(ctx).tasks_resent == 0  # not yet: they may still be on their way
    cluster.clock.advance(ctx.stale + 1)
    cluster.beat()
    assert sweep_once(ctx).tasks_resent == 3
    cluster.deliver()
    assert handle.wait(0)["decision"] == "a,b,c"


def test_a_lost_coordinator_message_is_re_sent_for_a_queued_run() -> None:
    from workers.sweeper import sweep_once

    cluster = InlineCluster({"chain": chain(Calls())})
    handle = cluster.client.submit("chain", {"log": []}, thread())
    cluster.broker.lose_all()
    ctx = cluster.workers[0]
    cluster.clock.advance(ctx.stale + 1)
    cluster.beat()
    assert sweep_once(ctx).runs_nudged == 1
    assert sweep_once(ctx).runs_nudged == 0
    cluster.deliver()
    assert handle.wait(0)["log"] == ["n0", "n1", "n2"]


def test_a_long_node_of_a_live_worker_costs_no_jobs_however_long_it_runs() -> None:
    from workers.sweeper import sweep_once

    cluster = InlineCluster({"chain": chain(Calls())})
    handle = cluster.client.submit("chain", {"log": []}, thread())
    run = cluster.store.get_run(handle.run_id)
    # worker 0 is running the run's inline node: it holds the thread's lease
    assert cluster.store.acquire_thread(run.thread_id, "worker-0", 10)
    cluster.broker.coordinator.clear()
    sent = len(cluster.broker.sent)
    for _ in range(50):
        cluster.clock.advance(cluster.settings.sweep_interval)
        cluster.beat()
        sweep_once(cluster.workers[1])
    assert len(cluster.broker.sent) == sent


def test_retries_run_as_new_jobs_after_the_backoff() -> None:
    calls = Calls()
    cluster = InlineCluster({"flaky": flaky(calls, failures=2)})
    handle = cluster.client.submit("flaky", {"log": []}, thread())
    cluster.deliver()
    retries = [job for job in cluster.broker.sent if job.kind == "execute"]
    assert [job.delay for job in retries] == [1.0, 2.0]  # the policy's backoff, as countdowns
    assert [job.message.tasks[0].attempts for job in retries if job.message] == [1, 2]
    assert handle.wait(0)["log"] == ["ok"]
    assert calls.counts == {"flaky": 3}


def test_a_message_of_an_earlier_attempt_claims_nothing() -> None:
    calls = Calls()
    cluster = InlineCluster({"flaky": flaky(calls, failures=1)})
    handle = cluster.client.submit("flaky", {"log": []}, thread())
    cluster.deliver(limit=1)  # the inline attempt fails: a retry job waits out its backoff
    (retry,) = cluster.broker.tasks
    assert retry.message is not None
    stale = retry.message.model_copy(
        update={"tasks": (retry.message.tasks[0].model_copy(update={"attempts": 0}),)}
    )
    cluster.broker.tasks.insert(0, Job("execute", retry.run_id, stale, seq=-1))
    cluster.deliver(limit=1)  # the stale copy
    assert calls.counts == {"flaky": 1}
    cluster.deliver()
    assert handle.wait(0)["log"] == ["ok"]
    assert calls.counts == {"flaky": 2}


def test_a_forged_message_for_another_tasks_path_changes_nothing() -> None:
    calls = Calls()
    cluster = InlineCluster({"fan": fan(calls)})
    handle = cluster.client.submit("fan", {"items": ["a", "b"], "log": []}, thread())
    cluster.deliver(limit=1)
    first, second = cluster.broker.tasks
    assert first.message is not None
    assert second.message is not None
    other_path = second.message.tasks[0].path
    forged = first.message.model_copy(
        update={"tasks": (first.message.tasks[0].model_copy(update={"path": other_path}),)}
    )
    cluster.broker.tasks.insert(0, Job("execute", first.run_id, forged, seq=-1))
    cluster.deliver(limit=1)
    assert calls.counts == {}  # it claimed nothing: the real task is not counted done
    cluster.deliver()
    assert handle.wait(0)["decision"] == "a,b"
    assert calls.counts == {"work:a": 1, "work:b": 1, "join": 1}


def test_a_run_the_worker_cannot_decode_ends_with_that_error_and_frees_the_thread() -> None:
    calls = Calls()
    cluster = InlineCluster({"chain": chain(calls, n=1)})
    cfg = thread()
    bad = cluster.client.submit("chain", {"log": []}, cfg)
    # this worker's serde cannot load what the client stored
    row = cluster.memory.memory.runs[bad.run_id]
    row["payload"] = b'{"__gr__": "dataclass", "cls": "client_script:Doc", "v": {}}'
    row["payload_type"] = "json"
    good = cluster.client.submit("chain", {"log": []}, cfg)
    cluster.deliver()
    with pytest.raises(Exception, match="cannot be decoded"):
        bad.wait(0)
    assert good.wait(0)["log"] == ["n0"]
    assert len(cluster.broker.sent) <= 3  # no job re-sent itself


def test_a_resume_with_update_on_a_multi_task_step_reaches_every_task_job() -> None:
    calls = Calls()
    graph = parallel_questions(calls)
    cluster = InlineCluster({"q": graph})
    cfg = thread()
    paused = cluster.run("q", {"items": ["x", "y"], "log": []}, cfg)
    answers = {i.id: f"a{n}" for n, i in enumerate(paused["__interrupt__"])}
    done = cluster.run("q", Command(resume=answers, update={"log": ["u"]}), cfg)
    local = graph.with_checkpointer(InMemorySaver())
    lcfg = thread()
    lpaused = local.invoke({"items": ["x", "y"], "log": []}, lcfg)
    lanswers = {i.id: f"a{n}" for n, i in enumerate(lpaused["__interrupt__"])}
    assert done == local.invoke(Command(resume=lanswers, update={"log": ["u"]}), lcfg)


def test_a_coordinator_that_dies_after_recording_a_command_does_not_record_it_twice() -> None:
    """The run is marked started with the step's null writes before its Command is saved."""
    from workers.coordinator import coordinate

    calls = Calls()
    cluster = InlineCluster({"approval": approval(calls)})
    cfg = thread()
    cluster.run("approval", {"items": ["a"], "log": []}, cfg)
    handle = cluster.client.submit("approval", Command(resume="yes", update={"log": ["u"]}), cfg)
    ctx = cluster.workers[0]
    real_put = cluster.saver.put

    def dies_at_the_next_checkpoint(*args: Any, **kwargs: Any) -> Any:
        raise SystemExit("killed")

    cluster.saver.put = dies_at_the_next_checkpoint  # type: ignore[method-assign]
    cluster.broker.coordinator.clear()
    with pytest.raises(SystemExit):
        coordinate(ctx, handle.run_id)  # recorded the Command, ran the node, died
    cluster.saver.put = real_put  # type: ignore[method-assign]
    cluster.store.release_thread(cfg["configurable"]["thread_id"], ctx.worker_name)
    cluster.broker.send_coordinate(handle.run_id)  # redelivered
    cluster.deliver()
    out = handle.wait(0)
    assert out["log"].count("u") == 1, out
    assert out["decision"] == "yes"


def test_a_job_that_gives_up_on_an_outage_frees_its_claims_for_its_retry() -> None:
    """Its retry may land on another worker: the claims must not wait for this one."""
    from workers.errors import StoreUnavailableError

    calls = Calls()
    cluster = InlineCluster({"fan": fan(calls)})
    handle = cluster.client.submit("fan", {"items": ["a", "b"], "log": []}, thread())
    cluster.deliver(limit=1)
    job = cluster.broker.tasks[0]
    real_flush = cluster.saver.put_writes

    def outage(*args: Any, **kwargs: Any) -> None:
        raise StoreUnavailableError("Postgres restarting")

    cluster.saver.put_writes = outage  # type: ignore[method-assign]
    with pytest.raises(StoreUnavailableError):
        cluster.deliver(0, limit=1, pick=_only(job))
    cluster.saver.put_writes = real_flush  # type: ignore[method-assign]
    # Celery re-queues the job; another worker takes it and may run the task
    cluster.broker.tasks.insert(0, job)
    cluster.deliver(1)
    assert handle.wait(0)["decision"] == "a,b"


def test_a_heartbeat_frees_claims_its_process_no_longer_works_on() -> None:
    calls = Calls()
    cluster = InlineCluster({"fan": fan(calls)})
    cluster.client.submit("fan", {"items": ["a", "b"], "log": []}, thread())
    cluster.deliver(limit=1)
    job = cluster.broker.tasks[0]
    assert job.message is not None
    ref = job.message.tasks[0]
    args = (job.run_id, job.message.checkpoint_id)
    assert cluster.store.claim_tasks(*args, [(ref.id, ref.path, 0)], "worker-0", 10, "job-1")
    # worker 0's job ended without completing it (it gave up and could not say so)
    cluster.store.heartbeat("worker-0", "inline", 0, keep=None, grace=5)
    assert cluster.memory.memory.tasks[(*args, ref.id)]["worker"] == "worker-0"  # too fresh to free
    cluster.clock.advance(6)
    cluster.store.heartbeat("worker-0", "inline", 0, keep="job-2", grace=5)
    assert cluster.memory.memory.tasks[(*args, ref.id)]["worker"] is None
    # a claim of the job it is running now stays, however old
    assert cluster.store.claim_tasks(*args, [(ref.id, ref.path, 0)], "worker-0", 10, "job-2")
    cluster.clock.advance(600)
    cluster.store.heartbeat("worker-0", "inline", 0, keep="job-2", grace=5)
    assert cluster.memory.memory.tasks[(*args, ref.id)]["worker"] == "worker-0"


def test_input_the_workers_could_not_read_back_is_refused_before_anything_is_written() -> None:
    import dataclasses

    from graphruntime.errors import SerializationError

    @dataclasses.dataclass
    class Doc:  # defined in the client's own code: no worker can load it
        text: str

    cluster = InlineCluster({"chain": chain(Calls())})
    cfg = thread()
    with pytest.raises(SerializationError, match="Nothing was queued"):
        cluster.client.submit("chain", {"log": [Doc("x")]}, cfg)
    assert cluster.store.runs_of_thread(cfg["configurable"]["thread_id"]) == []
    assert cluster.broker.sent == []


def test_a_lease_is_freed_through_an_outage_so_the_thread_is_not_left_to_a_live_worker() -> None:
    """Chaos found it: Postgres restarted as the last task job continued the run; the
    lease stayed with that (live) worker, and no other job could take the thread."""
    from workers.errors import StoreUnavailableError

    calls = Calls()
    cluster = InlineCluster({"fan": fan(calls)})
    handle = cluster.client.submit("fan", {"items": ["a", "b"], "log": []}, thread())
    cluster.deliver(limit=1)  # the fan-out step is dispatched
    real_release = cluster.store.release_thread
    failures = iter([StoreUnavailableError("Postgres restarting")] * 2)

    def flaky_release(thread_id: str, worker: str) -> str | None:
        for exc in failures:
            raise exc
        return real_release(thread_id, worker)

    cluster.store.release_thread = flaky_release  # type: ignore[method-assign]
    cluster.deliver(0)  # the task jobs; the last one continues the run and frees the lease
    assert handle.wait(0)["decision"] == "a,b"
    run = cluster.store.get_run(handle.run_id)
    assert cluster.store.acquire_thread(run.thread_id, "another-worker", cluster.workers[0].stale)
