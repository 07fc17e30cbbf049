"""The superstep algorithm, part 2: applying a step's writes, routers' reads, scratchpads.

Every scenario runs on graphruntime's functions and, where LangGraph has the same function
(``apply_writes``, ``local_read``, ``_scratchpad``), on LangGraph's with LangGraph's
channels, and the observable results are compared.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Callable
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph import channels as lg_channels
from langgraph import types as lg_types
from langgraph.channels.last_value import LastValueAfterFinish as LgLastValueAfterFinish
from langgraph.channels.named_barrier_value import NamedBarrierValue as LgBarrier
from langgraph.errors import InvalidUpdateError as LgInvalidUpdateError
from langgraph.graph import START as LG_START
from langgraph.graph import StateGraph as LgStateGraph
from langgraph.pregel import _algo as lg_algo
from xxhash import xxh3_128_hexdigest

from graphruntime import channels
from graphruntime._internal._constants import (
    ERROR,
    INPUT,
    INTERRUPT,
    NO_WRITES,
    NULL_TASK_ID,
    PULL,
    PUSH,
    RESUME,
    RETURN,
)
from graphruntime._internal._interrupt import interrupt_id
from graphruntime._internal._scratchpad import Scratchpad
from graphruntime.checkpoint.base import Checkpoint, PendingWrite
from graphruntime.errors import InvalidUpdateError
from graphruntime.graph import START, StateGraph
from graphruntime.pregel._algo import (
    TaskWrites,
    apply_writes,
    increment,
    local_read,
    make_scratchpad,
    task_path_str,
)

CID = "1ef4f797-8335-6428-8001-8a1503f9b875"
BRANCH = "branch:to:n"
JOIN = "join:a+b:c"


def checkpoint(versions: dict[str, int] | None = None) -> Checkpoint:
    return {
        "v": 4,
        "id": CID,
        "ts": "2024-01-01T00:00:00+00:00",
        "channel_values": {},
        "channel_versions": dict(versions or {}),
        "versions_seen": {},
        "updated_channels": None,
    }


# Each channel of the fixture, built for graphruntime and for LangGraph.
SPECS: dict[str, tuple[Callable[[], channels.BaseChannel], Callable[[], Any]]] = {
    "items": (
        lambda: channels.BinaryOperatorAggregate(list, operator.add, key="items"),
        lambda: lg_channels.BinaryOperatorAggregate(list, operator.add),
    ),
    "x": (lambda: channels.LastValue(Any, key="x"), lambda: lg_channels.LastValue(Any)),
    BRANCH: (
        lambda: channels.EphemeralValue(Any, guard=False, key=BRANCH),
        lambda: lg_channels.EphemeralValue(Any, guard=False),
    ),
    JOIN: (
        lambda: channels.NamedBarrierValue(str, {"a", "b"}, key=JOIN),
        lambda: LgBarrier(str, {"a", "b"}),
    ),
    "deferred": (
        lambda: channels.LastValueAfterFinish(Any, key="deferred"),
        lambda: LgLastValueAfterFinish(Any),
    ),
}


def make_channels(oracle: bool, **values: list[Any]) -> dict[str, Any]:
    """Fresh channels (``oracle``: LangGraph's), each given ``values`` as one prior step."""
    out: dict[str, Any] = {}
    for name, (ours, theirs) in SPECS.items():
        ch = theirs() if oracle else ours()
        ch.key = name
        if name in values:
            ch.update(values[name])
        out[name] = ch
    return out


def snapshot(ck: Checkpoint, chans: dict[str, Any], updated: set[str]) -> dict[str, Any]:
    def value(ch: Any) -> Any:
        return ch.get() if ch.is_available() else "<empty>"

    return {
        "values": {k: value(ch) for k, ch in chans.items()},
        "versions": dict(ck["channel_versions"]),
        "seen": {k: dict(v) for k, v in ck["versions_seen"].items()},
        "updated": sorted(updated),
    }


def run_both(
    tasks: list[TaskWrites],
    versions: dict[str, int],
    values: dict[str, list[Any]] | None = None,
    *,
    get_next_version: Any = increment,
) -> dict[str, Any]:
    """apply_writes on graphruntime and on LangGraph; the results must agree.

    ``values``: what each channel holds before the step (written as one earlier step).
    BRANCH triggers node n and JOIN node c; the other channels trigger nothing.
    """
    t2n = {BRANCH: ["n"], JOIN: ["c"]}
    results = []
    for oracle in (False, True):
        ck = checkpoint(versions)
        chans = make_channels(oracle, **(values or {}))
        if oracle:
            lg_next = None if get_next_version is None else lg_algo.increment
            updated = lg_algo.apply_writes(ck, chans, tasks, lg_next, t2n)
        else:
            updated = apply_writes(ck, chans, tasks, get_next_version, t2n)
        results.append(snapshot(ck, chans, updated))
    ours, theirs = results
    assert ours == theirs
    return ours


def pull(name: str, *writes: tuple[str, Any], triggers: tuple[str, ...] = (BRANCH,)) -> TaskWrites:
    return TaskWrites(name, (PULL, name), triggers, list(writes))


def push(idx: int, *writes: tuple[str, Any]) -> TaskWrites:
    return TaskWrites("w", (PUSH, idx, False), (PUSH,), list(writes))


# --- apply_writes: order ---------------------------------------------------------------------


def test_writes_apply_in_task_path_order_whatever_the_input_order() -> None:
    tasks = [
        push(10, ("items", ["w10"])),
        pull("b", ("items", ["b1"]), ("items", ["b2"])),
        push(2, ("items", ["w2"])),
        pull("a", ("items", ["a"])),
    ]
    result = run_both(tasks, {BRANCH: 1, "items": 1})
    # PULL tasks by node name, then PUSH tasks by index (2 before 10); a task's own writes
    # in the order it made them.
    assert result["values"]["items"] == ["a", "b1", "b2", "w2", "w10"]


_task_specs = st.lists(
    st.one_of(
        st.tuples(st.just(PULL), st.sampled_from("abcdef")),
        st.tuples(st.just(PUSH), st.integers(min_value=0, max_value=30)),
    ),
    min_size=1,
    max_size=6,
    unique=True,
)


@settings(max_examples=80, deadline=None)
@given(specs=_task_specs, seed=st.randoms(use_true_random=False))
def test_apply_writes_is_independent_of_task_input_order(
    specs: list[tuple[str, Any]], seed: random.Random
) -> None:
    tasks = [
        pull(str(key), ("items", [f"{key}.0"]), ("items", [f"{key}.1"]))
        if kind == PULL
        else push(int(key), ("items", [f"{key}"]))
        for kind, key in specs
    ]
    shuffled = list(tasks)
    seed.shuffle(shuffled)
    result = run_both(shuffled, {BRANCH: 3, "items": 2})
    assert result == run_both(tasks, {BRANCH: 3, "items": 2})
    # A reducer with operator.add sees the concatenation in task-path order.
    in_order = sorted(tasks, key=lambda t: task_path_str(t.path))
    assert result["values"]["items"] == [v for t in in_order for _, w in t.writes for v in w]


# --- apply_writes: versions --------------------------------------------------------------------


def test_every_changed_channel_gets_the_same_next_version() -> None:
    tasks = [pull("a", ("items", [1]), ("x", "new"), ("ghost", 1), triggers=(BRANCH, "nope"))]
    result = run_both(
        tasks, {BRANCH: 4, "items": 2, "x": 7}, {"items": [[0]], "x": ["old"], BRANCH: [None]}
    )
    # next version = get_next_version(max of all versions) = 8; BRANCH is cleared (changed).
    assert result["versions"] == {BRANCH: 8, "items": 8, "x": 8}
    # versions_seen: the triggers' versions before the step; unknown triggers skipped.
    assert result["seen"] == {"a": {BRANCH: 4}}
    assert result["values"]["items"] == [0, 1]
    assert result["values"]["x"] == "new"
    assert result["updated"] == ["items", "x"]  # unavailable channels are not "updated"


def test_an_unchanged_channel_keeps_its_version() -> None:
    result = run_both(
        [pull("a", ("items", []))], {BRANCH: 1, "items": 1, "x": 1}, {"x": ["v"], BRANCH: [None]}
    )
    assert result["versions"] == {BRANCH: 2, "items": 2, "x": 1}
    assert result["values"]["x"] == "v"


def test_without_get_next_version_values_change_but_versions_do_not() -> None:
    result = run_both([pull("a", ("items", [1]))], {BRANCH: 1, "items": 1}, get_next_version=None)
    assert result["versions"] == {BRANCH: 1, "items": 1}
    assert result["values"]["items"] == [1]
    assert result["updated"] == []


def test_control_writes_and_unknown_channels_are_not_applied() -> None:
    writes = [(c, "v") for c in (INTERRUPT, RESUME, ERROR, NO_WRITES, PUSH, RETURN, "unknown")]
    result = run_both([pull("a", *writes)], {BRANCH: 1}, {BRANCH: [None]})
    assert result["versions"] == {BRANCH: 2}
    assert result["updated"] == []


# --- apply_writes: ephemeral channels, consume, finish --------------------------------------


def test_ephemeral_channels_are_cleared_by_a_real_step() -> None:
    result = run_both([pull("n", ("items", [1]))], {BRANCH: 2, "items": 1}, {BRANCH: [None]})
    assert result["values"][BRANCH] == "<empty>"
    assert result["versions"][BRANCH] == 3
    assert BRANCH not in result["updated"]


def test_input_only_writes_do_not_start_a_step() -> None:
    """Writes of a trigger-less task (input, update_state) leave ephemeral channels alone."""
    task = TaskWrites(INPUT, (), (), [("items", [1])])
    result = run_both([task], {BRANCH: 2, "items": 1}, {BRANCH: [None]})
    assert result["values"][BRANCH] is None  # still there
    assert result["versions"] == {BRANCH: 2, "items": 3}
    assert result["updated"] == ["items"]
    assert result["seen"] == {INPUT: {}}


def test_a_barrier_that_triggered_a_task_is_consumed() -> None:
    result = run_both([pull("c", ("items", [1]), triggers=(JOIN,))], {JOIN: 5}, {JOIN: ["a", "b"]})
    assert result["values"][JOIN] == "<empty>"
    assert result["versions"][JOIN] == 6
    assert JOIN not in result["updated"]
    assert result["seen"] == {"c": {JOIN: 5}}


def test_finish_is_called_when_no_updated_channel_triggers_a_node() -> None:
    versions = {BRANCH: 1, "deferred": 1, "items": 1}
    # items triggers nothing: the step would be the last, so deferred channels finish.
    done = run_both([pull("a", ("items", [1]))], versions, {"deferred": ["d"]})
    assert done["values"]["deferred"] == "d"
    assert done["versions"]["deferred"] == 2
    assert "deferred" in done["updated"]
    # BRANCH triggers node n: not the last step, deferred stays unfinished.
    busy = run_both([pull("a", (BRANCH, None))], versions, {"deferred": ["d"]})
    assert busy["values"]["deferred"] == "<empty>"
    assert busy["versions"]["deferred"] == 1
    # Input-only writes never finish anything.
    idle = run_both([TaskWrites(INPUT, (), (), [("items", [1])])], versions, {"deferred": ["d"]})
    assert idle["values"]["deferred"] == "<empty>"


def test_two_writes_to_a_last_value_in_one_step_fail_like_langgraph() -> None:
    tasks = [pull("a", ("x", 1)), pull("b", ("x", 2))]
    with pytest.raises(InvalidUpdateError) as ours:
        apply_writes(checkpoint({BRANCH: 1}), make_channels(False), tasks, increment, {})
    with pytest.raises(LgInvalidUpdateError) as theirs:
        lg_algo.apply_writes(
            checkpoint({BRANCH: 1}), make_channels(True), tasks, lg_algo.increment, {}
        )
    assert str(ours.value) == str(theirs.value)
    assert str(ours.value).startswith("At key 'x': Can receive only one value per step.")


# --- local_read (what a conditional edge sees) ---------------------------------------------


def _lg_local_read(
    chans: dict[str, Any], writes: list[tuple[str, Any]], select: list[str], fresh: bool
) -> Any:
    return lg_algo.local_read(
        None,  # type: ignore[arg-type]
        chans,
        {},
        SimpleNamespace(writes=writes),
        select,
        fresh,
    )


@pytest.mark.parametrize("fresh", [False, True])
def test_local_read(fresh: bool) -> None:
    writes: list[tuple[str, Any]] = [("items", [2]), ("x", "mine"), ("deferred", "no")]
    select = ["items", "x", "deferred"]
    ours = make_channels(False, items=[[1]], x=["before"])
    result = local_read(ours, writes, select, fresh=fresh)
    if fresh:  # this task's own writes applied to copies
        assert result == {"items": [1, 2], "x": "mine"}
    else:
        assert result == {"items": [1], "x": "before"}
    assert ours["items"].get() == [1]  # the live channels are untouched
    assert ours["x"].get() == "before"
    theirs = make_channels(True, items=[[1]], x=["before"])
    assert _lg_local_read(theirs, writes, select, fresh) == result


def test_fresh_local_read_notifies_unwritten_channels_of_the_new_step() -> None:
    """LangGraph's fresh read applies ``update([])`` to every copy it did not write, so an
    ephemeral value written in the previous step reads as gone, as it will be after
    this step."""
    flag_ours = channels.EphemeralValue(Any, key="flag")
    flag_ours.update(["set"])
    flag_lg: Any = lg_channels.EphemeralValue(Any)
    flag_lg.key = "flag"
    flag_lg.update(["set"])
    writes = [("x", 1)]
    expected = {"x": 1}
    assert (
        _lg_local_read(
            {"flag": flag_lg, "x": lg_channels.LastValue(Any)}, writes, ["flag", "x"], True
        )
        == expected
    )
    ours = {"flag": flag_ours, "x": channels.LastValue(Any, key="x")}
    assert local_read(ours, writes, ["flag", "x"], fresh=True) == expected
    assert flag_ours.get() == "set"  # the live channel itself is untouched


class _LgFlagState(TypedDict, total=False):
    x: int
    flag: Annotated[str, lg_channels.EphemeralValue(str)]


class _FlagState(TypedDict, total=False):
    x: int
    flag: Annotated[str, channels.EphemeralValue(str)]


def _route_on_ephemeral(graph_cls: Any, schema: Any, start: str) -> tuple[Any, list[Any]]:
    seen: list[Any] = []

    def route(state: dict[str, Any]) -> str:
        seen.append(state.get("flag"))
        return "b" if state.get("flag") else "c"

    g = graph_cls(schema)
    g.add_node("p", lambda s: {"flag": "set", "x": 1})
    g.add_node("a", lambda s: {"x": 2})
    g.add_node("b", lambda s: {"x": 10})
    g.add_node("c", lambda s: {"x": 20})
    g.add_edge(start, "p")
    g.add_edge("p", "a")
    g.add_conditional_edges("a", route, ["b", "c"])
    return g.compile().invoke({"x": 0}), seen


def test_graph_router_does_not_see_last_steps_ephemeral_key() -> None:
    """p writes an EphemeralValue key; a's router (next step) reads it as already gone."""
    expected = ({"x": 20}, [None])
    assert _route_on_ephemeral(LgStateGraph, _LgFlagState, LG_START) == expected
    assert _route_on_ephemeral(StateGraph, _FlagState, START) == expected


# --- make_scratchpad -------------------------------------------------------------------------

TID = "7f0b3b6e-1111-2222-3333-444455556666"
NS = f"n:{TID}"


def formula_interrupt_id(ns: str, answered: int) -> str:
    return xxh3_128_hexdigest((f"{ns}|{answered}" if answered else ns).encode())


@pytest.mark.parametrize("answered", [0, 1, 2, 7])
def test_interrupt_id_formula(answered: int) -> None:
    expected = formula_interrupt_id(NS, answered)
    assert interrupt_id(NS, answered) == expected
    assert lg_types._interrupt_id(NS, answered) == expected


def both_scratchpads(
    pending: list[PendingWrite],
    resume_map: dict[str, Any] | None = None,
    parent: tuple[Any, Any] | None = None,
) -> tuple[Scratchpad, Any]:
    """(graphruntime's, LangGraph's) scratchpads for task TID, each on its own list copy."""
    ours = make_scratchpad(
        list(pending),
        TID,
        NS,
        resume_map=resume_map,
        parent=parent[0] if parent else None,
        step=3,
        stop=9,
    )
    theirs = lg_algo._scratchpad(
        parent[1] if parent else None, list(pending), TID, NS, resume_map, 3, 9
    )
    return ours, theirs


def test_scratchpad_task_resume_list() -> None:
    pending: list[PendingWrite] = [
        ("other", RESUME, ["not mine"]),
        (TID, RESUME, ["r0", "r1"]),
        (TID, INTERRUPT, "ignored"),
    ]
    ours, theirs = both_scratchpads(pending)
    assert ours.resume == ["r0", "r1"] == theirs.resume
    assert (ours.step, ours.stop) == (3, 9)
    assert [ours.interrupt_counter() for _ in range(3)] == [0, 1, 2]
    single, lg_single = both_scratchpads([(TID, RESUME, "only")])
    assert single.resume == ["only"] == lg_single.resume
    assert single.get_null_resume(True) is None


def test_null_resume_is_consumed_once_across_tasks() -> None:
    pending: list[PendingWrite] = [(NULL_TASK_ID, RESUME, "answer"), (TID, INTERRUPT, "i")]
    shared = list(pending)
    first = make_scratchpad(shared, TID, NS, resume_map=None, parent=None, step=1, stop=2)
    second = make_scratchpad(shared, "t2", "m:t2", resume_map=None, parent=None, step=1, stop=2)
    assert first.resume == []
    assert first.get_null_resume(False) == "answer"  # peeking does not consume
    assert second.get_null_resume(False) == "answer"
    assert first.get_null_resume(True) == "answer"
    assert shared == [(TID, INTERRUPT, "i")]  # consumed from the step's pending writes
    assert second.get_null_resume(True) is None
    assert first.get_null_resume(True) is None
    # LangGraph's scratchpad behaves the same on the same writes.
    lg_shared = list(pending)
    lg_first = lg_algo._scratchpad(None, lg_shared, TID, NS, None, 1, 2)
    lg_second = lg_algo._scratchpad(None, lg_shared, "t2", "m:t2", None, 1, 2)
    assert lg_first.get_null_resume(True) == "answer"
    assert lg_second.get_null_resume(True) is None


def test_null_resume_falls_back_to_the_parent() -> None:
    parent_pending: list[PendingWrite] = [(NULL_TASK_ID, RESUME, "from parent")]
    parent = make_scratchpad(
        parent_pending, "p", "p:x", resume_map=None, parent=None, step=1, stop=2
    )
    lg_parent = lg_algo._scratchpad(None, list(parent_pending), "p", "p:x", None, 1, 2)
    ours, theirs = both_scratchpads([(TID, INTERRUPT, "i")], parent=(parent, lg_parent))
    assert ours.get_null_resume(False) == "from parent" == theirs.get_null_resume(False)
    assert ours.get_null_resume(True) == "from parent" == theirs.get_null_resume(True)
    assert ours.get_null_resume(True) is None is theirs.get_null_resume(True)
    assert parent_pending == []
    # Its own null resume wins over the parent's.
    own, lg_own = both_scratchpads([(NULL_TASK_ID, RESUME, "own")], parent=(parent, lg_parent))
    assert own.get_null_resume(False) == "own" == lg_own.get_null_resume(False)


@pytest.mark.parametrize(
    ("answered", "resume_map", "expected_tail"),
    [
        ([], {0: "first"}, ["first"]),
        (["r0"], {1: "second"}, ["second"]),  # keyed by the k-th answer's id
        (["r0"], {0: "fallback"}, ["fallback"]),  # older ids: the first id for every answer
        (["r0"], {1: "second", 0: "fallback"}, ["second"]),
        (["r0", "r1"], {2: "third"}, ["third"]),
        (["r0"], {5: "elsewhere"}, []),
        (["r0"], {}, []),
    ],
)
def test_resume_map_lookup_by_interrupt_id(
    answered: list[str], resume_map: dict[int, str], expected_tail: list[str]
) -> None:
    by_id = {formula_interrupt_id(NS, k): v for k, v in resume_map.items()}
    by_id["0" * 32] = "another task's answer"
    pending: list[PendingWrite] = [(TID, INTERRUPT, "i")]
    if answered:
        pending.append((TID, RESUME, list(answered)))
    ours, theirs = both_scratchpads(pending, by_id)
    assert ours.resume == [*answered, *expected_tail]
    assert theirs.resume == ours.resume
