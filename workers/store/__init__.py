"""The workers' run store: runs, the step barrier, thread leases, heartbeats, events.

:class:`RunStore` is the protocol; :class:`PostgresRunStore` keeps it in Postgres
(production) and :class:`InMemoryRunStore` in memory (unit tests).
"""

from __future__ import annotations

from workers.store._model import (
    TERMINAL,
    Claim,
    Event,
    EventRow,
    ExpiredWait,
    InboxEntry,
    InboxQuery,
    InboxRow,
    InboxUpdate,
    NewRun,
    OrphanTask,
    Overview,
    Released,
    Run,
    RunEnd,
    RunKind,
    RunningTask,
    RunQuery,
    RunStatus,
    RunStore,
    StepTask,
    TaskClaims,
    WaitClaim,
)
from workers.store.memory import InMemoryRunStore, ManualClock
from workers.store.postgres import PostgresRunStore, make_pool

__all__ = (
    "TERMINAL",
    "Claim",
    "Event",
    "EventRow",
    "ExpiredWait",
    "InMemoryRunStore",
    "InboxEntry",
    "InboxQuery",
    "InboxRow",
    "InboxUpdate",
    "ManualClock",
    "NewRun",
    "OrphanTask",
    "Overview",
    "PostgresRunStore",
    "Released",
    "Run",
    "RunEnd",
    "RunKind",
    "RunQuery",
    "RunStatus",
    "RunStore",
    "RunningTask",
    "StepTask",
    "TaskClaims",
    "WaitClaim",
    "make_pool",
)
