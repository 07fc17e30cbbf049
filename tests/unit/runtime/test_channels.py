"""Channels: how a state key merges the writes of one superstep.

Each channel is checked on its own contract, and against LangGraph's channel of the same
name (the test oracle) by replaying the same operations on both and comparing every
observable result: what ``update``/``consume``/``finish`` return or raise, and what
``get``/``is_available`` show afterwards.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired, Required, TypedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph import errors as lg_errors
from langgraph import types as lg_types
from langgraph.channels.binop import BinaryOperatorAggregate as LgBinop
from langgraph.channels.ephemeral_value import EphemeralValue as LgEphemeral
from langgraph.channels.last_value import LastValue as LgLastValue
from langgraph.channels.last_value import LastValueAfterFinish as LgLastValueAfterFinish
from langgraph.channels.named_barrier_value import NamedBarrierValue as LgBarrier
from langgraph.channels.named_barrier_value import (
    NamedBarrierValueAfterFinish as LgBarrierAfterFinish,
)
from langgraph.channels.topic import Topic as LgTopic
from langgraph.graph import START as LG_START
from langgraph.graph import StateGraph as LgStateGraph

from graphruntime import errors, types
from graphruntime._internal._typing import MISSING
from graphruntime.channels import (
    BaseChannel,
    BinaryOperatorAggregate,
    EphemeralValue,
    LastValue,
    LastValueAfterFinish,
    NamedBarrierValue,
    NamedBarrierValueAfterFinish,
    Topic,
)
from graphruntime.graph import START, StateGraph

KEY = "k"
EMPTY = "<empty>"
TROUBLESHOOTING = (
    "\nFor troubleshooting, visit: "
    "https://docs.langchain.com/oss/python/langgraph/errors/INVALID_CONCURRENT_GRAPH_UPDATE"
)


def value_of(ch: Any) -> Any:
    """``get()``, or EMPTY when the channel (either runtime's) has no value."""
    try:
        return ch.get()
    except (errors.EmptyChannelError, lg_errors.EmptyChannelError):
        return EMPTY


def raises(fn: Callable[[], Any]) -> tuple[str, str]:
    """The (type name, message) ``fn`` raises; fails if it returns."""
    try:
        fn()
    except (errors.InvalidUpdateError, lg_errors.InvalidUpdateError) as exc:
        return type(exc).__name__, str(exc)
    raise AssertionError("expected InvalidUpdateError")


# --- LastValue ---------------------------------------------------------------------------


def test_last_value_keeps_the_single_write_of_a_step() -> None:
    ch = LastValue(int, key=KEY)
    assert not ch.is_available()
    assert value_of(ch) == EMPTY
    assert ch.update([1]) is True
    assert ch.get() == 1
    assert ch.update([]) is False  # a step without writes changes nothing
    assert ch.get() == 1
    assert ch.update([2]) is True
    assert ch.get() == 2


def test_last_value_two_writes_in_a_step_is_an_error_with_langgraphs_message() -> None:
    ch = LastValue(int, key=KEY)
    ch.update([1])
    ours = raises(lambda: ch.update([2, 3]))
    assert ours == (
        "InvalidUpdateError",
        "At key 'k': Can receive only one value per step. Use an Annotated key to handle "
        "multiple values." + TROUBLESHOOTING,
    )
    assert ch.get() == 1  # the failed step left the value alone
    oracle: Any = LgLastValue(int)
    oracle.key = KEY
    assert raises(lambda: oracle.update([2, 3])) == ours


# --- BinaryOperatorAggregate ---------------------------------------------------------------


class NeedsArgs:
    def __init__(self, x: int) -> None:
        self.x = x


@pytest.mark.parametrize(
    ("typ", "initial"),
    [
        (list, []),
        (list[int], []),
        (Sequence[int], []),
        (int, 0),
        (str, ""),
        (dict[str, int], {}),
        (set, set()),
        (NeedsArgs, EMPTY),  # no no-arg constructor: starts empty
    ],
)
def test_binop_starts_from_typ(typ: Any, initial: Any) -> None:
    ch = BinaryOperatorAggregate(typ, operator.add, key=KEY)
    assert value_of(ch) == initial
    assert value_of(ch.from_checkpoint(MISSING)) == initial
    assert value_of(LgBinop(typ, operator.add)) == initial


@pytest.mark.parametrize(
    "typ",
    [Annotated[list[int], "meta"], NotRequired[list[int]], Required[list[int]]],
    ids=["Annotated", "NotRequired", "Required"],
)
def test_binop_initial_value_strips_annotated_and_required(typ: Any) -> None:
    """LangGraph strips Annotated/Required/NotRequired before calling ``typ()``."""
    assert value_of(LgBinop(typ, operator.add)) == []
    assert value_of(BinaryOperatorAggregate(typ, operator.add, key=KEY)) == []


def test_binop_folds_writes_in_the_given_order() -> None:
    ch = BinaryOperatorAggregate(str, lambda a, b: f"({a}+{b})", key=KEY)
    assert ch.update(["x", "y"]) is True
    assert ch.get() == "((+x)+y)"
    assert ch.update([]) is False
    assert ch.get() == "((+x)+y)"
    lists = BinaryOperatorAggregate(list, operator.add, key=KEY)
    lists.update([[1], [2, 3]])
    lists.update([[4]])
    assert lists.get() == [1, 2, 3, 4]


def test_binop_without_initial_value_takes_the_first_write_as_is() -> None:
    ch = BinaryOperatorAggregate(NeedsArgs, lambda a, b: b, key=KEY)
    first, second = NeedsArgs(1), NeedsArgs(2)
    assert ch.update([first]) is True
    assert ch.get() is first
    ch.update([second])
    assert ch.get() is second


@pytest.mark.parametrize("form", ["Overwrite", "dict"])
def test_binop_overwrite_replaces_the_value_and_drops_the_steps_other_writes(form: str) -> None:
    def ow(value: Any, ours: bool = True) -> Any:
        if form == "dict":
            return {"__overwrite__": value}
        return types.Overwrite(value) if ours else lg_types.Overwrite(value)

    ch = BinaryOperatorAggregate(list, operator.add, key=KEY)
    ch.update([[0]])
    assert ch.update([[1], ow([9]), [2]]) is True
    assert ch.get() == [9]
    ch.update([[3]])
    assert ch.get() == [9, 3]
    oracle: Any = LgBinop(list, operator.add)
    oracle.update([[0]])
    oracle.update([[1], ow([9], ours=False), [2]])
    oracle.update([[3]])
    assert oracle.get() == [9, 3]


def test_binop_a_dict_with_other_keys_is_not_an_overwrite() -> None:
    ch = BinaryOperatorAggregate(dict, operator.or_, key=KEY)
    ch.update([{"__overwrite__": 1, "b": 2}])
    assert ch.get() == {"__overwrite__": 1, "b": 2}


def test_binop_json_erased_overwrite_replaces_the_value() -> None:
    """``Overwrite`` serialised as a plain dict (``{"value": v, "type": "__overwrite__"}``,
    e.g. after JSON) still overwrites in LangGraph."""
    erased = {"value": [9], "type": "__overwrite__"}
    oracle: Any = LgBinop(list, operator.add)
    oracle.update([[1]])
    oracle.update([erased])
    assert oracle.get() == [9]
    ch = BinaryOperatorAggregate(list, operator.add, key=KEY)
    ch.update([[1]])
    ch.update([erased])
    assert ch.get() == [9]


def test_binop_two_overwrites_in_a_step_is_an_error() -> None:
    ch = BinaryOperatorAggregate(list, operator.add, key=KEY)
    ours = raises(lambda: ch.update([types.Overwrite([1]), {"__overwrite__": [2]}]))
    assert ours == (
        "InvalidUpdateError",
        "Can receive only one Overwrite value per super-step." + TROUBLESHOOTING,
    )
    oracle: Any = LgBinop(list, operator.add)
    assert raises(lambda: oracle.update([lg_types.Overwrite([1]), {"__overwrite__": [2]}])) == ours


# --- EphemeralValue ----------------------------------------------------------------------


def test_ephemeral_value_lives_for_one_step() -> None:
    ch = EphemeralValue(Any, key=KEY)
    assert ch.update([]) is False  # nothing to clear
    assert ch.update(["v"]) is True
    assert ch.get() == "v"
    assert ch.update([]) is True  # the next step clears it, and that is a change
    assert not ch.is_available()
    assert value_of(ch) == EMPTY
    assert ch.update([]) is False


def test_ephemeral_value_guard() -> None:
    guarded = EphemeralValue(Any, key=KEY)
    message = raises(lambda: guarded.update([1, 2]))
    assert message == (
        "InvalidUpdateError",
        "At key 'k': EphemeralValue(guard=True) can receive only one value per step. Use "
        "guard=False if you want to store any one of multiple values.",
    )
    oracle: Any = LgEphemeral(Any)
    oracle.key = KEY
    assert raises(lambda: oracle.update([1, 2])) == message
    unguarded = EphemeralValue(Any, guard=False, key=KEY)
    assert unguarded.update([1, 2]) is True
    assert unguarded.get() == 2


# --- Topic -------------------------------------------------------------------------------


def test_topic_without_accumulate_replaces_each_step() -> None:
    ch = Topic(Any, key=KEY)
    assert ch.update([1, [2, 3]]) is True  # lists are flattened one level
    assert ch.get() == [1, 2, 3]
    assert ch.update([4]) is True
    assert ch.get() == [4]
    assert ch.update([]) is True  # an empty step clears a non-empty topic
    assert value_of(ch) == EMPTY
    assert ch.update([]) is False


def test_topic_with_accumulate_keeps_adding() -> None:
    ch = Topic(Any, accumulate=True, key=KEY)
    ch.update([1])
    assert ch.update([[2], [[3]]]) is True  # only one level of flattening
    assert ch.get() == [1, 2, [3]]
    assert ch.update([]) is False
    assert ch.get() == [1, 2, [3]]


@pytest.mark.parametrize("accumulate", [False, True])
def test_topic_empty_list_write_is_no_change(accumulate: bool) -> None:
    """A write of ``[]`` flattens to nothing: LangGraph reports no change (no version bump)."""
    oracle: Any = LgTopic(Any, accumulate=accumulate)
    assert oracle.update([[]]) is False
    ch = Topic(Any, accumulate=accumulate, key=KEY)
    assert ch.update([[]]) is False
    assert value_of(ch) == EMPTY
    if accumulate:
        oracle.update([1])
        ch.update([1])
        assert oracle.update([[]]) is False
        assert ch.update([[]]) is False
        assert ch.get() == [1]


def test_topic_get_returns_a_copy() -> None:
    ch = Topic(Any, key=KEY)
    ch.update([1])
    ch.get().append(2)
    assert ch.get() == [1]


# --- NamedBarrierValue -------------------------------------------------------------------


def test_named_barrier_is_available_only_when_every_name_wrote() -> None:
    ch = NamedBarrierValue(str, {"a", "b"}, key=KEY)
    assert ch.consume() is False
    assert ch.update(["a"]) is True
    assert not ch.is_available()
    assert value_of(ch) == EMPTY
    assert ch.update(["a"]) is False  # already seen
    assert ch.update(["b"]) is True
    assert ch.is_available()
    assert ch.get() is None
    assert ch.consume() is True  # the node it triggers ran: wait for both again
    assert not ch.is_available()
    assert ch.consume() is False


def test_named_barrier_unknown_name_is_an_error() -> None:
    ch = NamedBarrierValue(str, {"a"}, key=KEY)
    message = raises(lambda: ch.update(["c"]))
    assert message == ("InvalidUpdateError", "At key 'k': Value c not in {'a'}")
    oracle: Any = LgBarrier(str, {"a"})
    oracle.key = KEY
    assert raises(lambda: oracle.update(["c"])) == message


# --- *AfterFinish ------------------------------------------------------------------------


def test_last_value_after_finish_is_readable_only_after_finish() -> None:
    ch = LastValueAfterFinish(Any, key=KEY)
    assert ch.finish() is False  # nothing to finish
    assert ch.update(["v"]) is True
    assert not ch.is_available()
    assert ch.consume() is False  # not finished: nothing to consume
    assert ch.checkpoint() == ("v", False)
    assert ch.finish() is True
    assert ch.finish() is False
    assert ch.get() == "v"
    assert ch.checkpoint() == ("v", True)
    assert ch.update(["w"]) is True  # a new write un-finishes it
    assert not ch.is_available()
    assert ch.finish() is True
    assert ch.consume() is True
    assert value_of(ch) == EMPTY
    assert ch.checkpoint() is MISSING


def test_named_barrier_after_finish_needs_all_names_and_finish() -> None:
    ch = NamedBarrierValueAfterFinish(str, {"a", "b"}, key=KEY)
    ch.update(["a"])
    assert ch.finish() is False  # not every name yet
    ch.update(["b"])
    assert not ch.is_available()
    assert ch.consume() is False
    assert ch.finish() is True
    assert ch.finish() is False
    assert ch.is_available()
    assert ch.get() is None
    assert ch.consume() is True
    assert not ch.is_available()
    assert ch.checkpoint() == (set(), False)


# --- checkpoint round trips ------------------------------------------------------------------


def _filled() -> list[BaseChannel]:
    last = LastValue(Any, key=KEY)
    last.update([[1]])
    binop = BinaryOperatorAggregate(list, operator.add, key=KEY)
    binop.update([[1]])
    eph = EphemeralValue(Any, key=KEY)
    eph.update([[1]])
    topic = Topic(Any, key=KEY)
    topic.update([1])
    acc = Topic(Any, accumulate=True, key=KEY)
    acc.update([1])
    barrier = NamedBarrierValue(str, {"a", "b"}, key=KEY)
    barrier.update(["a"])
    barrier_af = NamedBarrierValueAfterFinish(str, {"a", "b"}, key=KEY)
    barrier_af.update(["a"])
    lvaf = LastValueAfterFinish(Any, key=KEY)
    lvaf.update(["v"])
    return [last, binop, eph, topic, acc, barrier, barrier_af, lvaf]


@pytest.mark.parametrize("ch", _filled(), ids=lambda c: type(c).__name__)
def test_round_trip_preserves_the_channel(ch: BaseChannel) -> None:
    restored = ch.from_checkpoint(ch.checkpoint())
    assert type(restored) is type(ch)
    assert restored is not ch
    assert restored.key == ch.key
    assert restored.checkpoint() == ch.checkpoint()
    assert value_of(restored) == value_of(ch)
    assert restored.is_available() == ch.is_available()
    assert value_of(ch.copy()) == value_of(ch)
    empty = ch.from_checkpoint(MISSING)
    assert type(empty) is type(ch)
    assert empty.key == ch.key


def test_round_trips_never_alias_the_channels_own_containers() -> None:
    topic = Topic(Any, accumulate=True, key=KEY)
    topic.update([1])
    saved = topic.checkpoint()
    restored = topic.from_checkpoint(saved)
    topic.update([2])
    restored.update([3])
    assert saved == [1]
    assert topic.get() == [1, 2]
    assert restored.get() == [1, 3]
    saved.append(99)
    assert restored.get() == [1, 3]

    barrier = NamedBarrierValue(str, {"a", "b"}, key=KEY)
    barrier.update(["a"])
    seen = barrier.checkpoint()
    twin = barrier.from_checkpoint(seen)
    twin.update(["b"])
    assert seen == {"a"}
    assert not barrier.is_available()
    assert twin.is_available()
    seen.add("b")
    assert not barrier.is_available()
    other = barrier.from_checkpoint({"a"})
    assert other.consume() is False

    barrier_af = NamedBarrierValueAfterFinish(str, {"a", "b"}, key=KEY)
    barrier_af.update(["a"])
    cp = barrier_af.checkpoint()
    twin_af = barrier_af.from_checkpoint(cp)
    twin_af.update(["b"])
    assert cp == ({"a"}, False)
    assert barrier_af.finish() is False
    assert twin_af.finish() is True

    # The compiled graph's spec is never mutated by channels restored from it.
    spec = Topic(Any, accumulate=True, key=KEY)
    live = spec.from_checkpoint([1])
    live.update([2])
    assert value_of(spec) == EMPTY


# --- the same operations on LangGraph's channels -----------------------------------------


@dataclass(frozen=True)
class Ow:
    """An Overwrite write, made into each runtime's form when applied."""

    value: Any
    as_dict: bool


def _convert(values: Sequence[Any], oracle: bool) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if isinstance(v, Ow):
            if v.as_dict:
                out.append({"__overwrite__": v.value})
            else:
                out.append(lg_types.Overwrite(v.value) if oracle else types.Overwrite(v.value))
        else:
            out.append(v)
    return out


def _keyed(ch: Any) -> Any:
    ch.key = KEY
    return ch


def _nonarg() -> Any:
    return NeedsArgs  # a typ() that fails: the channel starts empty


FACTORIES: dict[str, tuple[Callable[[], BaseChannel], Callable[[], Any]]] = {
    "LastValue": (lambda: LastValue(int, key=KEY), lambda: _keyed(LgLastValue(int))),
    "BinopList": (
        lambda: BinaryOperatorAggregate(list, operator.add, key=KEY),
        lambda: _keyed(LgBinop(list, operator.add)),
    ),
    "BinopNoInitial": (
        lambda: BinaryOperatorAggregate(_nonarg(), operator.add, key=KEY),
        lambda: _keyed(LgBinop(_nonarg(), operator.add)),
    ),
    "Ephemeral": (lambda: EphemeralValue(Any, key=KEY), lambda: _keyed(LgEphemeral(Any))),
    "EphemeralUnguarded": (
        lambda: EphemeralValue(Any, guard=False, key=KEY),
        lambda: _keyed(LgEphemeral(Any, guard=False)),
    ),
    "Topic": (lambda: Topic(Any, key=KEY), lambda: _keyed(LgTopic(Any))),
    "TopicAccumulate": (
        lambda: Topic(Any, accumulate=True, key=KEY),
        lambda: _keyed(LgTopic(Any, accumulate=True)),
    ),
    "Barrier": (
        lambda: NamedBarrierValue(str, {"a", "b"}, key=KEY),
        lambda: _keyed(LgBarrier(str, {"a", "b"})),
    ),
    "BarrierAfterFinish": (
        lambda: NamedBarrierValueAfterFinish(str, {"a", "b"}, key=KEY),
        lambda: _keyed(LgBarrierAfterFinish(str, {"a", "b"})),
    ),
    "LastValueAfterFinish": (
        lambda: LastValueAfterFinish(Any, key=KEY),
        lambda: _keyed(LgLastValueAfterFinish(Any)),
    ),
}

_ints = st.integers(min_value=0, max_value=9)
_int_lists = st.lists(_ints, max_size=2)
_nonempty_int_lists = st.lists(_ints, min_size=1, max_size=2)
_WRITES: dict[str, st.SearchStrategy[Any]] = {
    "LastValue": _ints,
    "BinopList": st.one_of(_int_lists, st.builds(Ow, _int_lists, st.booleans())),
    "BinopNoInitial": _int_lists,
    "Ephemeral": _ints,
    "EphemeralUnguarded": _ints,
    # An empty list written to a Topic is pinned on its own (test_topic_empty_list_write_...).
    "Topic": st.one_of(_ints, _nonempty_int_lists),
    "TopicAccumulate": st.one_of(_ints, _nonempty_int_lists),
    "Barrier": st.sampled_from(["a", "b", "c"]),
    "BarrierAfterFinish": st.sampled_from(["a", "b", "c"]),
    "LastValueAfterFinish": _ints,
}


def _ops(kind: str) -> st.SearchStrategy[list[tuple[str, Any]]]:
    update = st.tuples(st.just("update"), st.lists(_WRITES[kind], max_size=3))
    other = st.tuples(st.sampled_from(["consume", "finish", "roundtrip"]), st.none())
    return st.lists(st.one_of(update, update, other), max_size=8)


def _replay(ch: Any, ops: list[tuple[str, Any]], oracle: bool) -> list[Any]:
    seen: list[Any] = []
    for op, arg in ops:
        result: Any
        try:
            if op == "update":
                result = ch.update(_convert(arg, oracle))
            elif op == "consume":
                result = ch.consume()
            elif op == "finish":
                result = ch.finish()
            else:
                ch = ch.from_checkpoint(ch.checkpoint())
                result = None
        except (errors.InvalidUpdateError, lg_errors.InvalidUpdateError) as exc:
            # The set in "Value c not in {...}" may print in either order.
            result = ("raised", type(exc).__name__, str(exc).split(" not in ")[0])
        except TypeError as exc:  # e.g. the first write of a typ()-less binop, then +
            result = ("raised", type(exc).__name__)
        seen.append((op, result, ch.is_available(), value_of(ch)))
    return seen


@pytest.mark.parametrize("kind", sorted(FACTORIES))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_channel_matches_langgraph(kind: str, data: st.DataObject) -> None:
    ops = data.draw(_ops(kind))
    ours, oracle = FACTORIES[kind]
    assert _replay(ours(), ops, oracle=False) == _replay(oracle(), ops, oracle=True)


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.lists(_int_lists, max_size=3), max_size=5))
def test_binop_add_equals_concatenation(steps: list[list[list[int]]]) -> None:
    ch = BinaryOperatorAggregate(list, operator.add, key=KEY)
    for writes in steps:
        assert ch.update(writes) is bool(writes)
    assert ch.get() == [x for writes in steps for w in writes for x in w]


# --- observable through a graph ----------------------------------------------------------


class _NotRequiredReducer(TypedDict):
    x: int
    items: NotRequired[Annotated[list[str], operator.add]]


def _reads_items(graph_cls: Any, start: str) -> Any:
    def node(state: dict[str, Any]) -> dict[str, Any]:
        return {"items": [repr(state.get("items", "absent"))]}

    g = graph_cls(_NotRequiredReducer)
    g.add_node("n", node)
    g.add_edge(start, "n")
    return g.compile().invoke({"x": 1})


def test_graph_not_required_reducer_key_starts_from_typ() -> None:
    """``NotRequired[Annotated[list, add]]``: the node sees ``[]``, not a missing key."""
    expected = {"x": 1, "items": ["[]"]}
    assert _reads_items(LgStateGraph, LG_START) == expected
    assert _reads_items(StateGraph, START) == expected


def _overwrites_via_erased_dict(graph_cls: Any, start: str) -> Any:
    class State(TypedDict):
        items: Annotated[list[str], operator.add]

    def node(state: State) -> dict[str, Any]:
        return {"items": {"value": ["over"], "type": "__overwrite__"}}

    g = graph_cls(State)
    g.add_node("n", node)
    g.add_edge(start, "n")
    return g.compile().invoke({"items": ["a"]})


def test_graph_json_erased_overwrite_from_a_node() -> None:
    """A node returning the dict form of ``Overwrite`` overwrites the reducer key."""
    assert _overwrites_via_erased_dict(LgStateGraph, LG_START) == {"items": ["over"]}
    assert _overwrites_via_erased_dict(StateGraph, START) == {"items": ["over"]}
