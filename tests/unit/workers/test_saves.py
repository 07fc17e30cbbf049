"""RunSaves: where a run's saver requests go on the workers (held, then one round trip)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from graphruntime.checkpoint import InMemorySaver, empty_checkpoint
from graphruntime.config import RunnableConfig
from graphruntime.pregel.driver import PutCheckpoint, PutWrites
from tests.unit.workers.block_saver import BlockSaver
from tests.unit.workers.graphs import Calls, chain
from workers import _saves
from workers._saves import RunSaves
from workers.store import InMemoryRunStore
from workers.testing import InlineCluster


def _config(checkpoint_id: str | None = None) -> RunnableConfig:
    conf: dict[str, Any] = {"thread_id": "t", "checkpoint_ns": ""}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def test_writes_wait_for_the_next_put_and_go_with_it() -> None:
    saver = BlockSaver()
    saves = RunSaves(saver)
    first = empty_checkpoint()
    saves.perform(saves.saver, [PutCheckpoint(_config(), first, {"step": -1}, {})])
    assert saver.blocks == [["t"]]
    writes: Sequence[PutWrites] = [
        PutWrites(_config(first["id"]), [("log", ["a"])], "task-a", "~a"),
        PutWrites(_config(first["id"]), [("log", ["b"])], "task-b", "~b"),
    ]
    saves.perform(saves.saver, writes)
    assert len(saver.blocks) == 1  # nothing stored for the writes yet
    second = empty_checkpoint()
    saves.perform(saves.saver, [PutCheckpoint(_config(first["id"]), second, {"step": 0}, {})])
    assert saver.blocks[1] == ["t", "t", "t"]  # the step's writes ride with its put
    saved = saver.get_tuple(_config(first["id"]))
    assert saved is not None
    assert sorted(w[0] for w in saved.pending_writes or []) == ["task-a", "task-b"]


def test_a_jobs_writes_are_stored_together_as_they_were_made() -> None:
    saver = BlockSaver()
    saver.put(_config(), empty_checkpoint(), {"step": -1}, {})
    head = saver.get_tuple(_config())
    assert head is not None
    saves = RunSaves(saver)
    value = ["a"]
    saves.perform(saves.saver, [PutWrites(head.config, [("log", value)], "task-a", "~a")])
    value.append("changed later")  # a later task must not change what this one wrote
    saves.perform(saves.saver, [PutWrites(head.config, [("log", ["b"])], "task-b", "~b")])
    assert saver.blocks == []
    saves.flush()
    assert saver.blocks == [["t", "t"]]
    saved = saver.get_tuple(head.config)
    assert saved is not None
    assert [(t, v) for t, _, v in saved.pending_writes or []] == [
        ("task-a", ["a"]),
        ("task-b", ["b"]),
    ]


def test_requests_for_another_saver_are_performed_at_once() -> None:
    mine, theirs = BlockSaver(), InMemorySaver()
    saves = RunSaves(mine)
    saves.perform(theirs, [PutCheckpoint(_config(), empty_checkpoint(), {"step": -1}, {})])
    assert theirs.get_tuple(_config()) is not None
    assert mine.blocks == []


def test_a_run_on_the_workers_stores_each_step_with_its_writes_in_one_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a node slower than STORE_WITHIN (a loaded machine) has the watchdog store earlier
    monkeypatch.setattr(_saves, "STORE_WITHIN", 600.0)
    saver: BlockSaver | None = None

    def stores(serde: Any) -> Any:
        nonlocal saver
        saver = BlockSaver(serde=serde)
        return InMemoryRunStore(serde), saver

    cluster = InlineCluster({"chain": chain(Calls(), n=3)}, stores=stores)
    cluster.run("chain", {"log": []}, {"configurable": {"thread_id": "t"}})
    assert saver is not None
    # no task's writes were stored on their own, nor a checkpoint: the round's requests
    # (the input's checkpoint, then __start__, n0, n1, n2: a write and a put each) went
    # in one block when the run ended
    assert saver.blocks == [["t"] * 9]
