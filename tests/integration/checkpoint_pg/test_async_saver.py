"""AsyncPostgresSaver and AsyncPostgresStore on a real Postgres: the contract, the sync
methods from other threads, and concurrent calls on one pool running at the same time."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from checkpoint_pg._requests import Stmt
from checkpoint_pg.aio import AsyncPostgresSaver, AsyncPostgresStore
from graphruntime.store.base import GetOp, PutOp
from tests.integration.checkpoint_pg.helpers import child, config, meta, thread

pytestmark = pytest.mark.integration

# The test holds this advisory lock; the calls under test wait for it first thing, so the
# test can count how many of them are in the database at once.
_GATE = 718_281


def _gated(op: Any) -> Any:
    """``op`` preceded by a statement that waits until the test opens the gate."""
    yield Stmt("SELECT pg_advisory_lock_shared(%s), pg_advisory_unlock_shared(%s)", [_GATE] * 2)
    return (yield from op)


class _GatedSaver(AsyncPostgresSaver):
    async def _run(self, operation: str, op: Any) -> Any:
        return await super()._run(operation, _gated(op))


class _GatedStore(AsyncPostgresStore):
    async def _run(self, operation: str, op: Any, plan: Any = None) -> Any:
        return await super()._run(operation, _gated(op), plan)


def _waiting_at_gate(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = %s",
        [_GATE],
    ).fetchone()
    assert row is not None
    return int(row[0])


async def _count_concurrent(
    pg_url: str, calls: Sequence[Callable[..., Coroutine[Any, Any, Any]]], expect: int
) -> tuple[int, list[Any]]:
    """Start ``calls`` with the gate closed; return how many waited at the gate at once
    (polled until ``expect`` do, for at most 30 s), then open it and collect the results."""
    with psycopg.connect(pg_url, autocommit=True) as gate:
        gate.execute("SELECT pg_advisory_lock(%s)", [_GATE])
        tasks = [asyncio.create_task(call()) for call in calls]
        most, deadline = 0, time.monotonic() + 30
        while most < expect and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            most = max(most, await asyncio.to_thread(_waiting_at_gate, gate))
        gate.execute("SELECT pg_advisory_unlock(%s)", [_GATE])
        results = await asyncio.wait_for(asyncio.gather(*tasks), 60)
    return most, results


def _pool(pg_url: str, size: int) -> AsyncConnectionPool[Any]:
    kwargs = {"autocommit": True, "row_factory": dict_row}
    return AsyncConnectionPool(pg_url, min_size=1, max_size=size, kwargs=kwargs, open=False)


def test_concurrent_calls_on_a_pool_are_in_the_database_together(pg_url: str) -> None:
    async def main() -> tuple[int, list[Any]]:
        async with _pool(pg_url, 5) as pool:
            saver = _GatedSaver(pool)
            threads = [thread() for _ in range(5)]
            calls = [(lambda t=t: saver.aget_tuple(config(t))) for t in threads]
            return await _count_concurrent(pg_url, calls, expect=5)

    most, results = asyncio.run(main())
    assert most == 5  # all five calls were inside Postgres at the same time: no saver lock
    assert results == [None] * 5


def test_calls_on_one_connection_take_turns(pg_url: str) -> None:
    async def main() -> tuple[int, list[Any]]:
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
            saver = _GatedSaver(conn)
            calls = [(lambda: saver.aget_tuple(config(thread()))) for _ in range(3)]
            return await _count_concurrent(pg_url, calls, expect=2)

    most, results = asyncio.run(main())
    assert most == 1  # psycopg runs one operation at a time on a connection
    assert results == [None] * 3


def test_store_batches_on_a_pool_run_together(pg_url: str) -> None:
    async def main() -> tuple[int, list[Any]]:
        async with _pool(pg_url, 4) as pool:
            store = _GatedStore(pool)
            calls = [
                (lambda i=i: store.abatch([PutOp(("gate", str(i)), "k", {"i": i}),
                                           GetOp(("gate", str(i)), "k")]))
                for i in range(4)
            ]  # fmt: skip
            return await _count_concurrent(pg_url, calls, expect=4)

    most, results = asyncio.run(main())
    assert most == 4
    assert [r[1].value for r in results] == [{"i": i} for i in range(4)]


def test_the_contract_round_trips_and_pages(pg_url: str) -> None:
    async def main() -> None:
        async with AsyncPostgresSaver.from_conn_string(pg_url) as saver:
            await saver.setup()  # migrated already: nothing to do, no error
            t = thread()
            checkpoint, versions = child(saver, None, {"big": ["x" * 400], "n": 1})
            saved = await saver.aput(config(t), checkpoint, meta(0), versions)
            await saver.aput_writes(saved, [("n", 2)], "task-1", "p")
            found = await saver.aget_tuple(config(t))
            assert found is not None
            assert found.checkpoint["channel_values"] == {"big": ["x" * 400], "n": 1}
            assert found.pending_writes == [("task-1", "n", 2)]
            assert [c.config async for c in saver.alist(config(t))] == [saved]
            await saver.adelete_thread(t)
            assert await saver.aget_tuple(config(t)) is None

    asyncio.run(main())


def test_sync_methods_wait_from_other_threads_and_refuse_on_the_loop(pg_url: str) -> None:
    async def main() -> None:
        async with AsyncPostgresSaver.from_conn_string(pg_url) as saver:
            t = thread()
            with pytest.raises(asyncio.InvalidStateError, match="different thread"):
                saver.get_tuple(config(t))
            checkpoint, versions = child(saver, None, {"n": 1})
            saved = await asyncio.to_thread(saver.put, config(t), checkpoint, meta(0), versions)
            found = await asyncio.to_thread(saver.get_tuple, config(t))
            assert found is not None
            assert found.config == saved
            listed = await asyncio.to_thread(lambda: list(saver.list(config(t))))
            assert [c.config for c in listed] == [saved]

    asyncio.run(main())


def test_a_pipeline_needs_a_connection_and_autocommit_is_required(pg_url: str) -> None:
    async def main() -> None:
        async with (
            _pool(pg_url, 2) as pool,
            await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn,
            conn.pipeline() as pipe,
        ):
            with pytest.raises(ValueError, match="pipeline belongs to one connection"):
                AsyncPostgresSaver(pool, pipe)
        async with await psycopg.AsyncConnection.connect(pg_url) as plain:
            with pytest.raises(ValueError, match="autocommit=True"):
                AsyncPostgresSaver(plain)

    asyncio.run(main())


def test_sync_store_calls_from_other_threads_run_on_the_loop(pg_url: str) -> None:
    seen: list[Any] = []

    async def main() -> None:
        async with AsyncPostgresStore.from_conn_string(pg_url) as store:
            with pytest.raises(asyncio.InvalidStateError):
                store.put(("loop",), "k", {"v": 1})

            def in_thread() -> None:
                store.put(("thread", threading.current_thread().name), "k", {"v": 2})
                seen.append(store.get(("thread", threading.current_thread().name), "k"))

            await asyncio.to_thread(in_thread)

    asyncio.run(main())
    assert seen[0] is not None
    assert seen[0].value == {"v": 2}
