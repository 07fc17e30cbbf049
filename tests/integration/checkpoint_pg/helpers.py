"""Shared helpers for the checkpoint_pg integration tests (also run in child processes).

Functions that run in other processes live here, at module level, so the
``spawn`` start method can import them by name.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from checkpoint_pg import PostgresSaver, migrate
from graphruntime.checkpoint import (
    BaseCheckpointSaver,
    Checkpoint,
    copy_checkpoint,
    empty_checkpoint,
    uuid6,
)
from graphruntime.config import RunnableConfig
from graphruntime.errors import CheckpointConflict


def thread() -> str:
    return f"pg-{uuid.uuid4()}"


def config(thread_id: str, ns: str = "", checkpoint_id: str | None = None) -> RunnableConfig:
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def child(
    saver: BaseCheckpointSaver,
    prev: Checkpoint | None,
    values: dict[str, Any],
    *,
    step: int = 0,
    cleared: tuple[str, ...] = (),
) -> tuple[Checkpoint, dict[str, Any]]:
    """A child checkpoint of ``prev`` with ``values`` changed, and its ``new_versions``."""
    checkpoint = empty_checkpoint() if prev is None else copy_checkpoint(prev)
    checkpoint["id"] = str(uuid6(clock_seq=step))
    checkpoint["ts"] = datetime.now(UTC).isoformat()
    new_versions: dict[str, Any] = {}
    for channel in [*values, *cleared]:
        version = saver.get_next_version(checkpoint["channel_versions"].get(channel))
        checkpoint["channel_versions"][channel] = version
        new_versions[channel] = version
    checkpoint["channel_values"].update(values)
    for channel in cleared:
        checkpoint["channel_values"].pop(channel, None)
    return checkpoint, new_versions


def meta(step: int, **extra: Any) -> Any:
    return {"source": "loop", "step": step, "parents": {}, **extra}


def count_rows(conn: psycopg.Connection[Any], table: str, thread_id: str) -> int:
    query = {
        "checkpoints": "SELECT count(*) AS n FROM graphruntime_checkpoints WHERE thread_id = %s",
        "blobs": "SELECT count(*) AS n FROM graphruntime_blobs WHERE thread_id = %s",
        "writes": "SELECT count(*) AS n FROM graphruntime_writes WHERE thread_id = %s",
    }[table]
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(query, (thread_id,))
        row = cur.fetchone()
    assert row is not None
    return int(row["n"])


def blob_deleted_behind_the_saver(
    saver: PostgresSaver, conn: psycopg.Connection[Any]
) -> tuple[RunnableConfig, Checkpoint, dict[str, Any]]:
    """A new thread's first checkpoint stored with a big value (a blob), that blob then
    deleted behind the saver's back; and a child leaving the value unchanged (only
    referenced, as the saver knows it stored), with its ``new_versions``."""
    t = thread()
    first, versions = child(saver, None, {"big": ["x" * 500]}, step=-1)
    stored = saver.put(config(t), first, meta(-1), versions)
    conn.execute("DELETE FROM graphruntime_blobs WHERE thread_id = %s", (t,))
    second, versions = child(saver, first, {"n": 1})
    return stored, second, versions


# -- run in child processes --------------------------------------------------------------


def deliver_writes(
    url: str, thread_id: str, checkpoint_id: str, tasks: list[str], who: int, barrier: Any
) -> None:
    """Store ``who``'s writes for every task, starting together with the other process."""
    with psycopg.connect(url, autocommit=True) as conn:
        saver = PostgresSaver(conn)
        cfg = config(thread_id, checkpoint_id=checkpoint_id)
        barrier.wait(timeout=30)
        for task_id in tasks:
            saver.put_writes(
                cfg, [("a", who), ("b", who), ("c", [who] * 100)], task_id=task_id, task_path="p"
            )


def fenced_put(
    url: str, thread_id: str, parent_id: str, barrier: Any, results: Any, pipelined: bool = False
) -> None:
    """Try to advance ``thread_id`` from ``parent_id``; report the new id or 'conflict'.
    ``pipelined``: the put is kept and sent by a ``pipelined`` block's ``put_batch``
    (relaxed), whose refusals are reported after the block instead of raised."""
    with psycopg.connect(url, autocommit=True) as conn:
        saver = PostgresSaver(conn)
        parent = saver.get_tuple(config(thread_id, checkpoint_id=parent_id))
        assert parent is not None
        checkpoint, versions = child(saver, parent.checkpoint, {"big": ["x" * 300, parent_id]})
        barrier.wait(timeout=30)
        if pipelined:
            with saver.pipelined(durable=False) as view:
                view.put(parent.config, checkpoint, meta(1), versions, fenced=True)
            results.put("conflict" if thread_id in view.refused else checkpoint["id"])
            return
        try:
            saver.put(parent.config, checkpoint, meta(1), versions, fenced=True)
        except CheckpointConflict:
            results.put("conflict")
        else:
            results.put(checkpoint["id"])


def run_migrate(url: str, barrier: Any, results: Any) -> None:
    """Migrate ``url`` once every process is connected; report the version or the error."""
    with psycopg.connect(url, autocommit=True) as conn:
        barrier.wait(timeout=60)
        try:
            results.put(migrate(conn))
        except Exception as exc:  # noqa: BLE001 - reported to the test process
            results.put(repr(exc))
