"""The ops resume queue's listener on a real Redis, with an in-memory cluster behind it.

Messages go through the listener exactly as a worker handles them (decode, check,
queue the run, remove); the runs are then delivered to the in-memory workers.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any, TypedDict

import pytest
import redis as redis_lib

from graphruntime.graph import END, START, StateGraph
from graphruntime.pregel import Pregel
from graphruntime.types import interrupt
from tests.unit.workers.graphs import Calls, approval, chain, parallel_questions
from workers.dead_letters import DeadLetters
from workers.errors import StoreUnavailableError
from workers.resume import MAX_ATTEMPTS, ResumeListener, sign
from workers.settings import Settings
from workers.testing import InlineCluster

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def redis_server() -> Iterator[Any]:
    from workers.embedded import redis_url

    url = redis_url().replace("redis+socket://", "unix://")
    client = redis_lib.Redis.from_url(url)
    yield client
    client.close()


def cluster_with_queue(**settings: Any) -> InlineCluster:
    queue = f"test:resume:{uuid.uuid4().hex[:8]}"
    return InlineCluster(
        {
            "approval": approval(Calls()),
            "chain": chain(Calls()),
            "payments": payments(),
            "questions": parallel_questions(Calls()),
        },
        settings=Settings(
            database_url="memory://", redis_url="memory://", resume_queue=queue, **settings
        ),
    )


class Pay(TypedDict):
    paid: list[int]


def payments() -> Pregel:
    """Asks to approve payment #n, three times in a loop, one pause each."""

    def pay(state: Pay) -> dict[str, Any]:
        n = len(state["paid"])
        if interrupt(f"approve payment #{n}") != "approve":
            return {}
        return {"paid": [*state["paid"], n]}

    g = StateGraph(Pay)
    g.add_node("pay", pay)
    g.add_edge(START, "pay")
    g.add_conditional_edges("pay", lambda s: END if len(s["paid"]) >= 3 else "pay")
    return g.compile()


def listener(cluster: InlineCluster, r: Any, consumer: str = "w1") -> ResumeListener:
    cluster.store.heartbeat(consumer, "test", 1)
    return ResumeListener(cluster.client, r, cluster.settings.resume_queue, consumer)


def paused_thread(cluster: InlineCluster) -> str:
    tid = f"t-{uuid.uuid4()}"
    out = cluster.run("approval", {"items": ["a"], "log": []}, {"configurable": {"thread_id": tid}})
    assert "__interrupt__" in out
    return tid


def message(tid: str, value: Any = "yes", **extra: Any) -> str:
    return json.dumps({"graph": "approval", "thread_id": tid, "resume": value, **extra})


def take(lst: ResumeListener, r: Any) -> None:
    raw = r.rpoplpush(lst.queue, lst.processing)
    assert raw is not None
    lst.handle(raw)


def dead(r: Any, cluster: InlineCluster) -> dict[str, str]:
    return {
        json.loads(e)["message"]: json.loads(e)["error"]
        for e in r.lrange(cluster.settings.dead_letters.key, 0, -1)
    }


def test_a_valid_message_becomes_a_run_and_leaves_the_lists(redis_server: Any) -> None:
    r, cluster = redis_server, cluster_with_queue()
    tid = paused_thread(cluster)
    lst = listener(cluster, r)
    r.lpush(lst.queue, message(tid, idempotency_key="k1", actor="ops@example", note="ok"))
    take(lst, r)
    assert r.llen(lst.processing) == 0
    cluster.deliver()
    state = cluster.client.get_state("approval", {"configurable": {"thread_id": tid}})
    assert state.values["decision"] == "yes"
    (run,) = [x for x in cluster.store.runs_of_thread(tid) if x["kind"] == "resume"]
    origin = cluster.store.get_run(str(run["run_id"])).origin or {}
    assert (origin["route"], origin["actor"], origin["note"]) == ("queue", "ops@example", "ok")


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"idempotency_key": "k" * 10_000}, "idempotency_key: String should have at most 256"),
        ({"resume": None}, "resume: Value error, must be the value the interrupt returns"),
        ({"resume": json.loads("[" * 100 + "]" * 100)}, "nests deeper than 64 levels"),
        ({"actor": "a" * 300}, "actor: String should have at most 256"),
        ({"graph": "chain"}, "GraphMismatchError: Thread"),
    ],
    ids=["long-key", "null-resume", "too-deep", "long-actor", "other-graph"],
)
def test_a_message_that_cannot_apply_is_dead_lettered_at_once(
    redis_server: Any, fields: dict[str, Any], reason: str
) -> None:
    r, cluster = redis_server, cluster_with_queue()
    tid = paused_thread(cluster)
    lst = listener(cluster, r)
    raw = json.dumps({"graph": "approval", "thread_id": tid, "resume": "yes", **fields})
    r.lpush(lst.queue, raw)
    take(lst, r)
    assert reason in dead(r, cluster)[raw], dead(r, cluster)[raw]
    assert r.llen(lst.processing) == 0
    cluster.deliver()
    assert cluster.client.get_state("approval", {"configurable": {"thread_id": tid}}).interrupts


def test_a_resume_naming_no_pending_interrupt_is_dead_lettered_at_once(
    redis_server: Any,
) -> None:
    r, cluster = redis_server, cluster_with_queue()
    tid = paused_thread(cluster)
    lst = listener(cluster, r)
    raw = message(tid, {"f" * 32: "no"})  # a resume map naming no pending interrupt
    r.lpush(lst.queue, raw)
    take(lst, r)
    assert not cluster.broker.coordinator  # refused before a run was queued
    # UnknownInterruptError is the InvalidResumeError that names the unknown ids
    reason = dead(r, cluster)[raw]
    assert reason.startswith("UnknownInterruptError: Resume map key"), reason


def test_a_resume_refused_when_its_run_starts_is_dead_lettered(
    redis_server: Any,
) -> None:
    r, cluster = redis_server, cluster_with_queue()
    tid = f"t-{uuid.uuid4()}"
    out = cluster.run("questions", {"items": ["a", "b"]}, {"configurable": {"thread_id": tid}})
    assert len(out["__interrupt__"]) == 2
    lst = listener(cluster, r)
    raw = json.dumps({"graph": "questions", "thread_id": tid, "resume": "yes"})
    r.lpush(lst.queue, raw)
    take(lst, r)  # queued: which wait a plain value answers is the graph's to say
    cluster.deliver()
    ((text, reason),) = cluster.broker.dead_letters
    assert text == raw
    assert reason.startswith("AmbiguousResumeError: When there are multiple"), reason


def test_the_same_key_with_another_value_is_refused(redis_server: Any) -> None:
    r, cluster = redis_server, cluster_with_queue()
    tid = paused_thread(cluster)
    lst = listener(cluster, r)
    first, second = (
        message(tid, "yes", idempotency_key="k"),
        message(tid, "no", idempotency_key="k"),
    )
    r.lpush(lst.queue, first, second)
    take(lst, r)
    take(lst, r)
    assert dead(r, cluster)[second].startswith("ResumeConflictError: Idempotency key 'k'")
    cluster.deliver()
    state = cluster.client.get_state("approval", {"configurable": {"thread_id": tid}})
    assert state.values["decision"] == "yes"


def test_signed_messages_only_when_a_key_is_set(redis_server: Any) -> None:
    r, cluster = redis_server, cluster_with_queue(resume_key="s3cret")
    tid = paused_thread(cluster)
    lst = listener(cluster, r)
    fields = {"graph": "approval", "thread_id": tid, "resume": "yes", "idempotency_key": "k1"}
    unsigned = json.dumps(fields)
    forged = json.dumps({**fields, "signature": sign(fields, "not-the-key")})
    tampered = json.dumps({**fields, "resume": "no", "signature": sign(fields, "s3cret")})
    good = json.dumps({**fields, "signature": sign(fields, "s3cret")})
    r.lpush(lst.queue, unsigned, forged, tampered, good)
    for _ in range(4):
        take(lst, r)
    reasons = dead(r, cluster)
    assert "unsigned" in reasons[unsigned]
    assert "signature does not match" in reasons[forged]
    assert "signature does not match" in reasons[tampered]
    assert good not in reasons
    cluster.deliver()
    state = cluster.client.get_state("approval", {"configurable": {"thread_id": tid}})
    assert state.values["decision"] == "yes"


def test_a_listener_recovers_only_its_own_and_dead_listeners_messages(
    redis_server: Any,
) -> None:
    r, cluster = redis_server, cluster_with_queue()
    alive, gone, me = (listener(cluster, r, name) for name in ("alive", "gone", "me"))
    r.lpush(alive.processing, "in-flight-alive")
    r.lpush(gone.processing, "in-flight-gone")
    r.lpush(me.processing, "in-flight-mine")
    cluster.clock.advance(cluster.settings.stale_after + 1)
    cluster.store.heartbeat("alive", "test", 1)
    cluster.store.heartbeat("me", "test", 1)
    assert me.recover() == 2
    assert sorted(x.decode() for x in r.lrange(me.queue, 0, -1)) == [
        "in-flight-gone",
        "in-flight-mine",
    ]
    assert r.lrange(alive.processing, 0, -1) == [b"in-flight-alive"]  # its own, untouched


def test_a_message_that_keeps_failing_is_dead_lettered_after_a_few_tries(
    redis_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    r, cluster = redis_server, cluster_with_queue()
    tid = paused_thread(cluster)
    lst = listener(cluster, r)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ZeroDivisionError("a bug, not an outage")

    monkeypatch.setattr(cluster.client, "submit", broken)
    raw = message(tid)
    r.lpush(lst.queue, raw)
    taken = r.rpoplpush(lst.queue, lst.processing)
    for _ in range(MAX_ATTEMPTS - 1):
        with pytest.raises(ZeroDivisionError):
            lst.handle(taken)
    lst.handle(taken)  # the last try: dead-lettered, not raised again
    assert f"gave up after {MAX_ATTEMPTS} tries" in dead(r, cluster)[raw]
    assert r.llen(lst.processing) == 0


def test_an_outage_leaves_the_message_for_later_without_counting_it(
    redis_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    r, cluster = redis_server, cluster_with_queue()
    tid = paused_thread(cluster)
    lst = listener(cluster, r)

    def outage(*args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailableError("Postgres restarting")

    monkeypatch.setattr(cluster.client, "submit", outage)
    raw = message(tid)
    r.lpush(lst.queue, raw)
    for _ in range(MAX_ATTEMPTS + 2):
        raw_taken = r.rpoplpush(lst.queue, lst.processing) or r.lindex(lst.processing, 0)
        with pytest.raises(StoreUnavailableError):
            lst.handle(raw_taken)
        lst.recover()
    assert dead(r, cluster) == {}
    monkeypatch.undo()
    take(lst, r)
    cluster.deliver()
    state = cluster.client.get_state("approval", {"configurable": {"thread_id": tid}})
    assert state.values["decision"] == "yes"


def test_the_dead_letter_list_is_capped_and_says_what_it_dropped(
    redis_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    r = redis_server
    letters = DeadLetters(f"test:cap:{uuid.uuid4().hex[:8]}", max_entries=3, max_message_bytes=300)
    with caplog.at_level(logging.WARNING, logger="workers.dead_letters"):
        for i in range(5):
            letters.push(r, f"message {i}" + "x" * (1000 if i == 4 else 0), f"reason {i}")
    kept = [json.loads(e) for e in r.lrange(letters.key, 0, -1)]
    assert [e["error"] for e in kept] == ["reason 4", "reason 3", "reason 2"]
    assert kept[0]["truncated"] is True
    assert kept[0]["bytes"] == 1009
    assert len(kept[0]["message"]) == 300
    assert int(r.get(letters.dropped_key) or 0) == 2
    dropped = [rec.message for rec in caplog.records if "dropped the oldest" in rec.message]
    assert len(dropped) == 2
    assert "reason 0" in dropped[0]
    assert "reason 1" in dropped[1]


def test_a_plain_resume_queued_twice_without_a_key_applies_once(
    redis_server: Any,
) -> None:
    r, cluster = redis_server, cluster_with_queue()
    tid = paused_thread(cluster)
    lst = listener(cluster, r)
    raw = message(tid)
    r.lpush(lst.queue, raw, raw)
    take(lst, r)
    take(lst, r)  # answers the same pause: refused at once, before anything runs
    assert dead(r, cluster)[raw].startswith("ResumeConflictError")
    cluster.deliver()
    resumes = [x for x in cluster.store.runs_of_thread(tid) if x["kind"] == "resume"]
    assert len(resumes) == 1


def test_a_signed_message_must_name_what_it_answers(redis_server: Any) -> None:
    """A signed plain value without an idempotency key could be replayed against every
    later pause of the thread: dead-lettered, the thread left as it is."""
    r, cluster = redis_server, cluster_with_queue(resume_key="s3cret")
    tid = paused_thread(cluster)
    lst = listener(cluster, r)
    fields = {"graph": "approval", "thread_id": tid, "resume": "yes"}
    raw = json.dumps({**fields, "signature": sign(fields, "s3cret")})
    r.lpush(lst.queue, raw)
    take(lst, r)
    assert "must name what it answers" in dead(r, cluster)[raw]
    assert not cluster.broker.coordinator  # no run was made


def test_a_captured_signed_message_answers_one_pause_however_often_replayed(
    redis_server: Any,
) -> None:
    """The same signed message pushed three times, each after the thread paused again:
    applied once. Keyed: the replays are the same run; a resume map: its interrupt id
    matches no later pause."""
    for extra in ({"idempotency_key": "pay-0"}, {}):
        r, cluster = redis_server, cluster_with_queue(resume_key="s3cret")
        tid = f"t-{uuid.uuid4()}"
        out = cluster.run("payments", {"paid": []}, {"configurable": {"thread_id": tid}})
        (wait,) = out["__interrupt__"]
        lst = listener(cluster, r)
        resume: Any = "approve" if extra else {wait.id: "approve"}
        fields = {"graph": "payments", "thread_id": tid, "resume": resume, **extra}
        raw = json.dumps({**fields, "signature": sign(fields, "s3cret")})
        for _ in range(3):
            r.lpush(lst.queue, raw)
            take(lst, r)
            cluster.deliver()
        state = cluster.client.get_state("payments", {"configurable": {"thread_id": tid}})
        assert state.values["paid"] == [0], extra
        assert [i.value for i in state.interrupts] == ["approve payment #1"]


def test_a_malformed_signature_is_dead_lettered_at_once(redis_server: Any) -> None:
    """A non-ASCII or short signature is a bad message, not a transient failure: dead-
    lettered on its first try (it used to be retried as one, stalling the listener)."""
    r, cluster = redis_server, cluster_with_queue(resume_key="s3cret")
    tid = paused_thread(cluster)
    lst = listener(cluster, r)
    fields = {"graph": "approval", "thread_id": tid, "resume": "yes", "idempotency_key": "k"}
    for signature in ("é" * 64, "abc", "g" * 64):
        raw = json.dumps({**fields, "signature": signature}, ensure_ascii=False)
        r.lpush(lst.queue, raw)
        take(lst, r)
        assert "not 64 hex digits" in dead(r, cluster)[raw]
    assert not cluster.broker.coordinator
