"""Test doubles for the workers' logic: an inline broker and an in-memory cluster.

With :class:`InlineBroker`, :class:`~workers.store.InMemoryRunStore` and
:class:`~graphruntime.checkpoint.InMemorySaver`, the coordinator, the task jobs and
the sweeper run in the test's own thread, in milliseconds: messages wait in lists
until the test delivers them (:meth:`InlineCluster.deliver`), so redelivery, loss,
reordering and dead workers are in the test's hands. The end-to-end suite runs the
same code on real Celery, Redis and Postgres.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from graphruntime.cache.memory import InMemoryCache
from graphruntime.checkpoint import ClusterSaver, InMemorySaver, JsonSerializer
from graphruntime.errors import InvalidArgumentTypeError
from graphruntime.store.memory import InMemoryStore
from workers.client import GraphClient
from workers.context import WorkerContext
from workers.dispatch import QueueDepths, batches
from workers.messages import TaskMessage
from workers.registry import GraphRegistry
from workers.settings import Settings
from workers.store import InMemoryRunStore, RunStore

__all__ = ("InlineBroker", "InlineCluster", "Job", "ManualClock")


class ManualClock:
    """A clock tests move by hand (``advance``); starts at a fixed instant."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class Job:
    """A message waiting on the inline broker."""

    kind: Literal["coordinate", "execute"]
    run_id: str
    """The job's run (a coordinator message naming several: its first)."""
    message: TaskMessage | None = None
    delay: float = 0.0
    seq: int = 0
    label: str = ""
    """What Celery would name the job (its shadow name), e.g. ``graph:node``."""
    run_ids: tuple[str, ...] = ()
    """The runs a coordinator message names."""


@dataclass
class InlineBroker:
    """A :class:`~workers.dispatch.Broker` that keeps messages in memory."""

    coordinator: list[Job] = field(default_factory=list)
    tasks: list[Job] = field(default_factory=list)
    dead_letters: list[tuple[str, str]] = field(default_factory=list)
    sent: list[Job] = field(default_factory=list)
    _seq: itertools.count[int] = field(default_factory=itertools.count)

    def send_coordinate(self, run_id: str, *, delay: float = 0.0) -> None:
        job = Job("coordinate", run_id, delay=delay, seq=next(self._seq), run_ids=(run_id,))
        self.coordinator.append(job)
        self.sent.append(job)

    def send_coordinates(self, run_ids: Sequence[str], *, per_message: int = 1) -> None:
        for batch in batches(run_ids, per_message):
            job = Job("coordinate", batch[0], seq=next(self._seq), run_ids=tuple(batch))
            self.coordinator.append(job)
            self.sent.append(job)

    def send_tasks(
        self,
        messages: Sequence[TaskMessage],
        *,
        delay: float = 0.0,
        labels: Sequence[str] | None = None,
    ) -> None:
        names = list(labels) if labels is not None else [""] * len(messages)
        for message, label in zip(messages, names, strict=True):
            job = Job("execute", message.run_id, message, delay=delay, seq=next(self._seq))
            job.label = label
            self.tasks.append(job)
            self.sent.append(job)

    def queue_depths(self) -> QueueDepths:
        return QueueDepths(len(self.coordinator), len(self.tasks))

    def dead_letter(self, message: str, reason: str) -> None:
        self.dead_letters.append((message, reason))

    def lose_all(self) -> list[Job]:
        """Drop every waiting message (a Redis restart without persistence)."""
        lost = [*self.coordinator, *self.tasks]
        self.coordinator.clear()
        self.tasks.clear()
        return lost


class InlineCluster:
    """Workers, a client and the stores of one cluster, all in this process.

    Each simulated worker process has its own name (for claims, leases and
    heartbeats) but shares the stores, the saver and the broker.
    """

    def __init__(
        self,
        graphs: dict[str, Any],
        *,
        settings: Settings | None = None,
        workers: int = 2,
        stores: Callable[[JsonSerializer], tuple[RunStore, ClusterSaver]] | None = None,
    ) -> None:
        """``stores``: make the run store and the saver from the workers' serde (default:
        in memory, on :attr:`clock`); a Postgres pair runs the same logic on real SQL."""
        self.settings = settings or Settings(database_url="memory://", redis_url="memory://")
        self.clock = ManualClock()
        self.serde = JsonSerializer(strict=True)  # as the workers': declared classes only
        self.store: RunStore
        self.saver: ClusterSaver
        if stores is None:
            self.store = InMemoryRunStore(self.serde, clock=self.clock)
            self.saver = InMemorySaver(serde=self.serde)
        else:
            self.store, self.saver = stores(self.serde)
        self.broker = InlineBroker()
        self.registry = GraphRegistry.of(graphs)
        self.registry.use_serde(self.serde)
        self.node_store = InMemoryStore()
        """The store the cluster's workers share (as they share Postgres')."""
        self.registry.use_store(self.node_store)
        self.node_cache: InMemoryCache[Any] = InMemoryCache()
        """The cache the cluster's workers share (as they share Postgres')."""
        self.registry.use_cache(self.node_cache)
        self.workers = [self.context(f"worker-{i}") for i in range(workers)]
        for ctx in self.workers:
            self.store.heartbeat(ctx.worker_name, "inline", 0)
        self.client = GraphClient(
            settings=self.settings,
            registry=self.registry,
            saver=self.saver,
            store=self.store,
            broker=self.broker,
        )

    @property
    def memory(self) -> InMemoryRunStore:
        """The in-memory run store (for tests that look inside it)."""
        if not isinstance(self.store, InMemoryRunStore):
            raise InvalidArgumentTypeError(
                "this cluster's run store is not the in-memory one: read it through "
                "the cluster's client, or build the cluster with the in-memory store"
            )
        return self.store

    def context(self, name: str) -> WorkerContext:
        return WorkerContext(
            settings=self.settings,
            registry=self.registry,
            saver=self.saver,
            store=self.store,
            broker=self.broker,
            worker_name=name,
        )

    def beat(self, *names: str) -> None:
        """Heartbeats of the named workers (default: every worker) at the clock's time."""
        for ctx in self.workers:
            if not names or ctx.worker_name in names:
                self.store.heartbeat(ctx.worker_name, "inline", 0)

    def deliver(
        self,
        worker: int = 0,
        *,
        limit: int = 10_000,
        pick: Callable[[list[Job]], Job | None] | None = None,
        redelivered: bool = False,
    ) -> int:
        """Deliver waiting messages to worker ``worker`` until none is left (or ``limit``).

        Messages go in the order sent, coordinator and task queues interleaved; ``pick``
        chooses another one. Delays are ignored: the test's clock decides nothing here.
        Returns how many were delivered.
        """
        from workers.coordinator import coordinate_many
        from workers.executor import execute_tasks

        ctx = self.workers[worker]
        done = 0
        while done < limit:
            waiting = sorted([*self.broker.coordinator, *self.broker.tasks], key=lambda j: j.seq)
            if not waiting:
                break
            job = pick(waiting) if pick is not None else waiting[0]
            if job is None or job not in waiting:
                break
            queue = self.broker.coordinator if job.kind == "coordinate" else self.broker.tasks
            queue.remove(job)
            if job.kind == "coordinate":
                coordinate_many(ctx, job.run_ids or (job.run_id,))
            else:
                assert job.message is not None
                execute_tasks(ctx, job.message, redelivered=redelivered)
            done += 1
        return done

    def run(self, graph: str, input: Any, config: Any, **kwargs: Any) -> Any:
        """Submit and deliver until the cluster is idle; the run's output (or its error)."""
        handle = self.client.submit(graph, input, config, **kwargs)
        self.deliver()
        return handle.wait(timeout=0)
