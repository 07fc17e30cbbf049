"""The saver contract's DeltaChannel history read, as tests (part of the conformance suite).

``get_delta_channel_history`` walks a checkpoint's parent chain: per channel, the
writes saved on each ancestor, oldest first, down to the nearest ancestor that
stores the channel's value (the ``seed``). These tests put checkpoints the way
the runtime does for a DeltaChannel (no value in most checkpoints, a
``DeltaSnapshot`` now and then, per-step writes) and check what comes back,
against the contract's default walk too.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import NULL_TASK_ID
from graphruntime.checkpoint._id import uuid6
from graphruntime.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    copy_checkpoint,
    empty_checkpoint,
)
from graphruntime.checkpoint.serde.types import DeltaSnapshot

__all__ = ("DeltaHistoryConformance",)

COUNTERS = "counters_since_delta_snapshot"


def _task() -> str:
    return str(uuid.uuid4())


class _Thread:
    """Puts a chain of checkpoints on a fresh thread as the runtime would."""

    def __init__(self, saver: BaseCheckpointSaver, ns: str = "") -> None:
        self.saver = saver
        self.thread_id = f"conformance-delta-{uuid.uuid4()}"
        self.ns = ns
        self.step = -1

    def config(self, checkpoint_id: str | None = None) -> RunnableConfig:
        conf: dict[str, Any] = {"thread_id": self.thread_id, "checkpoint_ns": self.ns}
        if checkpoint_id is not None:
            conf["checkpoint_id"] = checkpoint_id
        return {"configurable": conf}

    def put(
        self,
        parent: tuple[RunnableConfig, Checkpoint] | None,
        *,
        written: Sequence[str] = (),
        values: Mapping[str, Any] | None = None,
        counted: Sequence[str] = (),
    ) -> tuple[RunnableConfig, Checkpoint]:
        """A child of ``parent``: ``written`` channels get a new version (and no value
        unless ``values`` has one); ``counted`` go in the metadata's snapshot counters."""
        checkpoint = empty_checkpoint() if parent is None else copy_checkpoint(parent[1])
        checkpoint["id"] = str(uuid6(clock_seq=self.step))
        checkpoint["ts"] = datetime.now(UTC).isoformat()
        checkpoint["channel_values"] = {}
        new_versions: ChannelVersions = {}
        for channel in {*written, *(values or {})}:
            version = self.saver.get_next_version(checkpoint["channel_versions"].get(channel))
            checkpoint["channel_versions"][channel] = version
            new_versions[channel] = version
        checkpoint["channel_values"].update(values or {})
        metadata: dict[str, Any] = {"source": "loop", "step": self.step, "parents": {}}
        if counted:
            metadata[COUNTERS] = {c: [1, 1] for c in counted}
        self.step += 1
        config = self.saver.put(
            parent[0] if parent is not None else self.config(),
            checkpoint,
            metadata,  # type: ignore[arg-type]
            new_versions,
        )
        return config, checkpoint

    def write(
        self,
        at: tuple[RunnableConfig, Checkpoint],
        writes: Sequence[tuple[str, Any]],
        task_id: str | None = None,
        task_path: str = "",
    ) -> str:
        task_id = task_id or _task()
        self.saver.put_writes(at[0], list(writes), task_id, task_path)
        return task_id


def _values(history: Mapping[str, Any], channel: str) -> list[Any]:
    return [value for _, _, value in history[channel]["writes"]]


class DeltaHistoryConformance:
    """``get_delta_channel_history`` as tests; mixed into ``CheckpointSaverConformance``."""

    def test_delta_history_of_no_channels_is_empty(self, saver: BaseCheckpointSaver) -> None:
        thread = _Thread(saver)
        head = thread.put(None, written=["log"])
        assert saver.get_delta_channel_history(config=head[0], channels=[]) == {}

    def test_delta_history_of_an_unknown_checkpoint_is_empty(
        self, saver: BaseCheckpointSaver
    ) -> None:
        thread = _Thread(saver)
        thread.put(None, written=["log"])
        missing = thread.config(str(uuid6()))
        assert saver.get_delta_channel_history(config=missing, channels=["log"]) == {
            "log": {"writes": []}
        }
        other = _Thread(saver)
        assert saver.get_delta_channel_history(config=other.config(), channels=["log"]) == {
            "log": {"writes": []}
        }

    def test_delta_history_replays_ancestors_writes_down_to_the_nearest_snapshot(
        self, saver: BaseCheckpointSaver
    ) -> None:
        thread = _Thread(saver)
        first = thread.put(None, written=["log"], counted=["log"])
        thread.write(first, [("log", "too-old")])
        snap = thread.put(first, values={"log": DeltaSnapshot(["s"])})
        thread.write(snap, [("log", "a"), ("other", "x")])
        middle = thread.put(snap, written=["log", "other"], counted=["log"])
        t1 = thread.write(middle, [("log", "b")])
        head = thread.put(middle, written=["log"], counted=["log"])
        thread.write(head, [("log", "pending")])  # the target's own: not history

        history = saver.get_delta_channel_history(config=head[0], channels=["log"])

        assert history["log"]["seed"] == DeltaSnapshot(["s"])
        assert _values(history, "log") == ["a", "b"]
        assert history["log"]["writes"][-1] == (t1, "log", "b")
        assert set(history) == {"log"}

    def test_delta_history_without_a_checkpoint_id_reads_the_latest(
        self, saver: BaseCheckpointSaver
    ) -> None:
        thread = _Thread(saver)
        first = thread.put(None, written=["log"], counted=["log"])
        thread.write(first, [("log", 1)])
        head = thread.put(first, written=["log"], counted=["log"])
        by_id = saver.get_delta_channel_history(config=head[0], channels=["log"])
        latest = saver.get_delta_channel_history(config=thread.config(), channels=["log"])
        assert latest == by_id == {"log": {"writes": [(by_id["log"]["writes"][0][0], "log", 1)]}}

    def test_delta_history_of_a_channel_never_snapshotted_reaches_the_root(
        self, saver: BaseCheckpointSaver
    ) -> None:
        thread = _Thread(saver)
        node = thread.put(None, counted=["log"])
        thread.write(node, [("log", 0)])
        for i in range(1, 4):
            node = thread.put(node, written=["log"], counted=["log"])
            thread.write(node, [("log", i)])
        head = thread.put(node, written=["log"], counted=["log"])
        history = saver.get_delta_channel_history(config=head[0], channels=["log"])
        assert _values(history, "log") == [0, 1, 2, 3]
        assert "seed" not in history["log"]

    def test_delta_history_walks_each_channel_to_its_own_seed(
        self, saver: BaseCheckpointSaver
    ) -> None:
        thread = _Thread(saver)
        root = thread.put(None, values={"a": DeltaSnapshot(["a0"]), "b": DeltaSnapshot(["b0"])})
        thread.write(root, [("a", "a1"), ("b", "b1")])
        mid = thread.put(root, written=["a"], values={"b": DeltaSnapshot(["b0", "b1"])})
        mid = (mid[0], mid[1])
        thread.write(mid, [("a", "a2"), ("b", "b2"), ("c", "c2")])
        head = thread.put(mid, written=["a", "b", "c"], counted=["a", "b", "c"])

        history = saver.get_delta_channel_history(config=head[0], channels=["a", "b", "c"])

        assert history["a"]["seed"] == DeltaSnapshot(["a0"])
        assert _values(history, "a") == ["a1", "a2"]
        assert history["b"]["seed"] == DeltaSnapshot(["b0", "b1"])
        assert _values(history, "b") == ["b2"]
        assert "seed" not in history["c"]
        assert _values(history, "c") == ["c2"]

    def test_delta_history_seeds_from_a_plain_value_stored_before_the_delta_channel(
        self, saver: BaseCheckpointSaver
    ) -> None:
        for plain in ([1, 2], ["x" * 50] * 40):  # small (stored inline by some savers), large
            thread = _Thread(saver)
            old = thread.put(None, values={"log": plain})  # no counters: before DeltaChannel
            thread.write(old, [("log", "d1")])
            mid = thread.put(old, written=["log"], counted=["log"])
            thread.write(mid, [("log", "d2")])
            head = thread.put(mid, written=["log"], counted=["log"])
            history = saver.get_delta_channel_history(config=head[0], channels=["log"])
            assert history["log"]["seed"] == plain
            assert _values(history, "log") == ["d1", "d2"]

    def test_delta_history_walks_past_checkpoints_that_do_not_count_the_channel(
        self, saver: BaseCheckpointSaver
    ) -> None:
        """Metadata is a hint for some savers, never the rule: values decide."""
        thread = _Thread(saver)
        snap = thread.put(None, values={"log": DeltaSnapshot([0])})
        thread.write(snap, [("log", 1)])
        bare = thread.put(snap, written=["log"])  # versioned, no value, no counters
        thread.write(bare, [("log", 2)])
        unversioned = thread.put(bare, written=["other"])
        thread.write(unversioned, [("log", 3)])
        head = thread.put(unversioned, written=["log"], counted=["log"])
        history = saver.get_delta_channel_history(config=head[0], channels=["log"])
        assert history["log"]["seed"] == DeltaSnapshot([0])
        assert _values(history, "log") == [1, 2, 3]

    def test_delta_history_walks_on_above_the_channels_first_version(
        self, saver: BaseCheckpointSaver
    ) -> None:
        """No value anywhere: every write on the chain, up to the root (the contract)."""
        thread = _Thread(saver)
        before = thread.put(None, written=["other"])
        thread.write(before, [("log", 0)])
        first = thread.put(before, written=["other"])  # no counters, log not versioned
        thread.write(first, [("log", 1)])
        head = thread.put(first, written=["log"], counted=["log"])
        history = saver.get_delta_channel_history(config=head[0], channels=["log"])
        assert "seed" not in history["log"]
        assert _values(history, "log") == [0, 1]

    def test_delta_history_follows_the_parent_chain_not_the_thread(
        self, saver: BaseCheckpointSaver
    ) -> None:
        thread = _Thread(saver)
        root = thread.put(None, values={"log": DeltaSnapshot([])})
        thread.write(root, [("log", "shared")])
        fork_point = thread.put(root, written=["log"], counted=["log"])
        thread.write(fork_point, [("log", "left")], task_id=_task())
        left = thread.put(fork_point, written=["log"], counted=["log"])
        thread.write(left, [("log", "left-2")])
        left_head = thread.put(left, written=["log"], counted=["log"])
        right = thread.put(fork_point, written=["log"], counted=["log"])
        thread.write(right, [("log", "right-only")])
        right_head = thread.put(right, written=["log"], counted=["log"])

        on_left = saver.get_delta_channel_history(config=left_head[0], channels=["log"])
        on_right = saver.get_delta_channel_history(config=right_head[0], channels=["log"])

        assert _values(on_left, "log") == ["shared", "left", "left-2"]
        assert _values(on_right, "log") == ["shared", "left", "right-only"]

    def test_delta_history_orders_a_steps_writes_by_task_path(
        self, saver: BaseCheckpointSaver
    ) -> None:
        thread = _Thread(saver)
        step = thread.put(None, written=["log"], counted=["log"])
        # saved in the order the tasks finished, not the order the step applied them
        thread.write(step, [("log", "c")], task_path="~__pregel_pull, c")
        thread.write(step, [("log", "a1"), ("log", "a2")], task_path="~__pregel_pull, a")
        thread.write(step, [("log", "cmd")], task_id=NULL_TASK_ID)
        thread.write(step, [("log", "b")], task_path="~__pregel_pull, b")
        head = thread.put(step, written=["log"], counted=["log"])
        history = saver.get_delta_channel_history(config=head[0], channels=["log"])
        assert _values(history, "log") == ["cmd", "a1", "a2", "b", "c"]

    def test_delta_history_of_a_namespace_stays_in_it(self, saver: BaseCheckpointSaver) -> None:
        root = _Thread(saver)
        sub = _Thread(saver, ns="child:1")
        sub.thread_id = root.thread_id
        r = root.put(None, written=["log"], counted=["log"])
        root.write(r, [("log", "root")])
        s = sub.put(None, written=["log"], counted=["log"])
        sub.write(s, [("log", "sub")])
        sub_head = sub.put(s, written=["log"], counted=["log"])
        root.put(r, written=["log"], counted=["log"])
        history = saver.get_delta_channel_history(config=sub_head[0], channels=["log"])
        assert _values(history, "log") == ["sub"]

    def test_delta_history_matches_the_contracts_default_walk(
        self, saver: BaseCheckpointSaver
    ) -> None:
        thread = _Thread(saver)
        node = thread.put(None, values={"a": [0]})
        for i in range(6):
            thread.write(node, [("a", i), ("b", i), ("c", -i)])
            if i == 3:
                node = thread.put(node, values={"a": DeltaSnapshot(list(range(4)))}, counted=["b"])
            else:
                node = thread.put(node, written=["a", "b"], counted=["a", "b"])
        channels = ["a", "b", "c"]
        override = saver.get_delta_channel_history(config=node[0], channels=channels)
        default = BaseCheckpointSaver.get_delta_channel_history(
            saver, config=node[0], channels=channels
        )
        assert override == default
        assert _values(override, "a") == [4, 5]
        assert _values(override, "c") == [0, -1, -2, -3, -4, -5]

    def test_delta_history_async_twin_matches(self, saver: BaseCheckpointSaver) -> None:
        thread = _Thread(saver)
        snap = thread.put(None, values={"log": DeltaSnapshot(["s"])})
        thread.write(snap, [("log", "a")])
        head = thread.put(snap, written=["log"], counted=["log"])

        async def read() -> Any:
            return await saver.aget_delta_channel_history(config=head[0], channels=["log"])

        assert asyncio.run(read()) == saver.get_delta_channel_history(
            config=head[0], channels=["log"]
        )
