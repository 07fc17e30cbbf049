"""HeldGroup: the saves a coordinator round holds, stored together (fake saver)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest

from graphruntime.checkpoint import HeldSave, InMemorySaver
from graphruntime.errors import CheckpointConflict
from workers._held_group import MAX_HELD, STORE_WITHIN, HeldGroup


class RecordingSaver(InMemorySaver):
    """Stores nothing; records each save_held call, refusing the runs named."""

    def __init__(self, refuse: Sequence[str] = ()) -> None:
        super().__init__()
        self.calls: list[list[list[str]]] = []
        self.refuse = set(refuse)

    def save_held(self, runs: Sequence[Sequence[HeldSave]]) -> list[Exception | None]:
        names = [[str(h.config) for h in run] for run in runs]
        self.calls.append(names)
        return [
            CheckpointConflict("moved") if any(n in self.refuse for n in run) else None
            for run in names
        ]


def held(name: str) -> HeldSave:
    return HeldSave({"configurable": {"thread_id": name}}, stored=False)


def name(h: HeldSave) -> str:
    return str(h.config)


def test_one_store_takes_every_runs_saves_in_order() -> None:
    saver = RecordingSaver()
    group = HeldGroup(saver)
    a1, a2, b1 = held("a1"), held("a2"), held("b1")
    group.hold("run-a", a1)
    group.hold("run-b", b1)
    group.hold("run-a", a2)
    group.store()
    group.store()  # nothing left: no round trip
    assert saver.calls == [[[name(a1), name(a2)], [name(b1)]]]
    assert group.error_of("run-a") is None


def test_a_refused_run_keeps_its_error_and_cannot_hold_more() -> None:
    a1 = held("a1")
    saver = RecordingSaver(refuse=[name(a1)])
    group = HeldGroup(saver)
    group.hold("run-a", a1)
    group.hold("run-b", held("b1"))
    group.store()
    assert isinstance(group.error_of("run-a"), CheckpointConflict)
    assert group.error_of("run-b") is None
    with pytest.raises(CheckpointConflict):  # the run must stop: later saves would be refused
        group.hold("run-a", held("a2"))
    group.hold("run-b", held("b2"))
    group.store()
    assert saver.calls[1] == [[name(held("b2"))]]


def test_many_saves_are_stored_without_waiting_for_the_round() -> None:
    saver = RecordingSaver()
    group = HeldGroup(saver)
    for i in range(MAX_HELD):
        group.hold("run-a", held(f"s{i}"))
    assert len(saver.calls) == 1
    assert len(saver.calls[0][0]) == MAX_HELD


def test_a_slow_node_gets_what_is_held_stored_while_it_runs() -> None:
    saver = RecordingSaver()
    group = HeldGroup(saver)
    group.hold("run-a", held("a1"))
    with group.storing_within():
        give_up = time.monotonic() + 5
        while not saver.calls and time.monotonic() < give_up:
            time.sleep(STORE_WITHIN / 4)
    assert len(saver.calls) == 1


def test_a_fast_node_leaves_the_saves_held() -> None:
    saver = RecordingSaver()
    group = HeldGroup(saver)
    group.hold("run-a", held("a1"))
    with group.storing_within():
        pass
    time.sleep(3 * STORE_WITHIN)
    assert saver.calls == []


def test_an_outage_in_a_store_is_raised_by_the_next() -> None:
    class Down(RecordingSaver):
        def save_held(self, runs: Sequence[Sequence[HeldSave]]) -> list[Exception | None]:
            raise ConnectionError("database down")

    group = HeldGroup(Down())
    group.hold("run-a", held("a1"))
    group._store_quietly()  # as the watchdog does
    with pytest.raises(ConnectionError, match="database down"):
        group.store()
