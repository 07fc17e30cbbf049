"""The batch coordinator tests of tests/unit/workers, on Postgres: one message naming
several runs, its duplicate, a thread leased by another live worker, an outage mid-batch
(claims pipelined in one round trip, the ends in one transaction)."""

from __future__ import annotations

import pytest

from tests.integration.workers.test_approvals_pg import db, make_cluster
from tests.unit.workers.test_coordinate_batch import (
    test_a_duplicate_batch_message_changes_nothing,
    test_a_lease_a_job_could_not_free_is_freed_by_its_process_heartbeat,
    test_a_lease_release_a_crash_took_back_does_not_wedge_the_thread,
    test_a_result_that_cannot_be_stored_holds_back_no_other_run_nor_its_lease,
    test_a_thread_leased_by_a_live_worker_is_left_to_it_and_its_run_ends_once_later,
    test_a_thread_named_twice_in_a_batch_runs_its_runs_in_order,
    test_an_outage_mid_batch_keeps_the_runs_ended_before_it_and_frees_every_lease,
    test_one_message_advances_several_threads_and_ends_them_in_one_transaction,
    test_runs_not_started_within_the_budget_are_handed_back_to_other_workers,
    test_the_heartbeat_leaves_the_lease_of_the_current_job_and_a_young_one,
)

pytestmark = pytest.mark.integration

__all__ = (
    "db",
    "make_cluster",
    "test_a_duplicate_batch_message_changes_nothing",
    "test_a_lease_a_job_could_not_free_is_freed_by_its_process_heartbeat",
    "test_a_lease_release_a_crash_took_back_does_not_wedge_the_thread",
    "test_a_result_that_cannot_be_stored_holds_back_no_other_run_nor_its_lease",
    "test_a_thread_leased_by_a_live_worker_is_left_to_it_and_its_run_ends_once_later",
    "test_a_thread_named_twice_in_a_batch_runs_its_runs_in_order",
    "test_an_outage_mid_batch_keeps_the_runs_ended_before_it_and_frees_every_lease",
    "test_one_message_advances_several_threads_and_ends_them_in_one_transaction",
    "test_runs_not_started_within_the_budget_are_handed_back_to_other_workers",
    "test_the_heartbeat_leaves_the_lease_of_the_current_job_and_a_young_one",
)
