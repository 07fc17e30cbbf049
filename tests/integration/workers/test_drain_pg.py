"""A free coordinator job drains the run table (workers/_drain.py), on Postgres and Redis.

The client and the drainer race on the flag only in the orders written in the module's
docstring; each order is played here step by step (a hook runs the client at the exact
point), never by timing.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import psycopg
import pytest
import redis as redis_lib

from graphruntime.config import RunnableConfig
from tests.integration.workers.test_approvals_pg import db, make_cluster
from tests.unit.workers.graphs import Calls, chain
from workers import _drain
from workers._drain import drain
from workers._drain_flag import FLAG_TTL, DrainFlag
from workers.context import WorkerContext
from workers.coordinator import coordinate_many
from workers.settings import Settings
from workers.store import Claim
from workers.sweeper import sweep_once
from workers.testing import InlineCluster, Job

pytestmark = pytest.mark.integration

__all__ = ("db", "make_cluster")


@pytest.fixture(scope="module")
def redis_server() -> Iterator[Any]:
    from workers.embedded import redis_url

    client = redis_lib.Redis.from_url(redis_url().replace("redis+socket://", "unix://"))
    yield client
    client.close()


class Drained:
    """A cluster on Postgres whose broker has a real Redis (the flag's), and its graph."""

    def __init__(self, make: Callable[..., InlineCluster], redis: Any) -> None:
        self.calls = Calls()
        queue = f"test-drain-{uuid.uuid4().hex[:8]}"
        settings = Settings(
            database_url="memory://", redis_url="memory://", coordinator_queue=queue
        )
        self.cluster = make({"chain": chain(self.calls)}, settings=settings)
        setattr(self.cluster.broker, "redis", redis)  # noqa: B010 - what CeleryBroker has
        self.flag = DrainFlag(redis, queue)
        self.ctx = self.cluster.workers[0]

    def submit(self, thread: str) -> str:
        handle = self.cluster.client.submit("chain", {"log": []}, _cfg(thread))
        return handle.run_id

    def status(self, run_id: str) -> str:
        return self.cluster.store.get_run(run_id).status

    def messages(self) -> list[str]:
        return [run_id for job in self.cluster.broker.coordinator for run_id in job.run_ids]

    def flag_up(self) -> bool:
        return bool(self.flag.redis.exists(self.flag.key("chain")))


@pytest.fixture
def drained(make_cluster: Callable[..., InlineCluster], redis_server: Any) -> Drained:
    return Drained(make_cluster, redis_server)


def _cfg(thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": f"{thread}-{uuid.uuid4().hex[:8]}"}}


def test_a_job_with_nothing_queued_leaves_the_flag_down(drained: Drained) -> None:
    assert drain(drained.ctx, coordinate_many, when_idle=True) == []
    assert not drained.flag_up()


def test_a_job_drains_only_while_coordinator_messages_wait(drained: Drained) -> None:
    first = drained.submit("first")
    (message,) = drained.cluster.broker.coordinator
    drained.cluster.broker.coordinator.clear()  # no message waits: the run is left alone
    assert drain(drained.ctx, coordinate_many) == []
    assert drained.status(first) == "queued"
    drained.cluster.broker.coordinator.append(message)  # one waits: the job takes its run
    assert drain(drained.ctx, coordinate_many) == []
    assert drained.status(first) == "success"
    drained.cluster.deliver()  # the message comes after: nothing runs twice
    assert drained.calls.counts == {"n0": 1, "n1": 1, "n2": 1}


def test_runs_submitted_while_the_flag_is_up_send_no_message_and_the_drain_ends_them(
    drained: Drained,
) -> None:
    drained.flag.raise_(["chain"])
    thread = _cfg("twice")
    first = drained.cluster.client.submit("chain", {"log": []}, thread).run_id
    second = drained.cluster.client.submit("chain", {"log": []}, thread).run_id
    other = drained.submit("other")
    assert drained.messages() == []
    assert drain(drained.ctx, coordinate_many, when_idle=True) == []
    assert [drained.status(r) for r in (first, second, other)] == ["success"] * 3
    state = drained.cluster.client.get_state("chain", thread)
    assert state.values["log"] == ["n0", "n1", "n2"] * 2  # the thread's runs in order
    assert not drained.flag_up()


def test_a_run_submitted_while_the_drainer_works_is_taken_without_a_message(
    drained: Drained,
) -> None:
    first = drained.submit("first")
    drained.cluster.broker.coordinator.clear()  # its message is lost: the table has it
    late: list[str] = []

    def coordinate(
        ctx: WorkerContext, run_ids: Sequence[str], claims: Sequence[Claim] | None = None
    ) -> list[str]:
        if not late:
            assert drained.flag_up()
            late.append(drained.submit("late"))  # the flag is up: no message
        return coordinate_many(ctx, run_ids, claims)

    assert drain(drained.ctx, coordinate, when_idle=True) == []
    assert drained.messages() == []
    assert [drained.status(first), drained.status(late[0])] == ["success", "success"]


class LowerThen(DrainFlag):
    """A flag that runs ``hook`` as the drainer lowers it: ``before`` or after the DEL."""

    def __init__(self, flag: DrainFlag, hook: Callable[[], None], *, before: bool) -> None:
        super().__init__(flag.redis, flag.queue)
        self.hook, self.before, self.lowered = hook, before, 0

    def lower(self, graphs: Sequence[str], token: str | None = None) -> bool:
        self.lowered += 1
        if self.lowered == 1 and self.before:
            self.hook()
        lowered = super().lower(graphs, token)
        if self.lowered == 1 and not self.before:
            self.hook()
        return lowered


def _submit_as_it_lowers(drained: Drained, *, before: bool) -> tuple[str, str]:
    """Drain one run whose message was lost; a client submits another as the drainer
    lowers its flag, ``before`` the DEL or after it. The two run ids."""
    first = drained.submit("first")
    drained.cluster.broker.coordinator.clear()
    late: list[str] = []
    flag = LowerThen(drained.flag, lambda: late.append(drained.submit("late")), before=before)
    assert drain(drained.ctx, coordinate_many, flag, when_idle=True) == []
    return first, late[0]


def test_a_run_that_saw_the_flag_just_before_it_went_down_is_taken_by_the_last_look(
    drained: Drained,
) -> None:
    first, late = _submit_as_it_lowers(drained, before=True)
    assert drained.messages() == []  # it saw the flag up
    assert [drained.status(first), drained.status(late)] == ["success", "success"]
    assert not drained.flag_up()


def test_a_run_submitted_after_the_flag_went_down_is_sent_and_taken_once(
    drained: Drained,
) -> None:
    first, late = _submit_as_it_lowers(drained, before=False)
    assert drained.messages() == [late]  # the flag was down: its message went out
    assert drained.status(late) == "success"  # the last look took it meanwhile
    drained.cluster.deliver()  # the message comes later: nothing runs twice
    assert drained.status(late) == "success"
    assert drained.calls.counts == {"n0": 2, "n1": 2, "n2": 2}
    assert drained.status(first) == "success"


def test_a_flag_left_by_a_killed_drainer_expires_and_its_runs_are_found_by_the_sweeper(
    drained: Drained, db: str
) -> None:
    drained.flag.raise_(["chain"])  # raised, then the drainer was killed
    ttl = drained.flag.redis.pttl(drained.flag.key("chain"))
    assert 0 < ttl <= FLAG_TTL * 1000
    stranded = drained.submit("stranded")
    assert drained.messages() == []
    with psycopg.connect(db, autocommit=True) as conn:  # time passes: the run stalls
        conn.execute(
            "UPDATE graphruntime_runs SET updated_at = now() - interval '1 hour' WHERE run_id = %s",
            (stranded,),
        )
    assert sweep_once(drained.ctx).runs_nudged == 1
    assert drained.messages() == [stranded]
    drained.cluster.deliver()
    assert drained.status(stranded) == "success"


@pytest.mark.parametrize("where", ["postgres", "memory"])
def test_a_claim_from_the_table_leaves_held_threads_runs_behind_a_running_one_and_skipped_runs(
    make_cluster: Callable[..., InlineCluster], redis_server: Any, where: str
) -> None:
    in_memory = lambda graphs, **kw: InlineCluster(graphs, **kw)  # noqa: E731
    drained = Drained(make_cluster if where == "postgres" else in_memory, redis_server)
    store, ctx = drained.cluster.store, drained.ctx
    held, behind = _cfg("held"), _cfg("behind")
    client = drained.cluster.client
    held_run = client.submit("chain", {"log": []}, held).run_id
    running = client.submit("chain", {"log": []}, behind).run_id
    queued_behind = client.submit("chain", {"log": []}, behind).run_id
    skipped, first, second = (drained.submit(name) for name in ("skipped", "first", "second"))
    other = drained.cluster.workers[1].worker_name
    assert store.acquire_thread(held["configurable"]["thread_id"], other, ctx.stale)
    store.set_running(running, 3)
    me = ctx.worker_name

    def claim(graphs: list[str], limit: int = 32) -> list[Claim]:
        return store.claim_queued_runs(graphs, me, ctx.stale, "job", skip=[skipped], limit=limit)

    assert claim(["another"]) == []
    taken = claim(["chain"], limit=1) + claim(["chain"])
    assert [c.run.run_id for c in taken if c.run is not None] == [first, second]
    assert all(c.leased and c.found and not c.ended and c.epoch for c in taken)
    assert [c.run.status for c in taken if c.run is not None] == ["queued", "queued"]  # as it was
    assert [store.get_run(r).status for r in (first, second)] == ["running", "running"]
    assert claim(["chain"]) == []  # taken runs are running now; the rest stay queued
    assert [store.get_run(r).status for r in (held_run, queued_behind, skipped)] == ["queued"] * 3


class Resident:
    """``drain(stay=...)`` in a thread of its own: the worker's resident job."""

    def __init__(self, drained: Drained) -> None:
        self.failures: list[str] = []
        self.thread = threading.Thread(
            target=lambda: self.failures.extend(
                drain(drained.ctx, coordinate_many, drained.flag, stay=True)
            ),
            daemon=True,
        )
        self.thread.start()

    def gone(self, within: float) -> bool:
        self.thread.join(within)
        return not self.thread.is_alive()


def _until(check: Callable[[], bool], within: float = 30.0) -> bool:
    give_up = time.monotonic() + within
    while time.monotonic() < give_up:
        if check():
            return True
        time.sleep(0.01)
    return check()


def test_a_resident_takes_runs_submitted_while_it_sleeps_and_no_message_is_sent(
    drained: Drained, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_drain, "STAY_IDLE", 30.0)  # it leaves only with its time
    monkeypatch.setattr(_drain, "RESIDENT_SECONDS", 3.0)
    resident = Resident(drained)
    runs = []
    for thread in ("one", "two"):
        assert _until(drained.flag_up)  # nothing queued: it stays, asleep, its flag up
        runs.append(drained.submit(thread))
        assert _until(lambda: drained.status(runs[-1]) == "success")
    assert drained.messages() == []  # each client woke it instead of sending a message
    assert resident.gone(30.0)  # its time is up: the flag down, the last look taken
    assert resident.failures == []
    assert not drained.flag_up()
    late = drained.submit("late")  # no resident now: the message goes out
    assert drained.messages() == [late]


def _asleep(drained: Drained, monkeypatch: pytest.MonkeyPatch) -> Resident:
    """A resident that would stay a minute, asleep under its flag."""
    monkeypatch.setattr(_drain, "STAY_IDLE", 60.0)
    monkeypatch.setattr(_drain, "RESIDENT_SECONDS", 60.0)
    resident = Resident(drained)
    assert _until(drained.flag_up)
    return resident


def test_a_resident_leaves_when_task_messages_wait(
    drained: Drained, monkeypatch: pytest.MonkeyPatch
) -> None:
    resident = _asleep(drained, monkeypatch)
    drained.cluster.broker.tasks.append(Job("execute", "some-run"))  # a task job waits
    assert resident.gone(30.0)  # well before its time: the process is the task's
    assert not drained.flag_up()


def test_a_resident_stays_past_a_drainers_time_and_leaves_when_its_worker_shuts_down(
    drained: Drained, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_drain, "STAY_IDLE", 60.0)
    monkeypatch.setattr(_drain, "DRAIN_SECONDS", 0.1)  # a drainer's time: not the resident's
    monkeypatch.setattr(_drain, "RESIDENT_SECONDS", 60.0)
    drained.flag.stay()
    resident = Resident(drained)
    assert _until(drained.flag_up)
    time.sleep(0.5)
    run = drained.submit("after a drainer's time")
    assert _until(lambda: drained.status(run) == "success")
    assert drained.messages() == []  # the resident took it
    drained.flag.leave(60.0)  # what the worker's main process does when it shuts down
    assert resident.gone(30.0)  # well before its time
    assert not drained.flag_up()
    drained.flag.stay()  # the worker started again: its next resident stays
    resident = _asleep(drained, monkeypatch)
    assert not resident.gone(0.5)
    drained.flag.leave(60.0)
    assert resident.gone(30.0)


def test_a_worker_has_one_resident(drained: Drained) -> None:
    other = DrainFlag(drained.flag.redis, drained.flag.queue)  # another process's job
    assert other.hold("another job")  # a live resident holds the worker's key
    # this job leaves at once, the flag left to that resident
    assert drain(drained.ctx, coordinate_many, drained.flag, stay=True) == []
    assert not drained.flag_up()
    ttl = drained.flag.redis.pttl(drained.flag.resident_key())
    assert 0 < ttl <= FLAG_TTL * 1000  # a killed resident's key expires as its flag does
    assert not drained.flag.keep("this job")
    drained.flag.free("this job")  # only its holder frees it
    assert other.keep("another job")
    other.free("another job")
    assert drained.flag.hold("this job")
    drained.flag.free("this job")


def test_a_resident_frees_the_queue_when_it_leaves(
    drained: Drained, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_drain, "STAY_IDLE", 0.2)
    resident = Resident(drained)
    assert resident.gone(30.0)
    assert drained.flag.redis.exists(drained.flag.resident_key()) == 0
    assert drained.flag.hold("next job")  # the next free job may stay


def _working(
    drained: Drained, monkeypatch: pytest.MonkeyPatch, late: list[str], *, queue_late: int = 1
) -> threading.Thread:
    """A resident that stays a minute; at its first work, ``queue_late`` runs are
    submitted (their ids into ``late``)."""
    monkeypatch.setattr(_drain, "STAY_IDLE", 60.0)
    monkeypatch.setattr(_drain, "RESIDENT_SECONDS", 60.0)

    def coordinate(
        ctx: WorkerContext, run_ids: Sequence[str], claims: Sequence[Claim] | None = None
    ) -> list[str]:
        if not late:  # its flag stays up while it works: these clients send no message
            assert drained.flag_up()
            late.extend(drained.submit(f"late{i}") for i in range(queue_late))
        return coordinate_many(ctx, run_ids, claims)

    resident = threading.Thread(
        target=drain, args=(drained.ctx, coordinate, drained.flag), kwargs={"stay": True}
    )
    resident.start()
    assert _until(drained.flag_up)
    return resident


def _let_go(drained: Drained, resident: threading.Thread) -> None:
    drained.cluster.broker.tasks.append(Job("execute", "some-run"))  # it leaves for it
    resident.join(30)
    assert not resident.is_alive()


def test_a_run_queued_while_the_resident_works_is_taken_after_its_work_without_a_message(
    drained: Drained, monkeypatch: pytest.MonkeyPatch
) -> None:
    late: list[str] = []
    resident = _working(drained, monkeypatch, late)
    first = drained.submit("first")
    assert _until(lambda: [drained.status(r) for r in [first, *late]] == ["success"] * 2)
    assert drained.messages() == []
    # done, it sleeps again as the worker's resident, the wake-up it was pushed taken
    assert _until(lambda: drained.flag.redis.llen(drained.flag.wake_key("chain")) == 0)
    assert resident.is_alive()
    assert drained.flag_up()
    assert drained.flag.redis.exists(drained.flag.resident_key()) == 1
    _let_go(drained, resident)
    assert not drained.flag_up()


def test_a_resident_whose_claim_was_a_full_batch_hands_half_back_and_claims_again(
    drained: Drained, monkeypatch: pytest.MonkeyPatch
) -> None:
    drained.ctx.settings = drained.ctx.settings.model_copy(update={"coordinate_batch": 2})
    late: list[str] = []
    resident = _working(drained, monkeypatch, late, queue_late=5)
    first = drained.submit("first")
    # five runs behind one wake-up (one pending is enough): full batches of two, each
    # claimed after the last (no wake-up for them), and half of each handed back

    def settled() -> bool:
        sent = drained.messages()
        runs = [first, *late]
        return len(late) == 5 and all(drained.status(r) == "success" or r in sent for r in runs)

    assert _until(settled)
    handed = drained.messages()
    assert drained.status(first) == "success"
    assert handed  # it was behind: some went out as messages
    assert len(handed) == len(set(handed)) < len(late)
    assert [drained.status(r) for r in handed] == ["queued"] * len(handed)
    drained.cluster.deliver()  # a free process takes them
    assert [drained.status(r) for r in late] == ["success"] * len(late)
    assert drained.calls.counts == {"n0": 6, "n1": 6, "n2": 6}  # nothing ran twice
    _let_go(drained, resident)


def test_a_host_has_a_resident_per_slot_and_a_worker_one(drained: Drained) -> None:
    redis, queue = drained.flag.redis, drained.flag.queue

    def flag(worker: str, host: str, slots: int = 1) -> DrainFlag:
        return DrainFlag(redis, queue, worker, host, slots)

    held = [flag("w1@a", "a"), flag("w2@b", "b")]  # one host each: one resident each
    assert held[0].hold("job of w1")
    assert held[1].hold("job of w2")
    assert not flag("w3@a", "a").hold("job of w3")  # host a's one slot is taken
    assert not flag("w1@a", "a", slots=2).hold("another job of w1")  # w1 has one
    held.append(flag("w3@a", "a", slots=2))  # a host of four cores: two slots
    assert held[2].hold("job of w3")
    for f, token in zip(held, ("job of w1", "job of w2", "job of w3"), strict=True):
        f.free(token)
    assert redis.exists(*held[2].slot_keys(), held[0].resident_key()) == 0


def test_a_resident_sleeps_as_before_when_redis_forgot_its_scripts(drained: Drained) -> None:
    # its sleep calls the scripts by their SHA1 on a connection of its own; a restarted
    # Redis knows none: the flags are still raised and it is out of the sleepers after
    flag, redis = DrainFlag(drained.flag.redis, drained.flag.queue, "w@a"), drained.flag.redis
    sleepers = flag.sleepers_key("chain")
    assert flag.sleep(["chain"], "a", 0.05) == (False, False)
    redis.delete(flag.key("chain"))
    redis.script_flush()
    redis.lpush(flag.own_key("a"), "1")
    assert flag.sleep(["chain"], "a", 0.05) == (True, False)
    assert drained.flag_up()
    assert redis.zscore(sleepers, "a") is None
    flag.leave(5.0)
    redis.script_flush()
    assert flag.sleep(["chain"], "a", 0.05) == (False, True)  # its worker shuts down
    assert redis.zscore(sleepers, "a") is None
    flag.stay()
    flag.lower(["chain"], "a")
    flag.close()


def test_the_flag_stays_up_while_another_resident_lives(drained: Drained) -> None:
    redis, queue = drained.flag.redis, drained.flag.queue
    one, two = (DrainFlag(redis, queue, f"w@{host}", host) for host in ("a", "b"))
    assert one.hold("one")
    assert two.hold("two")
    one.raise_(["chain"])
    assert one.wake("chain")  # nobody asleep: pending on the shared list
    assert one.lower(["chain"], "one") is False  # "two" lives: it takes the wake-up
    one.free("one")
    assert drained.flag_up()
    assert redis.llen(one.wake_key("chain")) == 1
    assert drained.flag.lower(["chain"]) is False  # a drainer done: the same
    assert two.lower(["chain"], "two") is True  # the last one lowers it and drops them
    two.free("two")
    assert not drained.flag_up()
    assert redis.llen(one.wake_key("chain")) == 0


def test_of_two_residents_that_leave_at_once_the_second_lowers_the_flag(
    drained: Drained,
) -> None:
    """Both lower before either frees its keys (each then takes its last look): the second
    sees no resident left, so the flag goes down and a client sends its message. Were it
    left up, a client would leave a wake-up nobody takes, and its run would wait for the
    sweeper."""
    redis, queue = drained.flag.redis, drained.flag.queue
    one, two = (DrainFlag(redis, queue, f"w@{host}", host) for host in ("a", "b"))
    assert one.hold("one")
    assert two.hold("two")
    one.raise_(["chain"])
    assert one.lower(["chain"], "one") is False  # "two" lives yet
    assert two.lower(["chain"], "two") is True  # "one" is leaving: no resident is left
    assert not drained.flag_up()
    assert not one.wake("chain")  # a client now sends its run's message
    one.free("one")
    two.free("two")


def test_a_dead_residents_entry_does_not_keep_the_flag_up(drained: Drained) -> None:
    redis = drained.flag.redis
    redis.zadd(drained.flag.residents_key(), {"killed": 1})  # its time ran out long ago
    drained.flag.raise_(["chain"])
    assert drained.flag.lower(["chain"]) is True
    assert not drained.flag_up()


def test_lowering_the_flag_drops_the_pending_wake_up(drained: Drained) -> None:
    drained.flag.raise_(["chain"])
    assert drained.flag.wake("chain") is True
    drained.flag.lower(["chain"])  # the lowerer's last look comes next: it is that look
    assert drained.flag.redis.llen(drained.flag.wake_key("chain")) == 0
    assert not drained.flag_up()


def test_a_wake_up_goes_to_the_last_sleeper_else_to_the_shared_list(drained: Drained) -> None:
    flag, redis = drained.flag, drained.flag.redis
    shared, sleepers = flag.wake_key("chain"), flag.sleepers_key("chain")
    assert flag.wake("chain") is False  # flag down: the client sends its message
    assert redis.llen(shared) == 0
    flag.raise_(["chain"])
    assert flag.wake("chain") is True  # nobody asleep: a wake-up on the shared list
    assert flag.wake("chain") is True
    assert redis.llen(shared) == 1  # one pending is enough
    assert flag.sleep(["chain"], "a", 0.1) == (True, False)  # a resident takes it
    assert redis.llen(shared) == 0
    assert redis.zscore(sleepers, "a") is None  # working, it is nobody's sleeper
    assert drained.flag_up()  # the flag stays up: the resident looks again after its work
    assert flag.sleep(["chain"], "a", 0.05) == (False, False)
    assert redis.zscore(sleepers, "a") is None  # out of the sleepers after each wait
    seconds, micros = redis.time()
    now = seconds * 1000 + micros // 1000
    redis.zadd(sleepers, {"a": now - 1, "b": now})  # as two residents asleep: b went last
    assert flag.wake("chain") is True
    assert [redis.llen(flag.own_key(t)) for t in ("a", "b")] == [0, 1]
    assert flag.wake("chain") is True  # b is taken out: a is woken next
    assert [redis.llen(flag.own_key(t)) for t in ("a", "b")] == [1, 1]
    assert flag.wake("chain") is True  # nobody asleep any more
    assert redis.llen(shared) == 1
    assert flag.sleep(["chain"], "b", 0.1) == (True, False)  # its own wake-up first
    assert redis.llen(shared) == 1
    redis.delete(shared, flag.own_key("a"), flag.own_key("b"))
    redis.zadd(sleepers, {"killed": 1})  # a sleeper not heard of for long: dead
    assert flag.wake("chain") is True
    assert redis.llen(flag.own_key("killed")) == 0
    assert redis.llen(shared) == 1
    flag.lower(["chain"], "b")
    assert redis.exists(shared, flag.own_key("b"), flag.key("chain")) == 0
