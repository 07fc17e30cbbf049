"""Contract tests every checkpoint saver must pass.

Subclass :class:`CheckpointSaverConformance` in a test module and provide a
``saver`` fixture; pytest then runs every test below against that saver::

    class TestInMemory(CheckpointSaverConformance):
        @pytest.fixture
        def saver(self) -> InMemorySaver:
            return InMemorySaver()

Every test uses fresh random thread ids, so a saver whose storage outlives
one test (a shared database) passes too.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import threading
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from enum import Enum
from typing import Any

import pytest
from pydantic import BaseModel

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import ERROR, INTERRUPT, NULL_TASK_ID, RESUME
from graphruntime.checkpoint._id import uuid6
from graphruntime.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    copy_checkpoint,
    empty_checkpoint,
)
from graphruntime.checkpoint.cluster import ClusterSaver
from graphruntime.errors import CheckpointConflict
from graphruntime.testing._delta_conformance import DeltaHistoryConformance
from graphruntime.types import Command, Interrupt, Send

__all__ = ("CheckpointSaverConformance", "ClusterSaverConformance")


# -- value types used by the round-trip tests (module level: importable) -----


class ConformanceColor(Enum):
    RED = "red"
    BLUE = "blue"


class ConformanceInner(BaseModel):
    when: datetime
    tags: tuple[str, ...] = ()


class ConformanceModel(BaseModel):
    name: str
    inner: ConformanceInner
    optional: int | None = None


@dataclasses.dataclass
class ConformanceRecord:
    id: uuid.UUID
    amount: Decimal
    color: ConformanceColor
    model: ConformanceModel
    derived: int = dataclasses.field(init=False, default=0)


# -- helpers -----------------------------------------------------------------


def _thread() -> str:
    return f"conformance-{uuid.uuid4()}"


def _config(thread_id: str, ns: str = "", checkpoint_id: str | None = None) -> RunnableConfig:
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _save(
    saver: BaseCheckpointSaver,
    config: RunnableConfig,
    values: Mapping[str, Any],
    *,
    prev: Checkpoint | None = None,
    step: int = -1,
    metadata: Mapping[str, Any] | None = None,
    cleared: Iterable[str] = (),
) -> tuple[RunnableConfig, Checkpoint]:
    """Put a child of ``prev`` (as the runtime would): ``values`` changed, ``cleared`` emptied."""
    checkpoint = empty_checkpoint() if prev is None else copy_checkpoint(prev)
    checkpoint["id"] = str(uuid6(clock_seq=step))
    checkpoint["ts"] = datetime.now(UTC).isoformat()
    new_versions: ChannelVersions = {}
    for channel in [*values, *cleared]:
        version = saver.get_next_version(checkpoint["channel_versions"].get(channel))
        new_versions[channel] = version
        checkpoint["channel_versions"][channel] = version
    checkpoint["channel_values"].update(values)
    for channel in cleared:
        checkpoint["channel_values"].pop(channel, None)
    checkpoint["updated_channels"] = sorted(new_versions)
    meta: dict[str, Any] = {"source": "loop", "step": step, "parents": {}}
    meta.update(metadata or {})
    saved = saver.put(config, checkpoint, meta, new_versions)  # type: ignore[arg-type]
    return saved, checkpoint


def _ids(tuples: Iterable[CheckpointTuple]) -> list[str]:
    return [t.config["configurable"]["checkpoint_id"] for t in tuples]


def _writes(t: CheckpointTuple | None) -> list[tuple[str, str, Any]]:
    assert t is not None
    assert t.pending_writes is not None
    return list(t.pending_writes)


_VERSION_RE = re.compile(r"^\d{32}\.[0-9.e+-]+$")


class CheckpointSaverConformance(DeltaHistoryConformance):
    """The saver contract as tests; subclasses provide the ``saver`` fixture.

    DeltaChannel history (``get_delta_channel_history``) is in
    :class:`~graphruntime.testing._delta_conformance.DeltaHistoryConformance`.
    """

    @pytest.fixture
    def saver(self) -> BaseCheckpointSaver:
        raise NotImplementedError("subclass CheckpointSaverConformance and define a saver fixture")

    # -- put / get_tuple -------------------------------------------------------

    def test_get_tuple_of_unknown_thread_is_none(self, saver: BaseCheckpointSaver) -> None:
        assert saver.get_tuple(_config(_thread())) is None
        assert saver.get(_config(_thread())) is None

    def test_put_returns_config_of_stored_checkpoint(self, saver: BaseCheckpointSaver) -> None:
        thread = _thread()
        saved, checkpoint = _save(saver, _config(thread), {"a": 1})
        assert saved == {
            "configurable": {
                "thread_id": thread,
                "checkpoint_ns": "",
                "checkpoint_id": checkpoint["id"],
            }
        }

    def test_get_tuple_round_trips_checkpoint_fields(self, saver: BaseCheckpointSaver) -> None:
        thread = _thread()
        _, checkpoint = _save(saver, _config(thread), {"a": 1, "b": "x"})
        checkpoint["versions_seen"] = {"node": {"a": checkpoint["channel_versions"]["a"]}}
        saver.put(_config(thread), checkpoint, {"source": "input", "step": -1}, {})
        loaded = saver.get(_config(thread))
        assert loaded is not None
        for key in ("v", "id", "ts", "channel_values", "channel_versions", "versions_seen"):
            assert loaded[key] == checkpoint[key], key
        assert loaded.get("updated_channels") == checkpoint["updated_channels"]

    def test_get_tuple_without_id_is_latest(self, saver: BaseCheckpointSaver) -> None:
        thread = _thread()
        c1, ck1 = _save(saver, _config(thread), {"a": 1}, step=-1)
        c2, ck2 = _save(saver, c1, {"a": 2}, prev=ck1, step=0)
        c3, _ = _save(saver, c2, {"a": 3}, prev=ck2, step=1)
        latest = saver.get_tuple(_config(thread))
        assert latest is not None
        assert latest.config == c3
        assert latest.checkpoint["channel_values"] == {"a": 3}

    def test_get_tuple_by_id(self, saver: BaseCheckpointSaver) -> None:
        thread = _thread()
        c1, ck1 = _save(saver, _config(thread), {"a": 1}, step=-1)
        _save(saver, c1, {"a": 2}, prev=ck1, step=0)
        found = saver.get_tuple(c1)
        assert found is not None
        assert found.config == c1
        assert found.checkpoint["id"] == ck1["id"]
        assert found.checkpoint["channel_values"] == {"a": 1}
        assert saver.get_tuple(_config(thread, checkpoint_id=str(uuid6()))) is None

    def test_parent_config(self, saver: BaseCheckpointSaver) -> None:
        thread = _thread()
        c1, ck1 = _save(saver, _config(thread), {"a": 1})
        c2, _ = _save(saver, c1, {"a": 2}, prev=ck1, step=0)
        first, second = saver.get_tuple(c1), saver.get_tuple(c2)
        assert first is not None
        assert second is not None
        assert first.parent_config is None
        assert second.parent_config == c1

    def test_unchanged_channels_carry_over(self, saver: BaseCheckpointSaver) -> None:
        thread = _thread()
        c1, ck1 = _save(saver, _config(thread), {"a": [1], "b": {"k": "v"}, "c": 0})
        c2, _ = _save(saver, c1, {"a": [1, 2]}, prev=ck1, step=0, cleared=["c"])
        second, first = saver.get_tuple(c2), saver.get_tuple(c1)
        assert second is not None
        assert first is not None
        assert second.checkpoint["channel_values"] == {"a": [1, 2], "b": {"k": "v"}}
        assert "c" in second.checkpoint["channel_versions"]
        assert first.checkpoint["channel_values"] == {"a": [1], "b": {"k": "v"}, "c": 0}

    def test_namespaces_are_isolated(self, saver: BaseCheckpointSaver) -> None:
        thread = _thread()
        root, _ = _save(saver, _config(thread), {"a": "root"})
        child, _ = _save(saver, _config(thread, "sub:1"), {"a": "child"})
        got_root = saver.get_tuple(_config(thread))
        got_child = saver.get_tuple(_config(thread, "sub:1"))
        assert got_root is not None
        assert got_child is not None
        assert got_root.config == root
        assert got_child.config == child
        assert got_child.checkpoint["channel_values"] == {"a": "child"}
        assert saver.get_tuple(_config(thread, "other:2")) is None

    def test_metadata_round_trips_with_custom_keys(self, saver: BaseCheckpointSaver) -> None:
        thread = _thread()
        meta = {"source": "update", "step": 3, "parents": {"": "p"}, "user": "ann", "n": 1.5}
        saved, _ = _save(saver, _config(thread), {}, step=3, metadata=meta)
        found = saver.get_tuple(saved)
        assert found is not None
        assert dict(found.metadata) == meta

    # -- list --------------------------------------------------------------------

    def test_list_is_newest_first(self, saver: BaseCheckpointSaver) -> None:
        thread = _thread()
        configs = []
        config, prev = _config(thread), None
        for step in range(-1, 4):
            config, prev = _save(saver, config, {"a": step}, prev=prev, step=step)
            configs.append(config)
        listed = list(saver.list(_config(thread)))
        assert [t.config for t in listed] == configs[::-1]
        assert [t.checkpoint["channel_values"]["a"] for t in listed] == [3, 2, 1, 0, -1]
        assert listed[0].parent_config == configs[-2]

    def test_list_filters_on_metadata(self, saver: BaseCheckpointSaver) -> None:
        thread = _thread()
        c1, ck1 = _save(saver, _config(thread), {}, metadata={"source": "input", "user": "a"})
        c2, ck2 = _save(saver, c1, {}, prev=ck1, step=0, metadata={"user": "b"})
        _, ck3 = _save(saver, c2, {}, prev=ck2, step=1, metadata={"user": "a"})
        listed = saver.list(_config(thread), filter={"user": "a"})
        assert _ids(listed) == [ck3["id"], ck1["id"]]
        assert _ids(saver.list(_config(thread), filter={"user": "a", "step": 1})) == [ck3["id"]]
        assert _ids(saver.list(_config(thread), filter={"source": "input"})) == [ck1["id"]]
        assert list(saver.list(_config(thread), filter={"user": "nobody"})) == []

    def test_list_before_and_limit(self, saver: BaseCheckpointSaver) -> None:
        thread = _thread()
        config, prev = _config(thread), None
        ids = []
        for step in range(-1, 4):
            config, prev = _save(saver, config, {}, prev=prev, step=step)
            ids.append(prev["id"])
        before = _config(thread, checkpoint_id=ids[3])
        assert _ids(saver.list(_config(thread), before=before)) == ids[2::-1]
        assert _ids(saver.list(_config(thread), limit=2)) == [ids[4], ids[3]]
        assert _ids(saver.list(_config(thread), before=before, limit=1)) == [ids[2]]
        assert _ids(saver.list(_config(thread), limit=0)) == []

    def test_list_with_checkpoint_id_yields_that_one(self, saver: BaseCheckpointSaver) -> None:
        thread = _thread()
        c1, ck1 = _save(saver, _config(thread), {"a": 1})
        _save(saver, c1, {"a": 2}, prev=ck1, step=0)
        assert _ids(saver.list(c1)) == [ck1["id"]]

    def test_list_without_config_spans_threads(self, saver: BaseCheckpointSaver) -> None:
        t1, t2 = _thread(), _thread()
        a, _ = _save(saver, _config(t1), {"x": 1})
        b, _ = _save(saver, _config(t2), {"x": 2})
        mine = [t for t in saver.list(None) if t.config["configurable"]["thread_id"] in (t1, t2)]
        assert [t.config for t in mine] == [b, a]
        marker = str(uuid.uuid4())
        c, _ = _save(saver, _config(t2, "ns:1"), {}, metadata={"marker": marker})
        assert [t.config for t in saver.list(None, filter={"marker": marker})] == [c]

    def test_list_filters_namespace_only_if_given(self, saver: BaseCheckpointSaver) -> None:
        thread = _thread()
        root, _ = _save(saver, _config(thread), {})
        child, _ = _save(saver, _config(thread, "sub:1"), {})
        all_ns = saver.list({"configurable": {"thread_id": thread}})
        assert {t.config["configurable"]["checkpoint_id"] for t in all_ns} == {
            root["configurable"]["checkpoint_id"],
            child["configurable"]["checkpoint_id"],
        }
        assert [t.config for t in saver.list(_config(thread, "sub:1"))] == [child]
        assert [t.config for t in saver.list(_config(thread, ""))] == [root]

    # -- put_writes --------------------------------------------------------------

    def test_put_writes_first_write_wins(self, saver: BaseCheckpointSaver) -> None:
        saved, _ = _save(saver, _config(_thread()), {})
        saver.put_writes(saved, [("a", 1), ("b", 2)], task_id="t1", task_path="p")
        saver.put_writes(saved, [("a", 10), ("b", 20)], task_id="t1", task_path="p")
        assert _writes(saver.get_tuple(saved)) == [("t1", "a", 1), ("t1", "b", 2)]

    def test_put_writes_control_writes_are_replaced(self, saver: BaseCheckpointSaver) -> None:
        saved, _ = _save(saver, _config(_thread()), {})
        saver.put_writes(saved, [(INTERRUPT, "first")], task_id="t1")
        saver.put_writes(saved, [(INTERRUPT, "second"), (RESUME, ["yes"])], task_id="t1")
        assert sorted(_writes(saver.get_tuple(saved))) == [
            ("t1", INTERRUPT, "second"),
            ("t1", RESUME, ["yes"]),
        ]

    def test_put_writes_mixed_batch_is_insert_only(self, saver: BaseCheckpointSaver) -> None:
        saved, _ = _save(saver, _config(_thread()), {})
        saver.put_writes(saved, [("a", 1), (ERROR, "ValueError('x')")], task_id="t1")
        saver.put_writes(saved, [("a", 2), (ERROR, "ValueError('y')")], task_id="t1")
        assert sorted(_writes(saver.get_tuple(saved))) == [
            ("t1", ERROR, "ValueError('x')"),
            ("t1", "a", 1),
        ]

    def test_pending_writes_keep_insertion_order(self, saver: BaseCheckpointSaver) -> None:
        saved, _ = _save(saver, _config(_thread()), {})
        saver.put_writes(saved, [("x", 1), ("y", 2), ("x", 3)], task_id="t2")
        saver.put_writes(saved, [("z", 4)], task_id="t1")
        assert _writes(saver.get_tuple(saved)) == [
            ("t2", "x", 1),
            ("t2", "y", 2),
            ("t2", "x", 3),
            ("t1", "z", 4),
        ]

    def test_writes_are_isolated_per_checkpoint(self, saver: BaseCheckpointSaver) -> None:
        thread = _thread()
        c1, ck1 = _save(saver, _config(thread), {})
        c2, _ = _save(saver, c1, {}, prev=ck1, step=0)
        saver.put_writes(c1, [("a", "one")], task_id="t")
        saver.put_writes(c2, [("a", "two")], task_id="t")
        other, _ = _save(saver, _config(thread, "sub:1"), {})
        assert _writes(saver.get_tuple(c1)) == [("t", "a", "one")]
        assert _writes(saver.get_tuple(c2)) == [("t", "a", "two")]
        assert _writes(saver.get_tuple(other)) == []
        listed = {t.checkpoint["id"]: t.pending_writes for t in saver.list(_config(thread, ""))}
        assert listed[ck1["id"]] == [("t", "a", "one")]

    def test_concurrent_put_writes_of_one_task_give_one_row_set(
        self, saver: BaseCheckpointSaver
    ) -> None:
        saved, _ = _save(saver, _config(_thread()), {})
        n = 8
        barrier = threading.Barrier(n)
        errors: list[BaseException] = []

        def deliver(i: int) -> None:
            try:
                barrier.wait()
                saver.put_writes(saved, [("a", i), ("b", i)], task_id="t", task_path="p")
            except BaseException as exc:  # noqa: BLE001 - reported by the assert below
                errors.append(exc)

        threads = [threading.Thread(target=deliver, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        writes = _writes(saver.get_tuple(saved))
        assert [w[1] for w in writes] == ["a", "b"]
        assert writes[0][2] == writes[1][2]

    # -- versions, deletion ------------------------------------------------------

    def test_get_next_version_is_monotonic_and_formatted(self, saver: BaseCheckpointSaver) -> None:
        versions = [saver.get_next_version(None)]
        for _ in range(12):
            versions.append(saver.get_next_version(versions[-1]))
        assert all(_VERSION_RE.match(v) for v in versions), versions
        assert versions[0].startswith("0" * 31 + "1.")
        assert versions == sorted(versions)
        assert len(set(versions)) == len(versions)
        assert saver.get_next_version(7).startswith(f"{8:032}.")

    def test_delete_thread_removes_every_namespace(self, saver: BaseCheckpointSaver) -> None:
        thread, other = _thread(), _thread()
        root, root_checkpoint = _save(saver, _config(thread), {"a": 1})
        _save(saver, _config(thread, "sub:1"), {"a": 2})
        saver.put_writes(root, [("a", 1)], task_id="t")
        keep, _ = _save(saver, _config(other), {"a": 3})
        saver.put_writes(keep, [("a", 1)], task_id="t")
        saver.delete_thread(thread)
        assert saver.get_tuple(_config(thread)) is None
        assert saver.get_tuple(_config(thread, "sub:1")) is None
        assert list(saver.list({"configurable": {"thread_id": thread}})) == []
        kept = saver.get_tuple(keep)
        assert kept is not None
        assert kept.checkpoint["channel_values"] == {"a": 3}
        assert _writes(kept) == [("t", "a", 1)]
        # Re-saving a deleted checkpoint must not resurrect its writes.
        saver.put(_config(thread), root_checkpoint, {}, root_checkpoint["channel_versions"])
        assert _writes(saver.get_tuple(root)) == []

    # -- values -------------------------------------------------------------------

    def test_rich_values_round_trip(self, saver: BaseCheckpointSaver) -> None:
        model = ConformanceModel(
            name="m", inner=ConformanceInner(when=datetime(2024, 5, 1, 12, tzinfo=UTC), tags=("t",))
        )
        record = ConformanceRecord(uuid.uuid4(), Decimal("1.10"), ConformanceColor.BLUE, model)
        record.derived = 7
        values: dict[str, Any] = {
            "model": model,
            "record": record,
            "when": datetime(2024, 1, 2, 3, 4, 5, 6),
            "day": date(2024, 2, 29),
            "span": timedelta(days=1, microseconds=5),
            "sends": [Send("node", {"k": (1, 2)}), Send("other", model)],
            "interrupts": (Interrupt(value={"q": "?"}, id="abc"),),
            "mixed": {1: frozenset({"a"}), "__gr__": {"s": {1, 2}}, "b": b"\x00\xff"},
            "floats": [1.5, float("inf"), -0.0],
            "cmd": Command(resume="yes", goto=Send("n", 1)),
        }
        saved, _ = _save(saver, _config(_thread()), values)
        saver.put_writes(saved, [(INTERRUPT, values["interrupts"]), ("m", model)], task_id="t")
        found = saver.get_tuple(saved)
        assert found is not None
        loaded = found.checkpoint["channel_values"]
        assert loaded == values
        assert {k: type(v) for k, v in loaded.items()} == {k: type(v) for k, v in values.items()}
        assert type(loaded["model"].inner.when) is datetime
        assert loaded["model"].model_fields_set == model.model_fields_set
        assert loaded["record"].derived == 7
        assert loaded["record"].color is ConformanceColor.BLUE
        assert _writes(found) == [("t", INTERRUPT, values["interrupts"]), ("t", "m", model)]

    def test_error_write_is_read_back_as_repr(self, saver: BaseCheckpointSaver) -> None:
        saved, _ = _save(saver, _config(_thread()), {})
        saver.put_writes(saved, [(ERROR, ValueError("boom"))], task_id="t")
        assert _writes(saver.get_tuple(saved)) == [("t", ERROR, "ValueError('boom')")]

    def test_stored_values_are_not_aliased(self, saver: BaseCheckpointSaver) -> None:
        thread = _thread()
        value: dict[str, Any] = {"items": [1, 2]}
        meta: dict[str, Any] = {"tags": ["x"]}
        saved, checkpoint = _save(saver, _config(thread), {"a": value}, metadata=meta)
        written: list[int] = [1]
        saver.put_writes(saved, [("w", written)], task_id="t")
        value["items"].append(3)
        checkpoint["channel_values"]["a"] = "changed"
        meta["tags"].append("y")
        written.append(2)
        first = saver.get_tuple(saved)
        assert first is not None
        assert first.checkpoint["channel_values"]["a"] == {"items": [1, 2]}
        assert first.metadata["tags"] == ["x"]  # type: ignore[typeddict-item]
        assert _writes(first) == [("t", "w", [1])]
        first.checkpoint["channel_values"]["a"]["items"].clear()
        _writes(first)[0][2].clear()
        second = saver.get_tuple(saved)
        assert second is not None
        assert second.checkpoint["channel_values"]["a"] == {"items": [1, 2]}
        assert _writes(second) == [("t", "w", [1])]

    def test_large_value_round_trips(self, saver: BaseCheckpointSaver) -> None:
        big = {"text": "é" * 2_000_000, "numbers": list(range(300_000)), "blob": bytes(1_000_000)}
        saved, _ = _save(saver, _config(_thread()), {"big": big})
        saver.put_writes(saved, [("big", big)], task_id="t")
        found = saver.get_tuple(saved)
        assert found is not None
        assert found.checkpoint["channel_values"]["big"] == big
        assert _writes(found) == [("t", "big", big)]

    # -- async twins ------------------------------------------------------------

    def test_async_twins_match_sync(self, saver: BaseCheckpointSaver) -> None:
        thread = _thread()

        async def scenario() -> None:
            checkpoint = empty_checkpoint()
            version = saver.get_next_version(None)
            checkpoint["channel_values"] = {"a": 1}
            checkpoint["channel_versions"] = {"a": version}
            meta: CheckpointMetadata = {"source": "input", "step": -1, "parents": {}}
            saved = await saver.aput(_config(thread), checkpoint, meta, {"a": version})
            await saver.aput_writes(saved, [("a", 2)], task_id="t")
            found = await saver.aget_tuple(saved)
            assert found is not None
            assert found.pending_writes == [("t", "a", 2)]
            got = await saver.aget(_config(thread))
            assert got is not None
            assert got["channel_values"] == {"a": 1}
            assert [t.config async for t in saver.alist(_config(thread))] == [saved]
            await saver.adelete_thread(thread)
            assert await saver.aget_tuple(_config(thread)) is None

        asyncio.run(scenario())


class ClusterSaverConformance(CheckpointSaverConformance):
    """The contract tests plus :class:`~graphruntime.checkpoint.cluster.ClusterSaver`'s."""

    def test_get_task_tuple_keeps_only_the_named_tasks_and_the_null_task(
        self, saver: ClusterSaver
    ) -> None:
        saved, _ = _save(saver, _config(_thread()), {"a": 1})
        task_a, task_b = str(uuid.uuid4()), "not-a-uuid"
        saver.put_writes(saved, [("x", 1)], task_id=task_a)
        saver.put_writes(saved, [(RESUME, ["yes"])], task_id=NULL_TASK_ID)
        saver.put_writes(saved, [("x", 2), ("y", 3)], task_id=task_b)
        full = saver.get_tuple(saved)
        only_b = saver.get_task_tuple(saved, [task_b])
        assert only_b is not None
        assert full is not None
        assert only_b.checkpoint == full.checkpoint
        assert only_b.metadata == full.metadata
        assert _writes(only_b) == [
            (NULL_TASK_ID, RESUME, ["yes"]),
            (task_b, "x", 2),
            (task_b, "y", 3),
        ]
        assert _writes(saver.get_task_tuple(saved, [task_a, "unknown"])) == [
            (task_a, "x", 1),
            (NULL_TASK_ID, RESUME, ["yes"]),
        ]
        assert saver.get_task_tuple(_config(_thread()), [task_a]) is None

    def test_fenced_put_refuses_a_stale_parent(self, saver: ClusterSaver) -> None:
        thread = _thread()
        fenced = saver.fenced()
        first, cp1 = _save(fenced, _config(thread), {"a": 1})
        _, cp2 = _save(fenced, first, {"a": 2}, prev=cp1, step=0)
        with pytest.raises(CheckpointConflict):
            _save(fenced, first, {"a": 3}, prev=cp1, step=0)  # parent is no longer the head
        with pytest.raises(CheckpointConflict):
            _save(fenced, _config(thread), {"a": 4})  # "new thread", but it has checkpoints
        latest = saver.get_tuple(_config(thread))
        assert latest is not None
        assert latest.checkpoint["id"] == cp2["id"]
        assert latest.checkpoint["channel_values"] == {"a": 2}

    def test_fenced_put_retry_of_the_winner_succeeds(self, saver: ClusterSaver) -> None:
        thread = _thread()
        fenced = saver.fenced()
        first, cp1 = _save(fenced, _config(thread), {"a": 1})
        checkpoint = copy_checkpoint(cp1)
        checkpoint["id"] = str(uuid6(clock_seq=0))
        fenced.put(first, checkpoint, {"step": 0}, {})
        fenced.put(first, checkpoint, {"step": 0}, {})  # the same put again: a retry
        latest = saver.get_tuple(_config(thread))
        assert latest is not None
        assert latest.checkpoint["id"] == checkpoint["id"]

    def test_plain_puts_may_fork(self, saver: ClusterSaver) -> None:
        thread = _thread()
        first, cp1 = _save(saver, _config(thread), {"a": 1})
        _save(saver, first, {"a": 2}, prev=cp1, step=0)
        forked, _ = _save(saver, first, {"a": 3}, prev=cp1, step=0)  # not fenced: a fork
        latest = saver.get_tuple(_config(thread))
        assert latest is not None
        assert latest.config == forked

    def test_concurrent_fenced_puts_have_one_winner(self, saver: ClusterSaver) -> None:
        thread = _thread()
        fenced = saver.fenced()
        first, cp1 = _save(fenced, _config(thread), {"a": 1})
        outcomes: list[str] = []
        barrier = threading.Barrier(4)

        def contend(value: int) -> None:
            barrier.wait(timeout=10)
            try:
                _save(fenced, first, {"a": value}, prev=cp1, step=0)
            except CheckpointConflict:
                outcomes.append("conflict")
            else:
                outcomes.append("stored")

        threads = [threading.Thread(target=contend, args=(v,)) for v in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert sorted(outcomes) == ["conflict", "conflict", "conflict", "stored"]
