"""``DeltaSnapshot``, public as ``graphruntime.checkpoint.serde.types.DeltaSnapshot``."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ("DeltaSnapshot",)


class DeltaSnapshot(NamedTuple):
    """The full value of a ``DeltaChannel``, stored in a checkpoint's ``channel_values``.

    A ``DeltaChannel`` stores nothing in most checkpoints: its value is rebuilt
    from the writes saved along the parent chain (see
    ``BaseCheckpointSaver.get_delta_channel_history``). Every so often the runtime
    stores a ``DeltaSnapshot`` instead, where that walk stops: the snapshot *is*
    the accumulated value at its checkpoint.
    """

    value: Any
