"""The decisions, action filters and claims of tests/unit/workers, on Postgres: the inbox
SQL (response schema, any-of containment, thread filter, claims) on a real database."""

from __future__ import annotations

import pytest

from tests.integration.workers.test_approvals_pg import db, make_cluster
from tests.unit.workers.test_approvals_decisions import (
    test_a_claim_is_seen_by_everyone_renewed_by_its_holder_and_lapses,
    test_a_decision_one_selected_wait_does_not_allow_resumes_none,
    test_a_lapsed_claim_is_not_shown_and_is_free_to_take,
    test_a_wait_still_pending_after_its_thread_moves_on_keeps_its_claim,
    test_per_call_requests_are_answered_per_interrupt_id,
    test_resume_many_approves_batched_requests_by_position,
    test_resume_many_edits_one_action_with_a_decision_per_position,
    test_the_inbox_filters_approval_requests_by_action_and_args,
    test_the_inbox_row_carries_the_response_schema_the_interrupt_gave,
)

pytestmark = pytest.mark.integration

__all__ = (
    "db",
    "make_cluster",
    "test_a_claim_is_seen_by_everyone_renewed_by_its_holder_and_lapses",
    "test_a_decision_one_selected_wait_does_not_allow_resumes_none",
    "test_a_lapsed_claim_is_not_shown_and_is_free_to_take",
    "test_a_wait_still_pending_after_its_thread_moves_on_keeps_its_claim",
    "test_per_call_requests_are_answered_per_interrupt_id",
    "test_resume_many_approves_batched_requests_by_position",
    "test_resume_many_edits_one_action_with_a_decision_per_position",
    "test_the_inbox_filters_approval_requests_by_action_and_args",
    "test_the_inbox_row_carries_the_response_schema_the_interrupt_gave",
)
