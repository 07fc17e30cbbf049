"""A job's borrows share one pinned connection (workers/_pinned_pool.py), on Postgres."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from checkpoint_pg import PostgresSaver
from graphruntime.checkpoint import empty_checkpoint
from workers._pinned_pool import PinnedPool
from workers.store import make_pool

pytestmark = pytest.mark.integration


@pytest.fixture
def pool(pg_url: str) -> Iterator[PinnedPool]:
    made = make_pool(pg_url, max_size=4)
    assert isinstance(made, PinnedPool)
    yield made
    made.close()


def _backend(pool: PinnedPool) -> int:
    with pool.connection() as conn:
        pid: int = conn.info.backend_pid
        return pid


def test_borrows_in_a_pinned_block_share_one_connection(pool: PinnedPool) -> None:
    with pool.pinned():
        pinned = _backend(pool)
        assert {_backend(pool) for _ in range(5)} == {pinned}
        with pool.pinned():  # nested: the outer pin
            assert _backend(pool) == pinned


def test_a_nested_borrow_gets_a_connection_of_its_own(pool: PinnedPool) -> None:
    with pool.pinned(), pool.connection() as outer, pool.connection() as inner:
        assert outer is not inner
        assert outer.info.backend_pid != inner.info.backend_pid


def test_other_threads_do_not_share_the_pin(pool: PinnedPool) -> None:
    seen: list[int] = []
    with pool.pinned(), pool.connection() as mine:
        worker = threading.Thread(target=lambda: seen.append(_backend(pool)))
        worker.start()
        worker.join(30)
        assert seen
        assert seen[0] != mine.info.backend_pid


def test_a_transaction_left_open_is_rolled_back_when_the_borrow_ends(pool: PinnedPool) -> None:
    with pool.pinned():
        with pool.connection() as conn:
            conn.execute("BEGIN")
            conn.execute("CREATE TEMP TABLE left_open (x int)")
        with pool.connection() as conn:
            assert conn.info.transaction_status.name == "IDLE"
            found = conn.execute("SELECT to_regclass('pg_temp.left_open') AS t").fetchone()
            assert found is not None
            assert found["t"] is None


def test_a_closed_pinned_connection_is_not_lent_again(pool: PinnedPool) -> None:
    with pool.pinned():
        with pool.connection() as conn:
            conn.close()  # as a connection the server dropped
        with pool.connection() as other:
            assert not other.closed
            assert other.execute("SELECT 1 AS one").fetchone() == {"one": 1}


def test_the_saver_and_a_store_statement_share_the_pin(pool: PinnedPool) -> None:
    saver = PostgresSaver(pool)
    saver.setup()
    seen: set[Any] = set()
    original = pool.connection

    def spy(timeout: float | None = None) -> Any:
        cm = original(timeout)
        conn = cm.__enter__()
        seen.add(conn.info.backend_pid)

        class _Borrow:
            def __enter__(self) -> Any:
                return conn

            def __exit__(self, *exc: Any) -> Any:
                return cm.__exit__(*exc)

        return _Borrow()

    pool.connection = spy  # type: ignore[method-assign]
    config = {"configurable": {"thread_id": "pinned", "checkpoint_ns": ""}}
    with pool.pinned():
        saver.put(config, empty_checkpoint(), {}, {})  # type: ignore[arg-type]
        assert saver.get_tuple(config) is not None  # type: ignore[arg-type]
        with pool.connection() as conn:
            conn.execute("SELECT 1")
    assert len(seen) == 1


def test_a_pinned_connection_left_in_a_failed_transaction_is_rolled_back(
    pool: PinnedPool,
) -> None:
    with pool.pinned():
        with pool.connection() as conn:
            conn.execute("BEGIN")
            with pytest.raises(psycopg.errors.DivisionByZero):
                conn.execute("SELECT 1/0")
            failed = conn.info.backend_pid
        with pool.connection() as again:
            assert again.info.backend_pid == failed  # mended, and lent again
            assert again.execute("SELECT 1 AS one").fetchone() == {"one": 1}
