"""DeltaChannel: the channel alone, and threads whose DeltaChannel state is rebuilt from history.

Each graph keeps the same data in a DeltaChannel (``log``) and in a plain reducer
(``plain``): whatever a thread went through, every checkpoint must read back the
same value for both.
"""

from __future__ import annotations

import itertools
import operator
import uuid
from collections.abc import Sequence
from typing import Annotated, Any, NotRequired, TypedDict

import pytest

from graphruntime._internal._typing import MISSING
from graphruntime.channels import DeltaChannel
from graphruntime.checkpoint import DeltaSnapshot, InMemorySaver, JsonSerializer
from graphruntime.config import RunnableConfig
from graphruntime.errors import CheckpointError, InvalidUpdateError
from graphruntime.graph import END, START, StateGraph
from graphruntime.pregel import _delta
from graphruntime.types import Command, Overwrite, Send, interrupt
from tests.unit.runtime.delta_graphs import extend, input_graph


class State(TypedDict, total=False):
    log: Annotated[list[str], DeltaChannel(extend, snapshot_frequency=3)]
    plain: Annotated[list[str], operator.add]


def _both(*items: str) -> dict[str, list[str]]:
    return {"log": list(items), "plain": list(items)}


def _thread() -> RunnableConfig:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _assert_history_agrees(graph: Any, config: RunnableConfig) -> None:
    for state in graph.get_state_history(config):
        assert state.values.get("log", []) == state.values.get("plain", []), state.config


# -- the channel ----------------------------------------------------------------------


def test_a_step_folds_its_writes_in_one_reducer_call() -> None:
    calls: list[list[Any]] = []

    def reducer(current: list[Any], writes: Sequence[Any]) -> list[Any]:
        calls.append(list(writes))
        return extend(current, writes)

    channel = DeltaChannel(reducer).from_checkpoint(MISSING)
    assert channel.update([["a"], ["b"]])
    assert not channel.update([])
    assert channel.get() == ["a", "b"]
    assert calls == [[["a"], ["b"]]]
    assert channel.checkpoint() is MISSING  # the runtime stores snapshots


def test_an_overwrite_replaces_the_value_and_two_in_a_step_are_refused() -> None:
    channel = DeltaChannel(extend).from_checkpoint(DeltaSnapshot(["old"]))
    channel.update([["x"], Overwrite(["new"])])
    assert channel.get() == ["new"]
    with pytest.raises(InvalidUpdateError):
        channel.update([Overwrite([]), Overwrite([])])


def test_replay_starts_over_at_the_last_overwrite() -> None:
    channel = DeltaChannel(extend).from_checkpoint(["seed"])
    channel.replay_writes(
        [("t1", "log", ["a"]), ("t2", "log", Overwrite(["b"])), ("t3", "log", ["c"])]
    )
    assert channel.get() == ["b", "c"]


def test_copies_do_not_share_the_value() -> None:
    channel = DeltaChannel(extend).from_checkpoint(DeltaSnapshot(["a"]))
    copy = channel.copy()
    copy.update([["b"]])
    assert channel.get() == ["a"]
    assert copy.get() == ["a", "b"]


def _merge(current: dict[str, int], writes: Sequence[dict[str, int]]) -> dict[str, int]:
    return {**current, **{k: v for w in writes for k, v in w.items()}}


class Files(TypedDict):
    files: Annotated[NotRequired[dict[str, int]], DeltaChannel(_merge)]


def test_the_annotation_gives_the_value_type() -> None:
    builder = StateGraph(Files).add_node("n", lambda s: {"files": {"a": 1}})
    graph = builder.add_edge(START, "n").compile(checkpointer=InMemorySaver())
    config = _thread()
    assert graph.invoke({"files": {"b": 2}}, config) == {"files": {"b": 2, "a": 1}}
    assert graph.get_state(config).values == {"files": {"b": 2, "a": 1}}


def test_snapshot_frequency_must_be_a_positive_int() -> None:
    with pytest.raises(ValueError, match="positive"):
        DeltaChannel(extend, snapshot_frequency=0)
    with pytest.raises(TypeError, match="positive int"):
        DeltaChannel(extend, snapshot_frequency=2.5)  # type: ignore[arg-type]


def test_a_snapshot_round_trips_through_the_strict_serializer() -> None:
    serde = JsonSerializer(strict=True)
    stored = serde.dumps_typed(DeltaSnapshot([("a", 1)]))
    assert serde.loads_typed(stored) == DeltaSnapshot([("a", 1)])


# -- threads ---------------------------------------------------------------------------


def _chain(saver: InMemorySaver, *names: str) -> Any:
    builder = StateGraph(State)
    for name in names:
        builder.add_node(name, lambda state, name=name: _both(name))
    builder.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        builder.add_edge(a, b)
    return builder.compile(checkpointer=saver)


def test_snapshots_follow_the_cadence_and_every_checkpoint_reads_back() -> None:
    saver = InMemorySaver()
    graph = _chain(saver, "a", "b")
    config = _thread()
    for i in range(4):
        graph.invoke(_both(f"in{i}"), config)

    stored = [saver.get_tuple(s.config) for s in graph.get_state_history(config)]
    snapshots = [
        t
        for t in stored
        if t and isinstance(t.checkpoint["channel_values"].get("log"), DeltaSnapshot)
    ]
    assert snapshots, "three updates make a snapshot"
    for t in stored:
        assert t is not None
        counters = t.metadata.get("counters_since_delta_snapshot", {})
        assert all(updates < 3 for updates, _ in counters.values()), counters
    _assert_history_agrees(graph, config)
    assert graph.get_state(config).values["log"] == graph.get_state(config).values["plain"]


def test_a_channel_untouched_for_too_long_still_snapshots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_delta, "DELTA_MAX_SUPERSTEPS_SINCE_SNAPSHOT", 4)

    class Quiet(TypedDict, total=False):
        log: Annotated[list[str], DeltaChannel(extend, snapshot_frequency=1000)]
        n: int

    builder = StateGraph(Quiet).add_node("count", lambda s: {"n": s.get("n", 0) + 1})
    builder = builder.add_edge(START, "count")
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    config = _thread()
    graph.invoke({"log": ["once"], "n": 0}, config)
    for _ in range(3):
        graph.invoke({"n": 0}, config)
    snapshots = [
        s
        for s in saver.list(config)
        if isinstance(s.checkpoint["channel_values"].get("log"), DeltaSnapshot)
    ]
    assert snapshots
    assert graph.get_state(config).values["log"] == ["once"]


def test_parallel_writes_replay_in_the_order_the_step_applied_them() -> None:
    builder = StateGraph(State)
    builder.add_conditional_edges(START, lambda s: [Send("w", str(i)) for i in range(8)])
    builder.add_node("w", lambda item: _both(item))
    builder.add_edge("w", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    config = _thread()
    live = graph.invoke({"log": [], "plain": []}, config)
    assert live["log"] == [str(i) for i in range(8)]
    assert graph.get_state(config).values == live
    _assert_history_agrees(graph, config)


def test_a_replay_of_an_old_checkpoint_leaves_the_other_branch_alone() -> None:
    graph = _chain(InMemorySaver(), "a", "b", "c")
    config = _thread()
    graph.invoke(_both("in"), config)
    head = graph.get_state(config)
    old = next(s for s in graph.get_state_history(config) if s.next == ("b",))

    graph.invoke(Command(update=_both("cmd")), old.config)

    assert graph.get_state(head.config).values == head.values
    replayed = graph.get_state(config).values
    assert replayed["log"] == replayed["plain"] == ["in", "a", "cmd", "b", "c"]
    _assert_history_agrees(graph, config)


def test_an_edit_of_an_old_checkpoint_leaves_the_other_branch_alone() -> None:
    graph = _chain(InMemorySaver(), "a", "b")
    config = _thread()
    graph.invoke(_both("in"), config)
    head = graph.get_state(config)
    old = next(s for s in graph.get_state_history(config) if s.next == ("b",))

    edited = graph.update_state(old.config, _both("edit"), as_node="a")

    assert graph.get_state(head.config).values == head.values
    values = graph.get_state(edited).values
    assert values["log"] == values["plain"] == ["in", "a", "edit"]
    graph.invoke(None, edited)
    _assert_history_agrees(graph, config)


def test_a_resume_keeps_the_finished_siblings_writes_once() -> None:
    def ask(state: State) -> dict[str, list[str]]:
        return _both(interrupt("ok?"))

    builder = StateGraph(State)
    builder.add_node("done", lambda s: _both("done"))
    builder.add_node("ask", ask)
    builder.add_edge(START, "done")
    builder.add_edge(START, "ask")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = _thread()
    graph.invoke(_both("in"), config)
    out = graph.invoke(Command(resume="yes"), config)
    # the step applies its tasks by name: ask's answer, then done's saved write
    assert out == _both("in", "yes", "done")
    assert graph.get_state(config).values == out
    _assert_history_agrees(graph, config)


def test_history_without_a_saver_is_refused() -> None:
    graph = _chain(InMemorySaver(), "a")
    config = _thread()
    graph.invoke(_both("in"), config)
    saved = graph.checkpointer.get_tuple(config)
    assert saved is not None
    with pytest.raises(CheckpointError, match="no checkpointer"):
        _delta.load_channels(graph.channel_specs, saved.checkpoint, saver=None, config=saved.config)


def test_a_run_input_to_a_delta_channel_reads_back_on_its_own_branch() -> None:
    saver = InMemorySaver()
    graph = input_graph(saver)
    config = _thread()
    assert graph.invoke(["a"], config) == {START: ["a"], "n": 1}
    older = graph.get_state(config).config
    assert graph.invoke(["b", "c"], config) == {START: ["a", "b", "c"], "n": 3}

    assert graph.invoke(["x"], older) == {START: ["a", "x"], "n": 2}  # a new branch
    values = [s.values for s in graph.get_state_history(config)]
    assert values[0] == {START: ["a", "x"], "n": 2}
    assert {START: ["a", "b", "c"], "n": 3} in values  # the other branch is intact
