"""The run store's shape: the in-memory double mirrors every named query, a run's payload
is typed and versioned (stored and digested as before it had a type), and many runs are
queued a page at a time."""

from __future__ import annotations

import hashlib
import inspect
import re
import uuid
from collections.abc import Sequence

import pytest

from graphruntime.checkpoint import JsonSerializer
from graphruntime.config import RunnableConfig
from graphruntime.types import Command
from tests.unit.workers.graphs import Calls, chain
from workers import _queue_runs
from workers._queue_runs import queue_runs
from workers._sql import queries, query
from workers.errors import NotDispatchedError, StoreRecoveredError
from workers.store import CancelRequest, InMemoryRunStore, NewRun, Run, RunEnd, RunPayload
from workers.store.memory import InMemoryConnector
from workers.testing import InlineCluster


def test_the_in_memory_store_has_a_method_for_each_named_query_and_no_other() -> None:
    plumbing = {"session", "batch", "all", "many"}
    mirrored = {
        name
        for name, member in inspect.getmembers(InMemoryConnector, inspect.isfunction)
        if not name.startswith("_") and name not in plumbing
    }
    assert mirrored == set(queries())


def test_every_statement_is_short_enough_for_psycopg_to_cache_its_parse() -> None:
    """A longer text (or one with more parameters) is parsed again at each execution: a
    cost per statement in every coordinator job."""
    from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH, MAX_CACHED_STATEMENT_PARAMS

    for name in queries():
        sent = query(name).encode()
        assert len(sent) <= MAX_CACHED_STATEMENT_LENGTH, name
        params = set(re.findall(rb"%\((\w+)\)s", sent))
        assert len(params) <= MAX_CACHED_STATEMENT_PARAMS, name


def test_a_payload_is_stored_as_the_untyped_dict_was_and_keeps_its_digest() -> None:
    serde = JsonSerializer()
    payload = RunPayload(
        input={"log": []},
        config={"configurable": {"thread_id": "t"}, "tags": ["x"]},
        stream_modes=("values", "updates"),
        interrupt_before=["n1"],
        context={"user": "ann"},
        durability="sync",
    )
    # the dict the client stored before the payload had a type, key for key, in order
    old = {
        "input": {"log": []},
        "config": {"configurable": {"thread_id": "t"}, "tags": ["x"]},
        "stream_modes": ["values", "updates"],
        "subgraphs": False,
        "interrupt_before": ["n1"],
        "interrupt_after": None,
        "context": {"user": "ann"},
        "durability": "sync",
    }
    assert list(payload.stored().items()) == list(old.items())
    new = NewRun.of("chain", "t", payload, serde, idempotency_key="k")
    kind, data = serde.dumps_typed(old)
    digest = hashlib.sha256(b"chain\0" + kind.encode() + b"\0" + data).hexdigest()
    assert (new.kind, new.request_digest) == ("input", digest)
    assert RunPayload.from_stored(serde.loads_typed(serde.dumps_typed(payload.stored()))) == payload


def test_a_submit_dumps_its_payload_once_and_stores_the_dump_it_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = InlineCluster({"chain": chain(Calls())})
    dumped: list[object] = []
    real = JsonSerializer.dumps_typed

    def counting(self: JsonSerializer, obj: object) -> tuple[str, bytes]:
        if isinstance(obj, dict) and "stream_modes" in obj:  # a run's payload
            dumped.append(obj)
        return real(self, obj)

    monkeypatch.setattr(JsonSerializer, "dumps_typed", counting)
    handle = cluster.client.submit("chain", {"log": ["a"]}, {"configurable": {"thread_id": "t"}})
    assert len(dumped) == 1  # the round-trip check's dump is the one stored and digested
    run = cluster.store.get_run(handle.run_id)
    assert run is not None
    assert run.payload.input == {"log": ["a"]}


def test_the_kind_of_a_run_comes_from_its_payload() -> None:
    serde = JsonSerializer()
    inputs: list[object] = [{"x": 1}, Command(update={"x": 1}), Command(resume={"i": 1})]
    kinds = [NewRun.of("g", "t", RunPayload(input=value), serde).kind for value in inputs]
    cancel = RunPayload(cancel=CancelRequest("stop", "ann", 0.5))
    assert kinds == ["input", "command", "resume"]
    assert NewRun.of("g", "t", cancel, serde).kind == "cancel"
    assert RunPayload.from_stored(cancel.stored()).cancel == CancelRequest("stop", "ann", 0.5)
    # a cancel stored before its wait was recorded waits the default
    assert RunPayload.from_stored({"input": None, "cancel": {"reason": "r"}}).cancel == (
        CancelRequest("r", None, CancelRequest.wait)
    )


def test_a_run_of_a_newer_payload_version_ends_with_why_and_frees_its_thread() -> None:
    cluster = InlineCluster({"chain": chain(Calls(), n=1)})
    cfg: RunnableConfig = {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}
    newer = cluster.client.submit("chain", {"log": []}, cfg)
    row = cluster.memory.memory.runs[newer.run_id]
    row["payload_type"], row["payload"] = "json", b'{"v": 2, "input": {"log": []}}'
    assert "version 2" in (cluster.store.get_run(newer.run_id).payload_error or "")
    after = cluster.client.submit("chain", {"log": []}, cfg)
    cluster.deliver()
    with pytest.raises(Exception, match=r"cannot be decoded.*version 2.*upgrade"):
        newer.wait(0)
    assert after.wait(0)["log"] == ["n0"]


def _news(n: int) -> list[NewRun]:
    serde = JsonSerializer()
    return [
        NewRun.of("g", f"t-{i}", RunPayload(input={"i": i}), serde, idempotency_key="k")
        for i in range(n)
    ]


class _Broker:
    """Sends that fail while ``away``, as the client's do when the broker is down."""

    def __init__(self, away: int) -> None:
        self.away = away
        self.sent: list[list[str]] = []

    def send(self, run_ids: Sequence[str]) -> None:
        if self.away:
            self.away -= 1
            raise NotDispatchedError("broker away", run_ids[0])
        self.sent.append(list(run_ids))


def test_runs_are_queued_a_page_at_a_time_and_each_page_sent_once_queued(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_queue_runs, "PAGE", 2)
    store, broker, news = InMemoryRunStore(), _Broker(away=0), _news(5)
    pages: list[tuple[int, int]] = []
    queue_runs(store, news, broker.send, progress=lambda done, total: pages.append((done, total)))
    assert broker.sent == [[n.run_id for n in news[i : i + 2]] for i in (0, 2, 4)]
    assert pages == [(2, 5), (4, 5), (5, 5)]
    # again: every run exists already under its key; nothing is sent twice
    seen: list[tuple[str, bool]] = []

    def each(new: NewRun, run: Run | None, created: bool, error: Exception | None) -> None:
        assert run is not None
        assert error is None
        seen.append((run.run_id, created))

    queue_runs(store, _news(5), broker.send, each=each)
    assert seen == [(n.run_id, False) for n in news]
    assert len(broker.sent) == 3


def test_with_the_broker_away_later_pages_wait_and_go_in_one_more_try(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_queue_runs, "PAGE", 2)
    store, broker, news = InMemoryRunStore(), _Broker(away=1), _news(5)
    queue_runs(store, news, broker.send)
    assert broker.sent == [[n.run_id for n in news]]  # pages 2 and 3 were not tried alone
    still_away = _Broker(away=2)
    with pytest.raises(NotDispatchedError):
        queue_runs(InMemoryRunStore(), _news(3), still_away.send)
    assert still_away.sent == []


def test_a_page_whose_runs_are_refused_by_the_caller_is_not_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_queue_runs, "PAGE", 2)
    store, broker, news = InMemoryRunStore(), _Broker(away=0), _news(4)

    def refuse_the_third(new: NewRun, run: Run | None, created: bool, error: object) -> None:
        if new is news[2]:
            raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        queue_runs(store, news, broker.send, each=refuse_the_third)
    assert broker.sent == [[news[0].run_id, news[1].run_id]]
    assert [store.get_run(n.run_id).status for n in news] == ["queued"] * 4


def test_after_a_recovery_the_commits_that_vouch_for_a_jobs_work_are_refused() -> None:
    store = InMemoryRunStore()
    (new,) = _news(1)
    store.create_run(new)
    (claim,) = store.claim_runs([new.run_id], "w", stale=30)
    assert claim.leased
    assert claim.epoch is not None
    store.register_tasks(new.run_id, "t-0", "c1", [("a", ["p"])], epoch=claim.epoch)
    ids, epoch = store.claim_tasks(new.run_id, "c1", [("a", ["p"], 0)], "w", stale=30)
    assert (ids, epoch) == (["a"], claim.epoch)
    store.memory.server_epoch = "recovered"  # what crash recovery does to Postgres' epoch
    end = RunEnd(new.run_id, "t-0", "success", result={"ok": True})
    with pytest.raises(StoreRecoveredError):
        store.finish_and_release_many([end], worker="w", epoch=claim.epoch)
    with pytest.raises(StoreRecoveredError):
        store.register_tasks(new.run_id, "t-0", "c2", [("b", ["p"])], epoch=claim.epoch)
    with pytest.raises(StoreRecoveredError):
        store.complete_tasks(new.run_id, "c1", {"a": None}, "w", {}, epoch=epoch)
    # nothing was written: the run goes on, its task is open, its lease held
    assert store.get_run(new.run_id).status == "running"
    assert store.step_tasks(new.run_id, "c1")["a"].status == "dispatched"
    assert store.step_tasks(new.run_id, "c2") == {}
    assert store.memory.threads["t-0"]["lease_holder"] == "w"
    # freeing a lease alone vouches for nothing: it goes through
    (freed,) = store.finish_and_release_many([], worker="w", free=["t-0"], epoch=claim.epoch)
    assert freed.following == new.run_id
    assert store.memory.threads["t-0"]["lease_holder"] is None
