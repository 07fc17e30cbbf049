"""Concurrent store batches lock rows in one order, so they never deadlock.

The core's statements run here on their own connections, without the stores' retry of a
deadlocked batch, so a deadlock would surface as an error.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from checkpoint_pg._requests import Batch, Stmt, run
from checkpoint_pg._store_core import StoreCore
from graphruntime.store.base import GetOp, PutOp, SearchOp

pytestmark = pytest.mark.integration

_WAIT = 30.0  # seconds any step may take on a loaded machine before the test gives up


def _connect(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url, autocommit=True, row_factory=dict_row)


def _put_statements(ops: list[PutOp]) -> list[Stmt]:
    core = StoreCore(None, None, None)
    request = next(core.batch(core.plan(ops), [], []))
    assert isinstance(request, Batch)
    return list(request.statements)


def _write(url: str, ops: list[PutOp]) -> None:
    core = StoreCore(None, None, None)
    with _connect(url) as conn:
        run(conn, core.batch(core.plan(ops), [], []))


def _wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + _WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.02)


def test_crossing_deletes_and_upserts_wait_instead_of_deadlocking(pg_url: str) -> None:
    ns = (f"lockorder-{uuid.uuid4().hex[:12]}",)
    prefix = ns[0]
    _write(pg_url, [PutOp(ns, "k1", {"v": 0}), PutOp(ns, "k2", {"v": 0})])
    # a deletes k1 and writes k2; b deletes k2 and writes k1
    first = _put_statements([PutOp(ns, "k1", None), PutOp(ns, "k2", {"v": "a"})])
    second = _put_statements([PutOp(ns, "k2", None), PutOp(ns, "k1", {"v": "b"})])
    errors: list[BaseException] = []
    with _connect(pg_url) as a, _connect(pg_url) as b, _connect(pg_url) as watcher:
        b_pid = b.info.backend_pid
        b_done = threading.Event()

        def run_second() -> None:
            try:
                with b.transaction():
                    for stmt in second:
                        b.execute(stmt.query, stmt.params)
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)
            finally:
                b_done.set()

        def b_waits_on_a_lock() -> bool:
            row = watcher.execute(
                "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (b_pid,)
            ).fetchone()
            return b_done.is_set() or (row is not None and row["wait_event_type"] == "Lock")

        with a.transaction():
            a.execute(first[0].query, first[0].params)  # a's first lock-taking statement
            thread = threading.Thread(target=run_second, daemon=True)
            thread.start()
            # b runs until it must wait for a lock a holds
            _wait_until(b_waits_on_a_lock, "the second batch waits on a lock")
            for stmt in first[1:]:  # before the fix: a deadlock (a or b is rolled back)
                a.execute(stmt.query, stmt.params)
        thread.join(_WAIT)
        assert not thread.is_alive()
        assert not errors, errors
        rows = watcher.execute(
            "SELECT key, value FROM graphruntime_store WHERE prefix = %s ORDER BY key", (prefix,)
        ).fetchall()
    # as if a ran, then b
    assert [(r["key"], r["value"]) for r in rows] == [("k1", {"v": "b"})]


def test_concurrent_mixed_batches_never_deadlock(pg_url: str) -> None:
    """Batches of gets and searches that refresh TTLs, upserts and deletes of the same items, from
    several connections at once: every one completes (bounded: a fixed number of rounds)."""
    ns = (f"lockstress-{uuid.uuid4().hex[:12]}",)
    keys = [f"k{i}" for i in range(12)]
    core = StoreCore(None, None, None)
    _write(pg_url, [PutOp(ns, k, {"v": 0}, ttl=60) for k in keys])
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        try:
            with _connect(pg_url) as conn:
                for _ in range(40):
                    chosen = rng.sample(keys, 6)
                    ops: list[Any] = [GetOp(ns, k) for k in rng.sample(keys, 6)]
                    ops.append(SearchOp(ns, limit=rng.randint(1, len(keys))))
                    ops += [
                        PutOp(ns, k, None if rng.random() < 0.4 else {"v": seed}, ttl=60)
                        for k in chosen
                    ]
                    plan, _ = StoreCore.grouped(core.plan(ops))
                    run(conn, core.batch(plan, [], []))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(seed,), daemon=True) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(_WAIT * 4)
    assert not any(t.is_alive() for t in threads), "a batch did not finish"
    assert not errors, errors
