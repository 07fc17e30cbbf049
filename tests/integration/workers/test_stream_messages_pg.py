"""The workers' ``stream_mode="messages"`` tests of tests/unit/workers, on Postgres: a node's
tokens stored while it runs (append_events, with the per-run lock), a task's completion
keeping its step chunks after them."""

from __future__ import annotations

import pytest

from tests.integration.workers.test_approvals_pg import db, make_cluster
from tests.unit.workers.test_stream_messages import (
    test_a_client_streams_the_chunks_in_process_stream_gives,
    test_a_nodes_tokens_are_stored_while_it_runs_inline_on_the_coordinator,
    test_a_retried_attempts_tokens_stream_before_the_retrys_as_in_process,
    test_a_subgraphs_tokens_stream_with_its_namespace_when_asked,
    test_task_jobs_store_their_tokens_while_their_nodes_run,
)

pytestmark = pytest.mark.integration

__all__ = (
    "db",
    "make_cluster",
    "test_a_client_streams_the_chunks_in_process_stream_gives",
    "test_a_nodes_tokens_are_stored_while_it_runs_inline_on_the_coordinator",
    "test_a_retried_attempts_tokens_stream_before_the_retrys_as_in_process",
    "test_a_subgraphs_tokens_stream_with_its_namespace_when_asked",
    "test_task_jobs_store_their_tokens_while_their_nodes_run",
)
