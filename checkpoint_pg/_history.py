"""``get_delta_channel_history`` from the rows of ``delta_history`` (queries.sql).

No I/O: the saver runs the statement and hands the rows here. One statement reads a
runtime-written chain; a second, thorough one is needed only where the metadata
hint stopped a walk at an ancestor that holds no value (data the runtime did not
write, such as a thread older than its DeltaChannel).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from graphruntime.checkpoint import DeltaChannelHistory, writes_sort_key

__all__ = ("Continue", "HistoryRows")

Loads = Callable[[tuple[str, bytes]], Any]
DecodeBody = Callable[[str, bytes], dict[str, Any]]
"""``(checkpoint_id, body) -> the channel values inline in the body``."""


class Continue(NamedTuple):
    """Walk ``channels`` on, thorough, from the parent of ``checkpoint_id`` (at ``depth``)."""

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

    def add(
        self, rows: Sequence[dict[str, Any]], depth: int = 0, *, thorough: bool = False
    ) -> list[Continue]:
        """Take one statement's rows, walked from an ancestor at ``depth`` (0: the target).

        Returns the walks to continue (thorough): channels whose walk stopped at an
        ancestor the metadata suggested might hold their value, but which does not.
        """
        writes: dict[str, list[_Write]] = {}
        seeds: dict[str, tuple[int, Any]] = {}  # channel -> (depth, value)
        bodies = []
        for row in rows:
            kind, at = row["kind"], depth + row["depth"]
            if kind == "w":
                writes.setdefault(row["channel"], []).append(
                    _Write(
                        at,
                        row["task_path"] or "",
                        row["task_id"],
                        row["idx"],
                        row["type"],
                        row["value"],
                    )
                )
            elif kind == "s":
                seeds[row["channel"]] = (at, self._loads((row["type"], row["value"])))
            else:
                bodies.append((at, row))
        out: list[Continue] = []
        for at, row in sorted(bodies, key=lambda b: b[0]):
            # a thorough walk lists every channel walking here: the nearest value wins
            candidates = [
                c for c in row["channels"] if c not in seeds or (thorough and seeds[c][0] > at)
            ]
            if not candidates:
                continue
            values = self._decode_body(row["checkpoint_id"], row["value"])
            missing = []
            for channel in candidates:
                # an inline null is no value, as in LangGraph's saver: the walk goes on
                if values.get(channel) is not None:
                    seeds[channel] = (at, values[channel])
                elif not thorough:
                    missing.append(channel)
            if missing:
                out.append(Continue(row["checkpoint_id"], at, missing))
        for channel, found in writes.items():
            if channel not in self._writes:
                continue
            limit = seeds[channel][0] if channel in seeds else None
            self._writes[channel].extend(w for w in found if limit is None or w.depth <= limit)
        for channel, (_, value) in seeds.items():
            self._seeds[channel] = value
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
