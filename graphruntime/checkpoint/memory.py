"""In-memory checkpoint saver: the reference implementation and test double.

It stores serialized data laid out like the Postgres saver's tables
(checkpoints, per-``(channel, version)`` blobs, writes), so it exercises the
serializer on every call and behaves like a real backend: what a caller gets
back never aliases what it stored.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, NamedTuple

from graphruntime._internal._config import RunnableConfig
from graphruntime.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
    checkpoint_config,
    config_key,
    get_checkpoint_id,
    write_rows,
    writes_sort_key,
)
from graphruntime.checkpoint.cluster import ClusterSaver
from graphruntime.checkpoint.serde import SerializerProtocol
from graphruntime.errors import CheckpointConflict, CheckpointError

__all__ = ("InMemorySaver", "MemorySaver")

Typed = tuple[str, bytes]
# A channel that has a version but no value (e.g. cleared ephemeral channel).
_EMPTY: Typed = ("empty", b"")


class _StoredCheckpoint(NamedTuple):
    checkpoint: Typed  # serialized without channel_values
    metadata: Typed
    parent_id: str | None
    versions: ChannelVersions  # private copy, to find the blobs without deserializing


class _StoredWrite(NamedTuple):
    task_id: str
    channel: str
    value: Typed
    task_path: str


class InMemorySaver(ClusterSaver):
    """Thread-safe in-memory saver for tests, development and single processes.

    Values are serialized outside the lock and deserialized outside it, so
    concurrent callers only contend for dictionary updates. It is a
    :class:`~graphruntime.checkpoint.cluster.ClusterSaver` too (fenced puts), so
    distributed executors can be tested against it without a database.
    """

    def __init__(self, *, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        self._lock = threading.Lock()
        # thread_id -> checkpoint_ns -> checkpoint_id -> row
        self.storage: dict[str, dict[str, dict[str, _StoredCheckpoint]]] = {}
        # (thread_id, checkpoint_ns, checkpoint_id) -> (task_id, idx) -> row, insertion-ordered
        self.writes: dict[tuple[str, str, str], dict[tuple[str, int], _StoredWrite]] = {}
        # (thread_id, checkpoint_ns, channel, version) -> value
        self.blobs: dict[tuple[str, str, str, str | int | float], Typed] = {}
        self._fence = False

    def fenced(self) -> InMemorySaver:
        """This saver (same storage), with every put fenced: see ClusterSaver.fenced."""
        view = copy.copy(self)
        view._fence = True
        return view

    def __enter__(self) -> InMemorySaver:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        return None

    async def __aenter__(self) -> InMemorySaver:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        return None

    # -- reads ---------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id, checkpoint_ns = config_key(config)
        checkpoint_id = get_checkpoint_id(config)
        with self._lock:
            rows = self.storage.get(thread_id, {}).get(checkpoint_ns)
            if not rows:
                return None
            if checkpoint_id is None:
                checkpoint_id = max(rows)
            row = rows.get(checkpoint_id)
        if row is None:
            return None
        return self._load(thread_id, checkpoint_ns, checkpoint_id, row, None)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        if limit is not None and limit <= 0:
            return
        thread_id: str | None = None
        checkpoint_ns: str | None = None
        checkpoint_id: str | None = None
        if config is not None:
            thread_id, _ = config_key(config)
            if "checkpoint_ns" in config["configurable"]:
                checkpoint_ns = config["configurable"]["checkpoint_ns"]
            checkpoint_id = get_checkpoint_id(config)
        before_id = get_checkpoint_id(before) if before is not None else None

        with self._lock:
            threads = (
                list(self.storage.items())
                if thread_id is None
                else [(thread_id, self.storage.get(thread_id, {}))]
            )
            found = [
                (cid, tid, ns, row)
                for tid, namespaces in threads
                for ns, rows in namespaces.items()
                if checkpoint_ns is None or ns == checkpoint_ns
                for cid, row in rows.items()
                if (checkpoint_id is None or cid == checkpoint_id)
                and (before_id is None or cid < before_id)
            ]
        found.sort(key=lambda item: item[:3], reverse=True)

        for cid, tid, ns, row in found:
            metadata: CheckpointMetadata = self.serde.loads_typed(row.metadata)
            if filter and not all(metadata.get(k, _ABSENT) == v for k, v in filter.items()):
                continue
            yield self._load(tid, ns, cid, row, metadata)
            if limit is not None:
                limit -= 1
                if limit <= 0:
                    return

    def _load(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        row: _StoredCheckpoint,
        metadata: CheckpointMetadata | None,
    ) -> CheckpointTuple:
        with self._lock:
            blobs = [
                (channel, self.blobs.get((thread_id, checkpoint_ns, channel, version)))
                for channel, version in row.versions.items()
            ]
            writes = list(self.writes.get((thread_id, checkpoint_ns, checkpoint_id), {}).values())
        loads = self.serde.loads_typed
        checkpoint: Checkpoint = loads(row.checkpoint)
        checkpoint["channel_values"] = {
            channel: loads(blob)
            for channel, blob in blobs
            if blob is not None and blob[0] != _EMPTY[0]
        }
        pending: list[PendingWrite] = [(w.task_id, w.channel, loads(w.value)) for w in writes]
        return CheckpointTuple(
            config=checkpoint_config(thread_id, checkpoint_ns, checkpoint_id),
            checkpoint=checkpoint,
            metadata=loads(row.metadata) if metadata is None else metadata,
            parent_config=(
                None
                if row.parent_id is None
                else checkpoint_config(thread_id, checkpoint_ns, row.parent_id)
            ),
            pending_writes=pending,
        )

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The parent-chain walk of the contract, in one pass under the lock.

        A step's writes replay in :func:`writes_sort_key` order (task path, task id,
        index), the order the step applied them in, whatever order they were saved in.
        """
        if not channels:
            return {}
        thread_id, checkpoint_ns = config_key(config)
        open_ = set(channels)
        # newest ancestor first: (serialized writes of the open channels, seeds found)
        visited: list[tuple[list[_StoredWrite], dict[str, Typed]]] = []
        with self._lock:
            rows = self.storage.get(thread_id, {}).get(checkpoint_ns, {})
            target_id = get_checkpoint_id(config) or max(rows, default=None)
            target = rows.get(target_id) if target_id is not None else None
            cursor = target.parent_id if target is not None else None
            while cursor is not None and open_:
                row = rows.get(cursor)
                if row is None:
                    break
                stored = self.writes.get((thread_id, checkpoint_ns, cursor), {})
                ordered = sorted(
                    stored.items(), key=lambda kv: writes_sort_key(kv[1].task_path, *kv[0])
                )
                writes = [w for _, w in ordered if w.channel in open_]
                seeds: dict[str, Typed] = {}
                for channel in open_:
                    version = row.versions.get(channel)
                    blob = None
                    if version is not None:
                        blob = self.blobs.get((thread_id, checkpoint_ns, channel, version))
                    if blob is not None and blob[0] != _EMPTY[0]:
                        seeds[channel] = blob
                open_.difference_update(seeds)
                visited.append((writes, seeds))
                cursor = row.parent_id
        loads = self.serde.loads_typed
        history: dict[str, DeltaChannelHistory] = {c: {"writes": []} for c in channels}
        for writes, seeds in reversed(visited):  # oldest first
            for channel, blob in seeds.items():
                history[channel]["seed"] = loads(blob)
            for w in writes:
                history[w.channel]["writes"].append((w.task_id, w.channel, loads(w.value)))
        return history

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return self.get_delta_channel_history(config=config, channels=channels)

    # -- writes --------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        thread_id, checkpoint_ns = config_key(config)
        parent_id = get_checkpoint_id(config)
        values = checkpoint["channel_values"]
        versions = dict(checkpoint["channel_versions"])
        if unversioned := values.keys() - versions.keys():
            raise CheckpointError(
                f"Checkpoint {checkpoint['id']} has values for channels without a version: "
                f"{sorted(unversioned)}; every channel in channel_values needs a "
                "channel_versions entry"
            )
        dumps = self.serde.dumps_typed
        new_blobs = {
            (thread_id, checkpoint_ns, channel, version): (
                dumps(values[channel]) if channel in values else _EMPTY
            )
            for channel, version in new_versions.items()
        }
        row = _StoredCheckpoint(
            checkpoint=dumps({k: v for k, v in checkpoint.items() if k != "channel_values"}),
            metadata=dumps(dict(metadata)),
            parent_id=parent_id,
            versions=versions,
        )
        with self._lock:
            if self._fence:
                self._check_fence(thread_id, checkpoint_ns, parent_id, checkpoint["id"])
            self.blobs.update(new_blobs)
            # A value whose version is not in new_versions (a caller that does
            # not track changes) must still be stored, or it would be lost.
            missing = [
                (thread_id, checkpoint_ns, channel, versions[channel])
                for channel in values
                if (thread_id, checkpoint_ns, channel, versions[channel]) not in self.blobs
            ]
            for key in missing:
                self.blobs[key] = dumps(values[key[2]])
            self.storage.setdefault(thread_id, {}).setdefault(checkpoint_ns, {})[
                checkpoint["id"]
            ] = row
        return checkpoint_config(thread_id, checkpoint_ns, checkpoint["id"])

    def _check_fence(
        self, thread_id: str, checkpoint_ns: str, parent_id: str | None, new_id: str
    ) -> None:
        """Refuse a put whose parent is not the head (call with the lock held)."""
        stored = self.storage.get(thread_id, {}).get(checkpoint_ns, {})
        head = max(stored) if stored else None
        if head == parent_id:
            return
        if head == new_id and stored[new_id].parent_id == parent_id:
            return  # a retry of the put that won
        raise CheckpointConflict(
            f"Fenced put refused on thread {thread_id!r}, namespace {checkpoint_ns!r}: "
            f"expected the latest checkpoint to be {parent_id or 'none (a new thread)'}, "
            f"but it is {head or 'none'}. Another writer advanced the thread first; "
            "nothing was written. Reload the thread and recompute the step."
        )

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        thread_id, checkpoint_ns, checkpoint_id, upsert, keyed = write_rows(config, writes)
        dumps = self.serde.dumps_typed
        rows = [
            ((task_id, idx), _StoredWrite(task_id, channel, dumps(value), task_path))
            for idx, (channel, value) in keyed.items()
        ]
        with self._lock:
            stored = self.writes.setdefault((thread_id, checkpoint_ns, checkpoint_id), {})
            for key, write in rows:
                if upsert:
                    stored[key] = write
                else:
                    stored.setdefault(key, write)

    def delete_thread(self, thread_id: str) -> None:
        thread_id = str(thread_id)
        with self._lock:
            self.storage.pop(thread_id, None)
            for wkey in [k for k in self.writes if k[0] == thread_id]:
                del self.writes[wkey]
            for bkey in [k for k in self.blobs if k[0] == thread_id]:
                del self.blobs[bkey]


_ABSENT = object()

MemorySaver = InMemorySaver
"""LangGraph's older name for :class:`InMemorySaver`."""
