"""DeltaChannel bookkeeping around the loop: rebuilding values, and when to snapshot.

A :class:`~graphruntime.channels.DeltaChannel` stores nothing in most checkpoints.
Its value at a checkpoint is the nearest :class:`DeltaSnapshot` above it plus the
writes saved on the checkpoints in between (``get_delta_channel_history``), so two
rules keep every checkpoint readable:

- **What a checkpoint's history replays must be what produced it.** A new
  checkpoint replays every delta write saved on its parent (the *base*). When
  the writes that built the new checkpoint differ from the ones saved on the base
  (a task dropped or rerun, an input that could not be saved there, an
  ``Overwrite``), the new checkpoint stores a snapshot of those channels instead.
  :class:`DeltaTracker` compares the two.
- **A walk stays short.** A channel snapshots every ``snapshot_frequency``
  updates, and after :data:`DELTA_MAX_SUPERSTEPS_SINCE_SNAPSHOT` supersteps,
  counted in the checkpoint metadata's ``counters_since_delta_snapshot``.

The functions here are pure but for :func:`load_channels`, which reads the
saver's history.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Collection, Iterable, Mapping, MutableSequence, Sequence
from typing import Any
from uuid import UUID, uuid5

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import INPUT, NS_END, NS_SEP
from graphruntime._internal._typing import MISSING
from graphruntime.channels import BaseChannel, BinaryOperatorAggregate, DeltaChannel
from graphruntime.channels._reduce import overwrite_value
from graphruntime.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    DeltaChannelHistory,
    PendingWrite,
)
from graphruntime.checkpoint.serde.types import DeltaSnapshot
from graphruntime.errors import CheckpointError
from graphruntime.pregel._message_ids import ensure_message_ids

__all__ = (
    "COUNTERS",
    "DELTA_MAX_SUPERSTEPS_SINCE_SNAPSHOT",
    "SNAPSHOT_BUMPS",
    "DeltaTracker",
    "aload_channels",
    "counters_after",
    "delta_channels_to_snapshot",
    "delta_names",
    "detached",
    "load_channels",
    "set_counters",
    "snapshot_values",
    "versions_seen_without_bumps",
)

DELTA_MAX_SUPERSTEPS_SINCE_SNAPSHOT = int(
    os.environ.get("LANGGRAPH_DELTA_MAX_SUPERSTEPS_SINCE_SNAPSHOT", "5000")
)
"""A DeltaChannel snapshots at least this often (in supersteps), written or not."""

COUNTERS = "counters_since_delta_snapshot"
SNAPSHOT_BUMPS = "__snapshot_bumps__"
"""``versions_seen`` entry: what a snapshot's version bump advanced (:func:`snapshot_values`)."""

Counters = dict[str, tuple[int, int]]


def delta_names(specs: Mapping[str, Any]) -> list[str]:
    return [k for k, spec in specs.items() if isinstance(spec, DeltaChannel)]


def is_delta(specs: Mapping[str, Any], channel: str) -> bool:
    return isinstance(specs.get(channel), DeltaChannel)


# --- reading ------------------------------------------------------------------------


def channels_to_replay(specs: Mapping[str, BaseChannel], checkpoint: Checkpoint) -> list[str]:
    """Channels whose value at ``checkpoint`` only its history holds.

    A channel without a version was never written: empty, no walk. A
    ``BinaryOperatorAggregate`` stores its value at every version, so one with a
    version and no value was a DeltaChannel when it was written: rebuilt the same way.
    """
    values, versions = checkpoint["channel_values"], checkpoint["channel_versions"]
    return [
        k
        for k, spec in specs.items()
        # the dict tests first: an isinstance of an ABC costs a Python call
        if k in versions
        and values.get(k, MISSING) is MISSING
        and isinstance(spec, (DeltaChannel, BinaryOperatorAggregate))
    ]


def _replay(spec: BaseChannel, history: DeltaChannelHistory) -> BaseChannel:
    channel = spec.from_checkpoint(history.get("seed", MISSING))
    if isinstance(channel, DeltaChannel):
        channel.replay_writes(history["writes"])
    else:
        # one update per write: they span many steps, each may hold an Overwrite
        for _, _, value in history["writes"]:
            channel.update([value])
    return channel


def _assemble(
    specs: Mapping[str, BaseChannel],
    checkpoint: Checkpoint,
    histories: Mapping[str, DeltaChannelHistory],
) -> dict[str, BaseChannel]:
    values = checkpoint["channel_values"]
    return {
        k: _replay(spec, histories[k])
        if k in histories
        else spec.from_checkpoint(values.get(k, MISSING))
        for k, spec in specs.items()
    }


def _need_saver(replay: list[str], saver: BaseCheckpointSaver | None) -> None:
    if replay and saver is None:
        raise CheckpointError(
            f"DeltaChannel {replay} has history to replay but no checkpointer was given "
            "to read it: load this checkpoint through the graph's checkpointer"
        )


def load_channels(
    specs: Mapping[str, BaseChannel],
    checkpoint: Checkpoint,
    *,
    saver: BaseCheckpointSaver | None,
    config: RunnableConfig | None,
) -> dict[str, BaseChannel]:
    """The channels at a saved checkpoint; DeltaChannels rebuilt in one history read."""
    replay = channels_to_replay(specs, checkpoint) if config is not None else []
    _need_saver(replay, saver)
    histories: Mapping[str, DeltaChannelHistory] = {}
    if replay and saver is not None and config is not None:
        histories = saver.get_delta_channel_history(config=config, channels=replay)
    return _assemble(specs, checkpoint, histories)


async def aload_channels(
    specs: Mapping[str, BaseChannel],
    checkpoint: Checkpoint,
    *,
    saver: BaseCheckpointSaver | None,
    config: RunnableConfig | None,
) -> dict[str, BaseChannel]:
    """Async :func:`load_channels`."""
    replay = channels_to_replay(specs, checkpoint) if config is not None else []
    _need_saver(replay, saver)
    histories: Mapping[str, DeltaChannelHistory] = {}
    if replay and saver is not None and config is not None:
        histories = await saver.aget_delta_channel_history(config=config, channels=replay)
    return _assemble(specs, checkpoint, histories)


def detached(spec: BaseChannel, channel: BaseChannel) -> BaseChannel:
    """A deep copy of ``channel``: a reducer that mutates its left operand must not
    change a value the saver may share with other readers."""
    if isinstance(channel, DeltaChannel):
        value = channel.get() if channel.is_available() else MISSING
        if value is MISSING:
            return channel.copy()
        return spec.from_checkpoint(DeltaSnapshot(copy.deepcopy(value)))
    return spec.from_checkpoint(copy.deepcopy(channel.checkpoint()))


# --- snapshot cadence ---------------------------------------------------------------


def read_counters(metadata: Mapping[str, Any] | None) -> Counters:
    stored = (metadata or {}).get(COUNTERS) or {}
    return {k: (int(v[0]), int(v[1])) for k, v in stored.items()}


def counters_after(
    metadata: Mapping[str, Any] | None, names: Iterable[str], updated: Collection[str]
) -> Counters:
    """The counters one superstep later: every channel's superstep count, and the
    update count of the ``updated`` ones, go up by one."""
    previous = read_counters(metadata)
    out: Counters = {}
    for name in names:
        updates, supersteps = previous.get(name, (0, 0))
        out[name] = (updates + (name in updated), supersteps + 1)
    return out


def delta_channels_to_snapshot(
    channels: Mapping[str, BaseChannel], counters: Mapping[str, Any], versions: ChannelVersions
) -> set[str]:
    """The DeltaChannels whose cadence says: snapshot now.

    A channel without a version was never written on this branch: nothing to store.
    """
    due: set[str] = set()
    for name, channel in channels.items():
        if not isinstance(channel, DeltaChannel) or not channel.is_available():
            continue
        if name not in versions:
            continue
        updates, supersteps = counters.get(name, (0, 0))
        if (
            updates >= channel.snapshot_frequency
            or supersteps >= DELTA_MAX_SUPERSTEPS_SINCE_SNAPSHOT
        ):
            due.add(name)
    return due


def set_counters(metadata: dict[str, Any], counters: Counters, snapshot: Collection[str]) -> None:
    """Store ``counters`` in ``metadata``, zeroed for the channels just snapshotted.

    Pairs are stored as lists (JSON has no tuples); zero pairs are left out.
    """
    kept = {k: [u, s] for k, (u, s) in counters.items() if k not in snapshot and (u, s) != (0, 0)}
    if kept:
        metadata[COUNTERS] = kept
    else:
        metadata.pop(COUNTERS, None)


def written_delta_channels(specs: Mapping[str, Any], writes: Iterable[tuple[str, Any]]) -> set[str]:
    return {c for c, _ in writes if is_delta(specs, c)}


def overwritten(specs: Mapping[str, Any], writes: Iterable[tuple[str, Any]]) -> set[str]:
    """The DeltaChannels ``writes`` set with an ``Overwrite``: replay from older
    snapshots would otherwise fold the writes it discarded."""
    return {c for c, v in writes if is_delta(specs, c) and overwrite_value(v)[0]}


# --- storing snapshots --------------------------------------------------------------


def snapshot_values(
    values: dict[str, Any],
    versions: ChannelVersions,
    versions_seen: dict[str, ChannelVersions],
    channels: Mapping[str, BaseChannel],
    snapshot: Collection[str],
    *,
    get_next_version: Any,
    stored_versions: Mapping[str, Any] | None,
    trigger_to_nodes: Mapping[str, Sequence[str]],
) -> dict[str, ChannelVersions]:
    """Put a :class:`DeltaSnapshot` of each ``snapshot`` channel in ``values``.

    Savers store a value per ``(channel, version)``, so a snapshot of a channel
    whose version has not moved since the last stored checkpoint (``stored_versions``)
    needs a new version; a snapshot of a channel never written needs a first one. A
    bump is not a write: whoever had seen the old version is advanced to the new
    one, so no node reruns and no breakpoint fires on it. ``versions_seen`` keeps,
    under :data:`SNAPSHOT_BUMPS`, what it advanced (see
    :func:`versions_seen_without_bumps`). Mutates ``values`` and ``versions``;
    returns the new ``versions_seen``.
    """
    bumped: dict[str, tuple[Any, Any]] = {}
    for name in sorted(snapshot):
        channel = channels.get(name)
        if channel is None or not channel.is_available():
            continue
        old = versions.get(name)
        if get_next_version is not None and (
            old is None or (stored_versions is not None and stored_versions.get(name) == old)
        ):
            versions[name] = get_next_version(old, None)
            bumped[name] = (old, versions[name])
        elif old is None:
            continue  # no version to store it under
        values[name] = DeltaSnapshot(channel.get())
    return _mark_bumps_seen(versions_seen, bumped, trigger_to_nodes)


def _bump_keys(node: str, channel: str) -> tuple[str, str]:
    # node names contain neither separator, so these never collide
    return f"{node}{NS_SEP}{channel}", f"{node}{NS_END}{channel}"


def _mark_bumps_seen(
    versions_seen: dict[str, ChannelVersions],
    bumped: Mapping[str, tuple[Any, Any]],
    trigger_to_nodes: Mapping[str, Sequence[str]],
) -> dict[str, ChannelVersions]:
    if not bumped:
        return versions_seen
    out = dict(versions_seen)
    for channel, (old, _) in bumped.items():
        if old is None:
            # a first version: subscribers that never ran must not start on it
            for node in trigger_to_nodes.get(channel, ()):
                out.setdefault(node, {})
    marks = dict(versions_seen.get(SNAPSHOT_BUMPS, {}))
    for node, seen in list(out.items()):
        if node == SNAPSHOT_BUMPS:
            continue
        for channel, (old, new) in bumped.items():
            if seen.get(channel) != old:
                continue
            advanced, read = _bump_keys(node, channel)
            if old is not None and marks.get(advanced) != old:
                marks[read] = old  # the version the node really read
            marks[advanced] = new
            seen = {**seen, channel: new}
            out[node] = seen
    out[SNAPSHOT_BUMPS] = marks
    return out


def versions_seen_without_bumps(
    versions_seen: Mapping[str, ChannelVersions],
) -> dict[str, ChannelVersions]:
    """``versions_seen`` as the nodes read the channels, snapshot bumps undone."""
    marks = versions_seen.get(SNAPSHOT_BUMPS)
    if not marks:
        return {k: dict(v) for k, v in versions_seen.items() if k != SNAPSHOT_BUMPS}
    out: dict[str, ChannelVersions] = {}
    for node, seen in versions_seen.items():
        if node == SNAPSHOT_BUMPS:
            continue
        out[node] = {}
        for channel, version in seen.items():
            advanced, read = _bump_keys(node, channel)
            if marks.get(advanced) != version:
                out[node][channel] = version
            elif read in marks:
                out[node][channel] = marks[read]
    return out


# --- which channels a new checkpoint must snapshot -----------------------------------


class DeltaTracker:
    """Compares, per task, the delta writes saved on the base checkpoint with the ones
    that build the next checkpoint, whose history replays the former.

    ``saved``: called for every write saved on the base (loaded with it or put since);
    ``applied``: for every write applied to build the next checkpoint. A loaded task
    that applies writes without :meth:`handed_back` ran again: the saver kept its
    first writes, so replay would fold the old ones. :meth:`forced` lists the channels
    the next checkpoint must snapshot, and :meth:`rebase` starts over on the
    checkpoint just saved.
    """

    __slots__ = (
        "specs",
        "names",
        "enabled",
        "_saved",
        "_applied",
        "_loaded",
        "_handed_back",
        "_forced",
    )

    def __init__(self, specs: Mapping[str, Any], names: list[str] | None = None) -> None:
        self.specs = specs
        self.names = delta_names(specs) if names is None else names
        self.enabled = bool(self.names)
        self._saved: dict[str, set[str]] = {}
        self._applied: dict[str, set[str]] = {}
        self._loaded: set[str] = set()
        self._handed_back: set[str] = set()
        self._forced: set[str] = set()

    def rebase(self, loaded: Iterable[PendingWrite] = ()) -> None:
        """Start comparing against a new base checkpoint, saved with ``loaded`` writes."""
        if not self.enabled:
            return
        self._saved, self._applied, self._handed_back = {}, {}, set()
        for task_id, channel, _ in loaded:
            self.saved(task_id, ((channel, None),))
        self._loaded = set(self._saved)

    def handed_back(self, task_id: str) -> None:
        """A task got its loaded writes back instead of running again."""
        if self.enabled:
            self._handed_back.add(task_id)

    def was_handed_back(self, task_id: str) -> bool:
        return task_id in self._handed_back

    def saved(self, task_id: str, writes: Iterable[tuple[str, Any]]) -> None:
        if self.enabled and (channels := written_delta_channels(self.specs, writes)):
            self._saved.setdefault(task_id, set()).update(channels)

    def applied(self, task_id: str, writes: Iterable[tuple[str, Any]]) -> None:
        if not self.enabled:
            return
        writes = list(writes)
        if channels := written_delta_channels(self.specs, writes):
            self._applied.setdefault(task_id, set()).update(channels)
            self._forced |= overwritten(self.specs, writes)

    def force(self, channels: Iterable[str]) -> None:
        if self.enabled:
            self._forced.update(c for c in channels if is_delta(self.specs, c))

    def forced(self) -> set[str]:
        """The channels the next checkpoint must snapshot, whatever their cadence says."""
        # a task that ran again on the base: the saver kept its first writes
        rerun = (self._loaded & self._applied.keys()) - self._handed_back
        for task_id in self._saved.keys() | self._applied.keys():
            saved = self._saved.get(task_id, set())
            applied = self._applied.get(task_id, set())
            self._forced |= (saved | applied) if task_id in rerun else saved ^ applied
        return set(self._forced)

    def snapshotted(self, channels: Collection[str]) -> None:
        self._forced.difference_update(channels)

    def plan_checkpoint(
        self,
        previous_metadata: Mapping[str, Any] | None,
        metadata: dict[str, Any],
        channels: Mapping[str, BaseChannel],
        versions: ChannelVersions,
        updated: Collection[str],
        *,
        saving: bool,
    ) -> set[str]:
        """The DeltaChannels the next checkpoint snapshots; its counters into ``metadata``.

        Counters go one superstep on from ``previous_metadata``'s. Only a checkpoint
        that is saved snapshots; one kept in memory only leaves the comparison of
        saved and applied writes running, so the next saved one snapshots what the
        unsaved steps wrote.
        """
        if not self.names:
            return set()
        counters = counters_after(previous_metadata, self.names, updated)
        snapshot: set[str] = set()
        if saving:
            snapshot = self.forced() | delta_channels_to_snapshot(channels, counters, versions)
            self.snapshotted(snapshot)
        set_counters(metadata, counters, snapshot)
        return snapshot

    def final_snapshot(
        self,
        metadata: dict[str, Any],
        channels: Mapping[str, BaseChannel],
        versions: ChannelVersions,
    ) -> set[str]:
        """What a checkpoint kept in memory snapshots when it is saved after all (an
        ``"exit"`` run's last): its counters are already in ``metadata``, and the
        writes of the unsaved steps before it were never saved to replay."""
        if not self.names:
            return set()
        counters = read_counters(metadata)
        snapshot = self.forced() | delta_channels_to_snapshot(channels, counters, versions)
        self.snapshotted(snapshot)
        set_counters(metadata, counters, snapshot)
        return snapshot

    def save_input(
        self,
        writes: MutableSequence[tuple[str, Any]],
        checkpoint_id: str,
        put_writes: Callable[..., Any] | None,
        config: RunnableConfig,
    ) -> tuple[str, list[tuple[str, Any]]] | None:
        """A run's (or an update's) input to DeltaChannels, applied to build the next
        checkpoint: saved with ``put_writes`` on ``checkpoint_id``, the checkpoint it
        builds on, under a task id of its own (a checkpoint's null-task writes are its
        own state), or, without ``put_writes``, snapshotted by the next checkpoint
        (unless an ``"exit"`` run stores them later: returns that task id and writes).
        Messages in the writes get ids first, in place.
        """
        if not self.enabled:
            return None
        ensure_message_ids(self.specs, writes)
        delta = [(c, v) for c, v in writes if is_delta(self.specs, c)]
        if not delta:
            return None
        task_id = str(uuid5(UUID(checkpoint_id), INPUT))
        self.applied(task_id, delta)
        if put_writes is not None:
            put_writes(config, delta, task_id)
            self.saved(task_id, delta)
        return task_id, delta
