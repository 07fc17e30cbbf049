"""RunSaves: where a run's saver requests go on the workers (held, then one round trip)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphruntime.checkpoint import InMemorySaver, WriteBatch, empty_checkpoint
from graphruntime.config import RunnableConfig
from graphruntime.pregel.driver import PutCheckpoint, PutWrites
from tests.unit.workers.graphs import Calls, chain
from workers._saves import RunSaves
from workers.store import InMemoryRunStore
from workers.testing import InlineCluster


class Counting(InMemorySaver):
    """An in-memory saver that counts the calls made to it from outside (one round trip
    each on Postgres); the ones it makes of itself are not counted."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, int]] = []
        self._depth = 0

    def _count(self, name: str, n: int, call: Any) -> Any:
        if self._depth == 0:
            self.calls.append((name, n))
        self._depth += 1
        try:
            return call()
        finally:
            self._depth -= 1

    def put_with_writes(self, batch: WriteBatch, *args: Any) -> RunnableConfig:
        saved: RunnableConfig = self._count(
            "put_with_writes",
            len(batch),
            lambda: super(Counting, self).put_with_writes(batch, *args),
        )
        return saved

    def put_writes_many(self, batch: WriteBatch) -> None:
        self._count(
            "put_writes_many", len(batch), lambda: super(Counting, self).put_writes_many(batch)
        )

    def put_writes(self, *args: Any, **kwargs: Any) -> None:
        self._count("put_writes", 1, lambda: super(Counting, self).put_writes(*args, **kwargs))


def _config(checkpoint_id: str | None = None) -> RunnableConfig:
    conf: dict[str, Any] = {"thread_id": "t", "checkpoint_ns": ""}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def test_writes_wait_for_the_next_put_and_go_with_it() -> None:
    saver = Counting()
    saves = RunSaves(saver)
    first = empty_checkpoint()
    saves.perform(saver, [PutCheckpoint(_config(), first, {"step": -1}, {})])
    writes: Sequence[PutWrites] = [
        PutWrites(_config(first["id"]), [("log", ["a"])], "task-a", "~a"),
        PutWrites(_config(first["id"]), [("log", ["b"])], "task-b", "~b"),
    ]
    saves.perform(saver, writes)
    assert saver.calls == []  # nothing stored for the writes yet
    second = empty_checkpoint()
    saves.perform(saver, [PutCheckpoint(_config(first["id"]), second, {"step": 0}, {})])
    assert saver.calls == [("put_with_writes", 2)]  # the step's writes ride with its put
    saved = saver.get_tuple(_config(first["id"]))
    assert saved is not None
    assert sorted(w[0] for w in saved.pending_writes or []) == ["task-a", "task-b"]


def test_a_jobs_writes_are_stored_together_as_they_were_made() -> None:
    saver = Counting()
    saver.put(_config(), empty_checkpoint(), {"step": -1}, {})
    head = saver.get_tuple(_config())
    assert head is not None
    saves = RunSaves(saver)
    value = ["a"]
    saves.perform(saver, [PutWrites(head.config, [("log", value)], "task-a", "~a")])
    value.append("changed later")  # a later task must not change what this one wrote
    saves.perform(saver, [PutWrites(head.config, [("log", ["b"])], "task-b", "~b")])
    saves.flush()
    assert saver.calls == [("put_writes_many", 2)]
    saved = saver.get_tuple(head.config)
    assert saved is not None
    assert [(t, v) for t, _, v in saved.pending_writes or []] == [
        ("task-a", ["a"]),
        ("task-b", ["b"]),
    ]


def test_requests_for_another_saver_are_performed_at_once() -> None:
    mine, theirs = Counting(), Counting()
    saves = RunSaves(mine)
    saves.perform(theirs, [PutCheckpoint(_config(), empty_checkpoint(), {"step": -1}, {})])
    assert theirs.get_tuple(_config()) is not None
    assert mine.calls == []


def test_a_run_on_the_workers_stores_each_step_with_its_writes_in_one_call() -> None:
    saver: Counting | None = None

    def stores(serde: Any) -> Any:
        nonlocal saver
        saver = Counting()
        saver.serde = serde
        return InMemoryRunStore(serde), saver

    cluster = InlineCluster({"chain": chain(Calls(), n=3)}, stores=stores)
    cluster.run("chain", {"log": []}, {"configurable": {"thread_id": "t"}})
    assert saver is not None
    # no task's writes were stored on their own: each step's went with the checkpoint
    # after it (the input's checkpoint, then __start__, n0, n1, n2, one write each)
    assert saver.calls == [("put_with_writes", 0)] + [("put_with_writes", 1)] * 4
