"""``get_delta_channel_history`` from the rows of ``delta_history`` (queries.sql).

Pure functions, no I/O: the saver runs the statement (usually once) and hands the
rows here, and asks where to continue in the rare case a walk stopped at an
ancestor that turned out not to hold the channel's value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from graphruntime.checkpoint import DeltaChannelHistory, writes_sort_key

__all__ = ("Continue", "HistoryRows")

Loads = Callable[[tuple[str, bytes]], Any]
DecodeBody = Callable[[str, bytes], tuple[dict[str, Any], dict[str, Any]]]
"""``(checkpoint_id, body) -> (inline channel values, channel versions)``."""


class Continue(NamedTuple):
    """Walk ``channels`` on from the parent of ``checkpoint_id``, found at ``depth``."""

    checkpoint_id: str
    depth: int
    channels: list[str]


class _Write(NamedTuple):
    depth: int
    task_path: str
    task_id: str
    idx: int
    kind: str
    data: bytes


class HistoryRows:
    """The histories of ``channels``, accumulated over one or more statements."""

    def __init__(self, channels: Sequence[str], loads: Loads, decode_body: DecodeBody) -> None:
        self.channels = list(channels)
        self._loads = loads
        self._decode_body = decode_body
        self._writes: dict[str, list[_Write]] = {c: [] for c in channels}
        self._seeds: dict[str, Any] = {}

    def add(self, rows: Sequence[dict[str, Any]], depth: int = 0) -> list[Continue]:
        """Take one statement's rows (walked from an ancestor at ``depth``).

        Returns the walks to continue: channels whose walk stopped at an ancestor
        with no value for them although they have a version there.
        """
        blobs: set[tuple[str, int]] = set()
        bodies = []
        for row in rows:
            kind = row["kind"]
            if kind == "w":
                channel = row["channel"]
                if channel in self._writes:
                    self._writes[channel].append(
                        _Write(
                            depth + row["depth"],
                            row["task_path"] or "",
                            row["task_id"],
                            row["idx"],
                            row["type"],
                            row["value"],
                        )
                    )
            elif kind == "s":
                self._seeds[row["channel"]] = self._loads((row["type"], row["value"]))
                blobs.add((row["channel"], row["depth"]))
            else:
                bodies.append(row)
        out: list[Continue] = []
        for row in bodies:
            ending = [c for c in row["ending"] if (c, row["depth"]) not in blobs]
            values, versions = self._decode_body(row["checkpoint_id"], row["value"])
            on: list[str] = []
            for channel in ending:
                if channel in values:
                    self._seeds[channel] = values[channel]
                elif channel in versions:
                    on.append(channel)  # written above: its value lies further up
            if on:
                out.append(Continue(row["checkpoint_id"], depth + row["depth"], on))
        return out

    def result(self) -> dict[str, DeltaChannelHistory]:
        out: dict[str, DeltaChannelHistory] = {}
        for channel in self.channels:
            # oldest ancestor first; within one, in the order its step applied them
            found = sorted(
                self._writes.get(channel, ()),
                key=lambda w: (-w.depth, writes_sort_key(w.task_path, w.task_id, w.idx)),
            )
            entry: DeltaChannelHistory = {
                "writes": [(w.task_id, channel, self._loads((w.kind, w.data))) for w in found]
            }
            if channel in self._seeds:
                entry["seed"] = self._seeds[channel]
            out[channel] = entry
        return out
