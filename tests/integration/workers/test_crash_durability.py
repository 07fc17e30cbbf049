"""A Postgres crash between a job's async commits and the durable commit that vouches
for them: what the crash took back must be redone, never reported done.

A private server (tests/integration/private_postgres.py) whose WAL writer is held while the
job runs, so an async commit stays in shared memory until the next durable commit: a run
store that crashes the server (every process killed, then crash recovery) just before
one of those durable commits loses the async commits made before it, as a power cut or
an OOM kill would. The job then goes on, as a worker does, on new connections.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from checkpoint_pg import PostgresSaver, migrate
from graphruntime.checkpoint import ClusterSaver, JsonSerializer
from tests.integration.private_postgres import PrivatePostgres, private_postgres
from tests.unit.workers.graphs import Calls, chain, fan
from workers.errors import is_transient
from workers.store import PostgresRunStore, Released, RunEnd, RunStore, make_pool
from workers.testing import InlineCluster

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server() -> Iterator[PrivatePostgres]:
    with private_postgres({"wal_writer_delay": "10s"}) as pg:
        with psycopg.connect(pg.url, autocommit=True) as conn:
            migrate(conn)
        yield pg


class CrashingStore(PostgresRunStore):
    """The run store, crashing the server once just before a chosen durable commit."""

    crash_before: str | None = None  # "end", "dispatch" or "complete"
    server: PrivatePostgres
    lost: int | None = None  # checkpoints and writes the crash took back

    def _crash(self, moment: str, thread_id: str) -> None:
        if self.crash_before != moment:
            return
        self.crash_before = None
        before = self._rows(thread_id)
        self.server.crash()
        self.lost = before - self._rows(thread_id)

    def _rows(self, thread_id: str) -> int:
        with psycopg.connect(self.server.url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT (SELECT count(*) FROM graphruntime_checkpoints WHERE thread_id = %s)"
                " + (SELECT count(*) FROM graphruntime_writes WHERE thread_id = %s)",
                (thread_id, thread_id),
            ).fetchone()
        assert row is not None
        return int(row[0])

    def finish_and_release_many(
        self,
        ends: Sequence[RunEnd],
        *,
        worker: str,
        free: Sequence[str] = (),
        requeue: Sequence[str] = (),
        epoch: str | None = None,
    ) -> list[Released]:
        for end in ends:
            self._crash("end", end.thread_id)
        return super().finish_and_release_many(
            ends, worker=worker, free=free, requeue=requeue, epoch=epoch
        )

    def register_tasks(
        self,
        run_id: str,
        thread_id: str,
        checkpoint_id: str,
        tasks: Sequence[tuple[str, Sequence[Any]]],
        epoch: str | None = None,
    ) -> list[str]:
        self._crash("dispatch", thread_id)
        return super().register_tasks(run_id, thread_id, checkpoint_id, tasks, epoch=epoch)

    def complete_tasks(
        self,
        run_id: str,
        checkpoint_id: str,
        outcomes: Any,
        worker: str,
        events: Any,
        epoch: str | None = None,
    ) -> tuple[int, int]:
        self._crash("complete", self.get_run(run_id).thread_id)
        return super().complete_tasks(run_id, checkpoint_id, outcomes, worker, events, epoch)


@pytest.fixture
def crashing(server: PrivatePostgres) -> Iterator[Callable[[dict[str, Any]], InlineCluster]]:
    pools: list[ConnectionPool[Any]] = []
    stores: list[CrashingStore] = []

    def make(graphs: dict[str, Any]) -> InlineCluster:
        def pair(serde: JsonSerializer) -> tuple[RunStore, ClusterSaver]:
            pool = make_pool(server.url)
            pools.append(pool)
            store = CrashingStore(pool, serde)
            store.server = server
            store.setup()
            stores.append(store)
            return store, PostgresSaver(pool, serde=serde)

        return InlineCluster(graphs, stores=pair)

    yield make
    for pool in pools:
        pool.close()


def deliver_as_celery(cluster: InlineCluster, *, limit: int = 200) -> None:
    """Deliver every message; a job that met an unreachable store is retried, as Celery
    retries it (workers/tasks.py)."""
    for _ in range(limit):
        waiting = sorted([*cluster.broker.coordinator, *cluster.broker.tasks], key=lambda j: j.seq)
        if not waiting:
            return
        job = waiting[0]
        try:
            cluster.deliver(limit=1)
        except Exception as exc:
            if not is_transient(exc):
                raise
            queue = cluster.broker.coordinator if job.kind == "coordinate" else cluster.broker.tasks
            queue.append(job)
    raise AssertionError(f"still delivering after {limit} jobs")


@pytest.mark.parametrize("moment", ["end", "dispatch", "complete"])
def test_work_a_crash_took_back_is_redone_not_reported_done(
    crashing: Callable[[dict[str, Any]], InlineCluster], moment: str
) -> None:
    """The run's last checkpoints (end), the checkpoint its tasks start from (dispatch),
    or a task's writes (complete) were committed without waiting for the WAL flush; the
    server crashes before the durable commit that would make them durable, and the job
    makes that commit once it is back. The run must end with every node's write."""
    calls = Calls()
    graph = chain(calls, n=3) if moment == "end" else fan(calls)
    cluster = crashing({"g": graph})
    store = cluster.store
    assert isinstance(store, CrashingStore)
    cfg: Any = {"configurable": {"thread_id": f"crash-{moment}"}}
    payload = {"log": []} if moment == "end" else {"items": ["a", "b"]}
    handle = cluster.client.submit("g", payload, cfg)
    store.crash_before = moment
    with store.server.wal_writer_held():
        deliver_as_celery(cluster)
    assert store.lost, f"the crash took nothing back ({store.lost}): the test proves nothing"
    run = store.get_run(handle.run_id)
    values = cluster.client.get_state("g", cfg).values
    expected = ["n0", "n1", "n2"] if moment == "end" else ["a", "b"]
    assert (run.status, sorted(values.get("log", []))) == ("success", expected), (
        f"run {run.run_id} is {run.status} with the state {values} after the crash took "
        f"back {store.lost} rows"
    )
