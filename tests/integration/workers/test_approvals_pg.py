"""The approvals tests of tests/unit/workers, on Postgres: the inbox SQL, bulk resume,
cancel and deadlines against a real database (one fresh database per test)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from checkpoint_pg import PostgresSaver, migrate
from checkpoint_pg.embedded import scratch_database
from graphruntime.checkpoint import ClusterSaver, JsonSerializer
from tests.unit.workers.graphs import Calls, ticket
from tests.unit.workers.test_approvals import (
    test_a_running_fan_out_lists_its_step_progress,
    test_a_thread_answered_by_a_human_first_is_a_conflict_not_a_second_resume,
    test_a_wait_asked_again_keeps_its_first_deadline,
    test_an_edit_of_the_state_takes_the_waits_it_left_out_of_the_inbox,
    test_cancel_a_waiting_thread_clears_its_inbox_and_refuses_its_resume,
    test_cancel_during_a_fan_out_ends_the_run_and_no_task_writes,
    test_cancel_then_resume_is_not_pending_and_resume_then_cancel_cancels_it,
    test_cancel_waits_for_the_run_a_worker_is_advancing_which_then_is_not_cancelled,
    test_hostile_filters_are_refused_with_the_reason_before_any_query,
    test_inbox_filters_on_value_fields_and_node,
    test_inbox_pages_with_a_cursor_cover_every_wait_once,
    test_inbox_refuses_bad_requests_with_a_clear_error,
    test_resume_many_answers_every_selected_wait_once,
    test_resume_many_by_items_reports_only_the_threads_it_names,
    test_resume_many_by_items_reports_waits_that_are_not_pending,
    test_resume_many_run_twice_applies_once,
    test_submit_many_queues_every_run_and_keys_make_it_safe_to_repeat,
    test_the_inbox_lists_every_pending_wait_oldest_first_with_its_value,
)
from workers.store import PostgresRunStore, RunStore, make_pool
from workers.sweeper import sweep_once
from workers.testing import InlineCluster

pytestmark = pytest.mark.integration

__all__ = (
    "test_a_running_fan_out_lists_its_step_progress",
    "test_a_thread_answered_by_a_human_first_is_a_conflict_not_a_second_resume",
    "test_a_wait_asked_again_keeps_its_first_deadline",
    "test_an_edit_of_the_state_takes_the_waits_it_left_out_of_the_inbox",
    "test_cancel_a_waiting_thread_clears_its_inbox_and_refuses_its_resume",
    "test_cancel_during_a_fan_out_ends_the_run_and_no_task_writes",
    "test_cancel_then_resume_is_not_pending_and_resume_then_cancel_cancels_it",
    "test_cancel_waits_for_the_run_a_worker_is_advancing_which_then_is_not_cancelled",
    "test_hostile_filters_are_refused_with_the_reason_before_any_query",
    "test_inbox_filters_on_value_fields_and_node",
    "test_inbox_pages_with_a_cursor_cover_every_wait_once",
    "test_inbox_refuses_bad_requests_with_a_clear_error",
    "test_resume_many_answers_every_selected_wait_once",
    "test_resume_many_by_items_reports_only_the_threads_it_names",
    "test_resume_many_by_items_reports_waits_that_are_not_pending",
    "test_resume_many_run_twice_applies_once",
    "test_submit_many_queues_every_run_and_keys_make_it_safe_to_repeat",
    "test_the_inbox_lists_every_pending_wait_oldest_first_with_its_value",
)


@pytest.fixture
def db(server_url: str) -> Iterator[str]:
    with scratch_database(server_url, "graphruntime_approvals") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            migrate(conn)
        yield url


@pytest.fixture
def make_cluster(db: str) -> Iterator[Callable[..., InlineCluster]]:
    pools = []

    def stores(serde: JsonSerializer) -> tuple[RunStore, ClusterSaver]:
        pool = make_pool(db)
        pools.append(pool)
        store = PostgresRunStore(pool, serde)
        store.setup()
        return store, PostgresSaver(pool, serde=serde)

    def make(graphs: dict[str, Any], **kwargs: Any) -> InlineCluster:
        return InlineCluster(graphs, stores=stores, **kwargs)

    yield make
    for pool in pools:
        pool.close()


def test_three_sweepers_racing_one_deadline_make_one_resume(
    make_cluster: Callable[..., InlineCluster], db: str
) -> None:
    cluster = make_cluster({"ticket": ticket(Calls(), deadline=timedelta(hours=1))}, workers=3)
    cluster.run("ticket", {"items": ["ops", "T-1"]}, {"configurable": {"thread_id": "late"}})
    assert [sweep_once(ctx).deadlines for ctx in cluster.workers] == [0, 0, 0]
    with psycopg.connect(db, autocommit=True) as conn:  # an hour passes
        conn.execute("UPDATE graphruntime_interrupts SET deadline = now() - interval '1 s'")
    made = [sweep_once(ctx).deadlines for ctx in cluster.workers]
    assert sum(made) == 1
    cluster.deliver()
    state = cluster.client.get_state("ticket", {"configurable": {"thread_id": "late"}})
    assert state.values["decision"] == "auto-approved"
    assert cluster.client.inbox("ticket").items == []
    (record,) = cluster.client.resume_history("ticket", {"configurable": {"thread_id": "late"}})
    assert (record.route, record.actor, record.status) == ("deadline", "deadline", "success")


def test_inbox_ages_are_measured_by_the_database_clock(
    make_cluster: Callable[..., InlineCluster],
) -> None:
    cluster = make_cluster({"ticket": ticket(Calls())})
    for i in range(3):
        cluster.run("ticket", {"items": ["ops", f"T-{i}"]}, {"configurable": {"thread_id": f"{i}"}})
    waits = cluster.client.inbox("ticket").items
    assert len(cluster.client.inbox("ticket", older_than=timedelta(0)).items) == 3
    assert cluster.client.inbox("ticket", older_than=timedelta(hours=1)).items == []
    cut = cluster.client.inbox("ticket", older_than=waits[2].created_at).items
    assert [w.thread_id for w in cut] == ["0", "1"]
