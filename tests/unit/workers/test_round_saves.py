"""RoundSaves: the saver requests a coordinator round holds, stored together (fake saver)."""

from __future__ import annotations

import time

import pytest

from graphruntime.checkpoint import empty_checkpoint
from graphruntime.config import RunnableConfig
from graphruntime.errors import CheckpointConflict
from graphruntime.pregel.driver import PutCheckpoint, SaverRequest
from tests.unit.workers.block_saver import BlockSaver
from workers._saves import MAX_HELD, STORE_WITHIN, RoundSaves


def put(thread_id: str) -> SaverRequest:
    config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    return PutCheckpoint(config, empty_checkpoint(), {"step": -1}, {})


def test_one_store_takes_every_runs_requests_in_order() -> None:
    saver = BlockSaver()
    held = RoundSaves(saver)
    held.hold("run-a", False, [put("a")])
    held.hold("run-b", False, [put("b")])
    held.hold("run-a", False, [put("a")])
    assert saver.blocks == []
    held.store()
    held.store()  # nothing left: no round trip
    assert saver.blocks == [["a", "a", "b"]]
    assert held.error_of("run-a") is None
    assert len(list(saver.list({"configurable": {"thread_id": "a"}}))) == 2


def test_a_refused_run_keeps_its_error_and_cannot_hold_more() -> None:
    saver = BlockSaver()
    saver.verdict = lambda t: CheckpointConflict("moved") if t == "a" else None
    held = RoundSaves(saver)
    held.hold("run-a", True, [put("a")])
    held.hold("run-b", True, [put("b")])
    held.store()
    assert isinstance(held.error_of("run-a"), CheckpointConflict)
    assert held.error_of("run-b") is None
    assert saver.get_tuple({"configurable": {"thread_id": "b"}}) is not None
    assert saver.get_tuple({"configurable": {"thread_id": "a"}}) is None
    with pytest.raises(CheckpointConflict):  # the run must stop: later puts would be refused
        held.hold("run-a", True, [put("a")])
    held.hold("run-b", True, [put("b2")])
    held.store()
    assert saver.blocks[1] == ["b2"]


def test_a_failing_run_is_found_and_does_not_fail_the_others() -> None:
    saver = BlockSaver()
    saver.verdict = lambda t: ValueError("bad value (test)") if t == "a" else None
    held = RoundSaves(saver)
    held.hold("run-a", True, [put("a")])
    held.hold("run-b", True, [put("b")])
    held.store()
    assert isinstance(held.error_of("run-a"), ValueError)
    assert held.error_of("run-b") is None
    assert saver.blocks == [["a", "b"], ["a"], ["b"]]  # together, then each alone
    assert saver.get_tuple({"configurable": {"thread_id": "b"}}) is not None


def test_many_puts_are_stored_without_waiting_for_the_round() -> None:
    saver = BlockSaver()
    held = RoundSaves(saver)
    for i in range(MAX_HELD):
        held.hold("run-a", False, [put(f"s{i}")])
    assert len(saver.blocks) == 1
    assert len(saver.blocks[0]) == MAX_HELD


def test_a_slow_node_gets_what_is_held_stored_while_it_runs() -> None:
    saver = BlockSaver()
    held = RoundSaves(saver)
    held.hold("run-a", False, [put("a")])
    with held.storing_within():
        give_up = time.monotonic() + 5
        while not saver.blocks and time.monotonic() < give_up:
            time.sleep(STORE_WITHIN / 4)
    assert len(saver.blocks) == 1


def test_a_fast_node_leaves_the_requests_held() -> None:
    saver = BlockSaver()
    held = RoundSaves(saver)
    held.hold("run-a", False, [put("a")])
    with held.storing_within():
        pass
    time.sleep(3 * STORE_WITHIN)
    assert saver.blocks == []


def test_a_discarded_run_is_not_stored() -> None:
    saver = BlockSaver()
    held = RoundSaves(saver)
    held.hold("run-a", False, [put("a")])
    held.hold("run-b", False, [put("b")])
    held.discard("run-a")
    held.store()
    assert saver.blocks == [["b"]]


def test_an_outage_in_a_store_is_raised_by_the_next() -> None:
    from checkpoint_pg import CheckpointStoreUnavailable

    saver = BlockSaver()
    saver.verdict = lambda t: CheckpointStoreUnavailable("database down")
    held = RoundSaves(saver)
    held.hold("run-a", False, [put("a")])
    held._store_quietly()  # as the watchdog does
    with pytest.raises(CheckpointStoreUnavailable, match="database down"):
        held.store()
