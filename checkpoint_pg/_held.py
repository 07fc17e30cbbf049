"""Puts held for a group write (PostgresSaver.hold_put / save_held): what one holds,
and the verdict on a run's saves from the rows their statements returned. No I/O."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from graphruntime.checkpoint import HeldSave
from graphruntime.config import RunnableConfig
from graphruntime.errors import CheckpointConflict

BlobKey = tuple[str, str, str, str]
"""``(thread_id, checkpoint_ns, channel, version key)`` of a stored blob."""

Statement = tuple[bytes, list[Any]]


class HeldPut(HeldSave):
    """A put's statement, encoded when it was held, and the writes that go ahead of it."""

    __slots__ = ("expected", "keys", "params", "query", "writes")

    def __init__(
        self,
        config: RunnableConfig | None,
        writes: list[Statement],
        query: str | None = None,
        params: dict[str, Any] | None = None,
        *,
        expected: str | None = None,
        keys: Sequence[BlobKey] = (),
    ) -> None:
        super().__init__(config, stored=False)
        self.writes = writes
        self.query = query
        self.params = params
        self.expected = expected
        """The parent checkpoint id the put was made on (None: a new thread)."""
        self.keys = keys
        """The blobs it sends or references: known stored once it is."""


def verdict(
    saves: Sequence[tuple[HeldPut, Any]],
    unless_retry: Callable[[Any, str, str, str | None, str], None],
) -> CheckpointConflict | None:
    """The error that stopped a run's saves (None: all stored), from each put's row.

    ``unless_retry(row, thread_id, ns, expected, new_id)`` raises CheckpointConflict
    for a refused fenced put that is not a retry of the put that won.
    """
    for held, row in saves:
        if row is None or held.params is None:
            continue
        params = held.params
        thread_id, ns = params["thread_id"], params["checkpoint_ns"]
        if not row["ok"]:
            try:
                unless_retry(row, thread_id, ns, held.expected, str(params["checkpoint_id"]))
            except CheckpointConflict as exc:
                return exc
        elif row["missing"]:
            # a blob it only referenced was deleted or pruned meanwhile: nothing of the
            # put was stored, so the run's later puts were refused too; redo the run
            return CheckpointConflict(
                f"Checkpoint {params['checkpoint_id']} of thread {thread_id!r} was not "
                f"stored: blobs of channels {sorted(row['missing'])} it refers to are gone "
                "(the thread was pruned or deleted meanwhile). Reload the thread "
                "(get_tuple) and redo the step from its latest checkpoint."
            )
    return None
