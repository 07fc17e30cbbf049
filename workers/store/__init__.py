"""The workers' run store: runs, the step barrier, thread leases, heartbeats, events.

:class:`RunStore` holds the rules, once, over the named queries of
``workers/sql/queries.sql``: :class:`PostgresRunStore` runs them on Postgres
(production), :class:`InMemoryRunStore` mirrors them in memory (unit tests).
"""

from __future__ import annotations

from workers.store._model import (
    TERMINAL,
    Claim,
    Event,
    EventRow,
    InboxQuery,
    NewRun,
    OrphanTask,
    Overview,
    Released,
    Run,
    RunEnd,
    RunningTask,
    RunQuery,
    RunStatus,
    StepTask,
    TaskClaims,
    Wait,
    WaitClaim,
    canonical_run_id,
)
from workers.store._payload import CancelRequest, RunKind, RunPayload
from workers.store._store import RunStore
from workers.store.memory import InMemoryRunStore
from workers.store.postgres import PostgresRunStore, make_pool

__all__ = (
    "TERMINAL",
    "CancelRequest",
    "Claim",
    "Event",
    "EventRow",
    "InMemoryRunStore",
    "InboxQuery",
    "NewRun",
    "OrphanTask",
    "Overview",
    "PostgresRunStore",
    "Released",
    "Run",
    "RunEnd",
    "RunKind",
    "RunPayload",
    "RunQuery",
    "RunStatus",
    "RunStore",
    "RunningTask",
    "StepTask",
    "TaskClaims",
    "Wait",
    "WaitClaim",
    "canonical_run_id",
    "make_pool",
)
