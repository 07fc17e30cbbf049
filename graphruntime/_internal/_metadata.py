"""``CheckpointMetadata``, defined below ``types`` (``StateSnapshot.metadata`` is one)
and re-exported by ``graphruntime.checkpoint.base``, its public home."""

from __future__ import annotations

from typing import Literal, TypedDict


class CheckpointMetadata(TypedDict, total=False):
    """Metadata stored with a checkpoint; savers keep any other keys too."""

    source: Literal["input", "loop", "update", "fork"]
    step: int
    """-1 for the first input checkpoint, then 0, 1, … per superstep."""
    parents: dict[str, str]
    """``{parent checkpoint_ns: parent checkpoint id}``; empty at the root."""
    counters_since_delta_snapshot: dict[str, tuple[int, int]]
    """``{channel: (updates, supersteps)}`` since each DeltaChannel's last snapshot.

    ``updates``: supersteps that wrote the channel; ``supersteps``: all of them.
    Only non-zero entries are kept; absent on threads without DeltaChannels. Stored
    as JSON, so the pairs read back as 2-element lists. (LangGraph beta.)
    """


CheckpointMetadata.__module__ = "graphruntime.checkpoint.base"
