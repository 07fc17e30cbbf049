"""A run's end notifies how it ended, and a waiting client reads the run no more (real
Postgres; no celery: the tests end the runs through the RunStore, as the workers do)."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from graphruntime.config import RunnableConfig
from tests.integration.workers.test_client_notify import client, later, new_run, store
from workers._listener import RUNS_CHANNEL, RunOutcome
from workers.client import GraphClient, RunHandle  # its wait is what invoke uses
from workers.store import PostgresRunStore, RunStatus

pytestmark = pytest.mark.integration

__all__ = ("client", "store")

BIG = "x" * 6000  # past what a notification carries


def _notified(store: PostgresRunStore, pg_url: str, end: Any) -> tuple[str, str]:
    run_id = new_run(store)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"LISTEN {RUNS_CHANNEL}")
        end(run_id)
        (note,) = list(conn.notifies(timeout=1.0, stop_after=1))
    return run_id, note.payload


@pytest.mark.parametrize(
    ("status", "result", "error"),
    [
        ("success", {"answer": 42, "text": "a b\nc"}, None),
        ("interrupted", {"__interrupt__": [{"value": "ok?"}]}, None),
        ("error", None, {"type": "ValueError", "message": "no good: at all"}),
    ],
)
def test_the_notification_of_a_run_end_carries_its_status_result_and_error(
    store: PostgresRunStore, pg_url: str, status: RunStatus, result: Any, error: Any
) -> None:
    run_id, payload = _notified(
        store, pg_url, lambda r: store.finish_run(r, status, result=result, error=error)
    )
    head, _, rest = payload.partition(" ")
    assert head == run_id
    outcome = RunOutcome.parse(rest)
    assert outcome is not None
    assert (outcome.status, outcome.error) == (status, error)
    decoded = (
        store.serde.loads_typed((outcome.result_type, outcome.result))
        if outcome.result_type is not None and outcome.result is not None
        else None
    )
    assert decoded == store.get_run(run_id).result == result


def test_a_big_result_is_left_out_of_the_notification(store: PostgresRunStore, pg_url: str) -> None:
    run_id, payload = _notified(
        store, pg_url, lambda r: store.finish_run(r, "success", result={"text": BIG})
    )
    assert payload == run_id


@pytest.mark.parametrize(("result", "reads"), [({"answer": 42}, 1), ({"text": BIG}, 2)])
def test_a_waiting_client_takes_the_end_from_the_notification(
    client: GraphClient,
    store: PostgresRunStore,
    monkeypatch: pytest.MonkeyPatch,
    result: Any,
    reads: int,
) -> None:
    assert client.listener is not None
    client.listener.fallback = 30.0  # only the notification can end the wait in time
    run_id = new_run(store)
    read: list[str] = []
    real_get_run = store.get_run

    def counted(rid: str) -> Any:
        read.append(rid)
        return real_get_run(rid)

    monkeypatch.setattr(store, "get_run", counted)
    waiting = later(0.3, store.finish_run, run_id, "success", result=result)
    assert RunHandle(client, run_id, "t").wait(timeout=20) == result
    waiting.join(timeout=10)
    assert read == [run_id] * reads  # the first read only, unless the result was too big


@pytest.mark.parametrize(("result", "reads"), [({"answer": 42}, 0), ({"text": BIG}, 1)])
def test_invoke_listens_before_it_queues_and_reads_the_run_only_when_the_end_is_too_big(
    client: GraphClient,
    store: PostgresRunStore,
    monkeypatch: pytest.MonkeyPatch,
    result: Any,
    reads: int,
) -> None:
    assert client.listener is not None
    client.listener.fallback = 30.0  # only the notification can end the wait in time
    read: list[str] = []
    real_get_run, real_create_run = store.get_run, store.create_run
    workers: list[Any] = []

    def counted(rid: str) -> Any:
        read.append(rid)
        return real_get_run(rid)

    def queued_then_ended(new: Any) -> Any:  # a worker ends the run as soon as it exists
        run, created = real_create_run(new)
        workers.append(later(0.0, store.finish_run, run.run_id, "success", result=result))
        return run, created

    monkeypatch.setattr(store, "get_run", counted)
    monkeypatch.setattr(store, "create_run", queued_then_ended)
    config: RunnableConfig = {"configurable": {"thread_id": f"invoke-{uuid.uuid4()}"}}
    assert client.invoke("chain", {"log": []}, config, timeout=20) == result
    workers[0].join(timeout=10)
    assert len(read) == reads  # the end's notification carried it, unless too big
