"""The checkpoint saver contract, shaped like LangGraph's so ports are trivial.

A saver stores, per ``(thread_id, checkpoint_ns)``, a chain of checkpoints and,
per checkpoint, the pending writes of the tasks of the step that started from
it. The runtime talks to savers only through :class:`BaseCheckpointSaver`;
:mod:`graphruntime.testing.conformance` checks that a saver honours it.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import suppress
from typing import Any, NamedTuple, NotRequired, TypedDict

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import NULL_TASK_ID as NULL_TASK_ID
from graphruntime._internal._metadata import CheckpointMetadata
from graphruntime.checkpoint._id import utc_now_iso, uuid6_str
from graphruntime.checkpoint.serde import JsonSerializer, SerializerProtocol
from graphruntime.errors import CheckpointError

__all__ = (
    "EXCLUDED_METADATA_KEYS",
    "LATEST_VERSION",
    "BaseCheckpointSaver",
    "ChannelVersions",
    "Checkpoint",
    "CheckpointMetadata",
    "CheckpointTuple",
    "DeltaChannelHistory",
    "PendingWrite",
    "checkpoint_config",
    "config_key",
    "copy_checkpoint",
    "create_checkpoint",
    "empty_checkpoint",
    "get_checkpoint_id",
    "writes_sort_key",
)

LATEST_VERSION = 4
"""Checkpoint format version; ``v > 1`` selects xxh3 task ids."""

EXCLUDED_METADATA_KEYS = frozenset(
    {
        "thread_id",
        "checkpoint_id",
        "checkpoint_ns",
        "checkpoint_map",
        "langgraph_step",
        "langgraph_node",
        "langgraph_triggers",
        "langgraph_path",
        "langgraph_checkpoint_ns",
    }
)
"""``configurable`` keys a saver never copies into a checkpoint's metadata: they address the
checkpoint or the task (LangGraph's savers copy the run's other plain config values)."""

ChannelVersions = dict[str, str | int | float]

PendingWrite = tuple[str, str, Any]
"""``(task_id, channel, value)`` saved against a checkpoint."""


class Checkpoint(TypedDict):
    """State of a thread between two supersteps."""

    v: int
    id: str
    """``str(uuid6(clock_seq=step))``: unique, and sorts in creation order."""
    ts: str
    """ISO-8601 UTC timestamp."""
    channel_values: dict[str, Any]
    """Snapshot of every channel that has a value."""
    channel_versions: ChannelVersions
    """``{channel: version}`` of every channel ever written."""
    versions_seen: dict[str, ChannelVersions]
    """``{node: {channel: version}}`` seen by each node when it last ran."""
    updated_channels: list[str] | None
    """Channels updated by the step that produced this checkpoint."""


class CheckpointTuple(NamedTuple):
    """A checkpoint with its config, metadata, parent and pending writes."""

    config: RunnableConfig
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    parent_config: RunnableConfig | None = None
    pending_writes: list[PendingWrite] | None = None


class DeltaChannelHistory(TypedDict):
    """What one channel contributed along a checkpoint's parent chain.

    Returned per channel by :meth:`BaseCheckpointSaver.get_delta_channel_history`.
    """

    writes: list[PendingWrite]
    """The channel's writes saved on the ancestors walked, oldest first; within one
    checkpoint in :func:`writes_sort_key` order. The target's own writes (pending
    for its next step) are not included."""
    seed: NotRequired[Any]
    """The value stored at the nearest ancestor that has one (a ``DeltaSnapshot``,
    or a plain value stored before the key became a DeltaChannel); absent when the
    walk reached the root without one: start empty."""


def writes_sort_key(task_path: str, task_id: str = "", idx: int = 0) -> tuple[str, str, int]:
    """The order a superstep's writes apply in, and so the order history replays them.

    Live execution applies a step's tasks by task path, so a replay must too, or an
    order-sensitive reducer rebuilds a different value. Writes saved without a path
    (input, ``update_state``, a Command) sort first, by task id.
    """
    return (task_path, task_id, idx)


def empty_checkpoint() -> Checkpoint:
    """The checkpoint a new thread starts from (never saved as is)."""
    return Checkpoint(
        v=LATEST_VERSION,
        id=uuid6_str(clock_seq=-2),
        ts=utc_now_iso(),
        channel_values={},
        channel_versions={},
        versions_seen={},
        updated_channels=None,
    )


def create_checkpoint(
    checkpoint: Checkpoint,
    channels: Mapping[str, Any] | None,
    step: int,
    *,
    id: str | None = None,
) -> Checkpoint:
    """The next checkpoint after ``checkpoint``: a new id (``uuid6`` of ``step``) and
    timestamp, the same versions, and the values of ``channels`` (each channel's
    ``checkpoint()``; ``None``: ``checkpoint``'s own values). LangGraph's helper."""
    from graphruntime.errors import EmptyChannelError

    if channels is None:
        values = checkpoint["channel_values"]
    else:
        values = {}
        for name, channel in channels.items():
            if name not in checkpoint["channel_versions"]:
                continue
            with suppress(EmptyChannelError):
                values[name] = channel.checkpoint()
    return Checkpoint(
        v=LATEST_VERSION,
        id=id or uuid6_str(clock_seq=step),
        ts=utc_now_iso(),
        channel_values=values,
        channel_versions=checkpoint["channel_versions"],
        versions_seen=checkpoint["versions_seen"],
        updated_channels=None,
    )


def copy_checkpoint(checkpoint: Checkpoint) -> Checkpoint:
    """Copy the mutable maps of ``checkpoint`` (the values themselves are shared)."""
    updated = checkpoint.get("updated_channels")
    return Checkpoint(
        v=checkpoint["v"],
        id=checkpoint["id"],
        ts=checkpoint["ts"],
        channel_values=checkpoint["channel_values"].copy(),
        channel_versions=checkpoint["channel_versions"].copy(),
        versions_seen={k: v.copy() for k, v in checkpoint["versions_seen"].items()},
        updated_channels=None if updated is None else list(updated),
    )


def get_checkpoint_id(config: RunnableConfig) -> str | None:
    """The ``checkpoint_id`` of ``config``, or ``None`` for "the latest"."""
    checkpoint_id: str | None = config.get("configurable", {}).get("checkpoint_id")
    return checkpoint_id or None


class BaseCheckpointSaver(ABC):
    """Where the runtime persists checkpoints and pending writes.

    Config keys, under ``config["configurable"]``: ``thread_id`` (required),
    ``checkpoint_ns`` (``""`` if absent) and ``checkpoint_id`` (optional).
    Values are stored serialized with :attr:`serde` and read back as fresh
    objects: nothing the caller holds aliases what is stored.

    The ``a``-prefixed async twins call the sync methods; savers doing I/O
    should override them so they do not block the event loop.
    """

    serde: SerializerProtocol = JsonSerializer()

    def __init__(self, *, serde: SerializerProtocol | None = None) -> None:
        self.serde = serde or type(self).serde

    def __class_getitem__(cls, item: Any) -> Any:
        """``BaseCheckpointSaver[str]`` in annotations, as LangGraph's class (generic in its
        channel version type) is written; versions are strings here."""
        return cls

    @abstractmethod
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Load one checkpoint with its pending writes, or ``None``.

        With a ``checkpoint_id`` that checkpoint, else the latest (greatest
        id) of ``(thread_id, checkpoint_ns)``. ``pending_writes`` are the writes
        saved against it, in insertion order, values deserialized.
        """

    @abstractmethod
    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Yield matching checkpoints, newest first.

        ``config`` ``None`` searches every thread; ``checkpoint_ns`` narrows only
        if present; a ``checkpoint_id`` selects that one checkpoint. ``filter``
        keeps checkpoints whose metadata has equal values for all its keys;
        ``before`` keeps ids smaller than its ``checkpoint_id``; ``limit`` caps
        the number yielded.
        """

    @abstractmethod
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store ``checkpoint`` under ``(thread_id, checkpoint_ns, checkpoint["id"])``.

        Its parent is ``config``'s ``checkpoint_id``. ``new_versions`` names the
        channels whose values changed since the parent, so unchanged values
        need not be stored again. Returns the config of the stored checkpoint:
        ``{"configurable": {thread_id, checkpoint_ns, checkpoint_id}}``.
        """

    @abstractmethod
    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes against ``config``'s checkpoint.

        Each write is keyed ``(thread_id, checkpoint_ns, checkpoint_id,
        task_id, idx)`` with ``idx = WRITES_IDX_MAP.get(channel, position)``.
        If every channel is in ``WRITES_IDX_MAP`` (control writes) rows are
        replaced; otherwise a row is only inserted if absent (first write
        wins), so a second delivery of the same task changes nothing.
        """

    @abstractmethod
    def delete_thread(self, thread_id: str) -> None:
        """Delete the checkpoints and writes of every namespace of a thread."""

    def get(self, config: RunnableConfig) -> Checkpoint | None:
        """The checkpoint :meth:`get_tuple` would load, without the rest."""
        found = self.get_tuple(config)
        return None if found is None else found.checkpoint

    def get_next_version(self, current: str | int | float | None, channel: None = None) -> str:
        """Next channel version: ``f"{n+1:032}.{random:016}"``, compared as strings.

        Only the integer part orders versions; the random fraction makes
        versions of different forks of a thread differ, as in LangGraph.
        """
        if current is None:
            n = 0
        elif isinstance(current, str):
            n = int(current.split(".", 1)[0])
        else:
            n = int(current)
        return f"{n + 1:032}.{random.random():016}"

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Each channel's writes and seed along the parent chain of ``config``'s checkpoint.

        Walks the ancestors of the target (``config``'s ``checkpoint_id``, else the
        latest), following each checkpoint's parent, not ``list()``: on a forked
        thread only the target's own branch counts. Per channel, collects the writes
        saved on each ancestor for that channel, and stops at the nearest ancestor
        whose ``channel_values`` has the channel (its value is the ``seed``; that
        ancestor's own writes are still collected: they produced its child). The
        target's own writes are never included. An unknown target gives every
        channel no writes and no seed.

        This default walks :meth:`get_tuple` once for all channels, replaying each
        checkpoint's writes in the order ``get_tuple`` returns them; savers that
        store the task path override it to order a step's writes by
        :func:`writes_sort_key`, and to read the chain in fewer round trips.
        """
        if not channels:
            return {}
        walk = _HistoryWalk(channels)
        target = self.get_tuple(config)
        cursor = target.parent_config if target is not None else None
        while cursor is not None and walk.open:
            found = self.get_tuple(cursor)
            if found is None:
                break
            walk.visit(found.checkpoint["channel_values"], found.pending_writes or ())
            cursor = found.parent_config
        return walk.result()

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async :meth:`get_delta_channel_history` (walks :meth:`aget_tuple`)."""
        if not channels:
            return {}
        walk = _HistoryWalk(channels)
        target = await self.aget_tuple(config)
        cursor = target.parent_config if target is not None else None
        while cursor is not None and walk.open:
            found = await self.aget_tuple(cursor)
            if found is None:
                break
            walk.visit(found.checkpoint["channel_values"], found.pending_writes or ())
            cursor = found.parent_config
        return walk.result()

    # -- async twins: override in savers doing I/O --------------------------

    async def aget(self, config: RunnableConfig) -> Checkpoint | None:
        """Async :meth:`get`."""
        found = await self.aget_tuple(config)
        return None if found is None else found.checkpoint

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`; blocks the loop unless overridden."""
        return self.get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`; blocks the loop unless overridden."""
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put`; blocks the loop unless overridden."""
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes`; blocks the loop unless overridden."""
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`; blocks the loop unless overridden."""
        self.delete_thread(thread_id)


def config_key(config: RunnableConfig) -> tuple[str, str]:
    """``(thread_id, checkpoint_ns)`` of ``config``; raises if there is no thread."""
    configurable = config.get("configurable") or {}
    thread_id = configurable.get("thread_id")
    if thread_id is None:
        raise CheckpointError(
            'A checkpoint saver needs config["configurable"]["thread_id"]; '
            'pass e.g. {"configurable": {"thread_id": "my-thread"}}'
        )
    return str(thread_id), str(configurable.get("checkpoint_ns", "") or "")


class _HistoryWalk:
    """Accumulates :class:`DeltaChannelHistory` entries, newest ancestor first."""

    def __init__(self, channels: Sequence[str]) -> None:
        self.channels = list(channels)
        self.open = set(channels)
        self.newest_first: dict[str, list[PendingWrite]] = {c: [] for c in channels}
        self.seeds: dict[str, Any] = {}

    def visit(self, values: Mapping[str, Any], writes: Sequence[PendingWrite]) -> None:
        """One ancestor: its values and its writes, in the order they apply."""
        for write in reversed(writes):
            if write[1] in self.open:
                self.newest_first[write[1]].append(write)
        for channel in [c for c in self.open if c in values]:
            self.seeds[channel] = values[channel]
            self.open.discard(channel)

    def result(self) -> dict[str, DeltaChannelHistory]:
        out: dict[str, DeltaChannelHistory] = {}
        for channel in self.channels:
            entry: DeltaChannelHistory = {"writes": self.newest_first[channel][::-1]}
            if channel in self.seeds:
                entry["seed"] = self.seeds[channel]
            out[channel] = entry
        return out


class WriteRows(NamedTuple):
    """A task's writes as a saver stores them: one row per write index."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    upsert: bool
    rows: dict[int, tuple[str, Any]]


def write_rows(config: RunnableConfig, writes: Sequence[tuple[str, Any]]) -> WriteRows:
    """Apply the contract's ``put_writes`` keying, shared by every saver.

    ``idx = WRITES_IDX_MAP.get(channel, position)``; when every write is a control
    write the rows replace stored ones (``upsert``), else stored rows win. Within one
    call a repeated index keeps its place: an upsert keeps the last value, an insert
    the first.
    """
    from graphruntime._internal._constants import WRITES_IDX_MAP

    thread_id, checkpoint_ns = config_key(config)
    checkpoint_id = get_checkpoint_id(config)
    if checkpoint_id is None:
        raise CheckpointError(
            'put_writes needs config["configurable"]["checkpoint_id"]: the checkpoint '
            "the writing step started from"
        )
    upsert = all(channel in WRITES_IDX_MAP for channel, _ in writes)
    rows: dict[int, tuple[str, Any]] = {}
    for position, (channel, value) in enumerate(writes):
        idx = WRITES_IDX_MAP.get(channel, position)
        if upsert or idx not in rows:
            rows[idx] = (channel, value)
    return WriteRows(thread_id, checkpoint_ns, checkpoint_id, upsert, rows)


def checkpoint_config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    """The config that addresses one stored checkpoint."""
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }
