"""The superstep algorithm, part 1: which tasks a step has, their ids, and breakpoints.

Task ids must be LangGraph's exactly (a thread can be resumed by either runtime, and
interrupt ids derive from them), so the expected id is computed here from the formula with
xxhash directly and also cross-checked with LangGraph's private helpers and its
``prepare_next_tasks`` on the same checkpoint.
"""

from __future__ import annotations

import binascii
import copy
import operator
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver as LgSaver
from langgraph.graph import END as LG_END
from langgraph.graph import START as LG_START
from langgraph.graph import StateGraph as LgStateGraph
from langgraph.pregel import _algo as lg_algo
from langgraph.pregel._checkpoint import channels_from_checkpoint as lg_channels_from_checkpoint
from langgraph.types import Send as LgSend
from xxhash import xxh3_128_hexdigest

from graphruntime._internal._constants import PULL, PUSH, TASKS
from graphruntime.channels import BaseChannel, EphemeralValue, LastValue, Topic
from graphruntime.checkpoint.base import Checkpoint
from graphruntime.graph import END, START, StateGraph
from graphruntime.pregel._algo import (
    PreparedTask,
    StepContext,
    channels_from_checkpoint,
    increment,
    prepare_next_tasks,
    prepare_task,
    should_interrupt,
    task_id,
    task_path_str,
)
from graphruntime.pregel._node import NodeSpec
from graphruntime.types import Send

CID = "1ef4f797-8335-6428-8001-8a1503f9b875"
OTHER_CID = "1ef4f797-8335-6428-8002-8a1503f9b875"


def formula_id(checkpoint_id: str, *parts: str) -> str:
    """LangGraph's task id: xxh3-128 of the raw checkpoint id bytes + parts, as a uuid."""
    raw = binascii.unhexlify(checkpoint_id.replace("-", "")) + "".join(parts).encode()
    h = xxh3_128_hexdigest(raw)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def node(name: str, *triggers: str, hidden: bool = False, mapper: Any = None) -> NodeSpec:
    return NodeSpec(
        name=name,
        func=None,
        triggers=triggers,
        input_keys=("x",),
        writers=(),
        mapper=mapper,
        hidden=hidden,
    )


def context(nodes: list[NodeSpec], step: int = 1, parent_ns: str = "") -> StepContext:
    trigger_to_nodes: dict[str, list[str]] = {}
    for n in nodes:
        for t in n.triggers:
            trigger_to_nodes.setdefault(t, []).append(n.name)
    return StepContext(
        nodes={n.name: n for n in nodes},
        trigger_to_nodes=trigger_to_nodes,
        parent_ns=parent_ns,
        step=step,
    )


def checkpoint(
    versions: Mapping[str, int],
    seen: Mapping[str, Mapping[str, int]] | None = None,
    checkpoint_id: str = CID,
) -> Checkpoint:
    return {
        "v": 4,
        "id": checkpoint_id,
        "ts": "2024-01-01T00:00:00+00:00",
        "channel_values": {},
        "channel_versions": dict(versions),
        "versions_seen": {k: dict(v) for k, v in (seen or {}).items()},
        "updated_channels": None,
    }


def last_values(**values: Any) -> dict[str, BaseChannel]:
    out: dict[str, BaseChannel] = {}
    for k, v in values.items():
        ch = LastValue(Any, key=k)
        if v is not None:
            ch.update([v])
        out[k] = ch
    return out


def summary(tasks: Mapping[str, Any]) -> dict[str, tuple[str, tuple[Any, ...]]]:
    return {tid: (t.name, tuple(t.path)) for tid, t in tasks.items()}


# --- task ids ------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    cid=st.uuids(),
    ns=st.text(max_size=20),
    step=st.integers(min_value=-1, max_value=10**6),
    name=st.text(min_size=1, max_size=10),
    triggers=st.lists(st.text(max_size=12), max_size=3),
)
def test_task_id_is_langgraphs_xxhash_formula(
    cid: Any, ns: str, step: int, name: str, triggers: list[str]
) -> None:
    parts = (ns, str(step), name, PULL, *sorted(triggers))
    expected = formula_id(str(cid), *parts)
    assert task_id(str(cid), *parts) == expected
    raw = binascii.unhexlify(str(cid).replace("-", ""))
    assert lg_algo._xxhash_str(raw, *parts) == expected


def test_pull_task_id_namespace_and_path() -> None:
    # Triggers are declared unsorted; the id uses them sorted.
    c = node("c", "t2", "t1")
    ctx = context([c], step=3)
    tasks = prepare_next_tasks(
        checkpoint({"t1": 1, "t2": 1, "x": 1}), last_values(t1=1, t2=1, x=5), ctx
    )
    expected = formula_id(CID, "c", "3", "c", "__pregel_pull", "t1", "t2")
    assert list(tasks) == [expected]
    task = tasks[expected]
    assert task.id == expected
    assert task.name == "c"
    assert task.path == (PULL, "c")
    assert task.triggers == ("t1", "t2")
    assert task.checkpoint_ns == f"c:{expected}"
    assert task.input == {"x": 5}
    assert task.node is c
    assert task.writes == []


def test_task_ids_in_a_subgraph_use_the_parent_namespace() -> None:
    parent_ns = "outer:0e9a2f52-8b4e-4b7c-b7b4-8a3c3f8a7c9d"
    ctx = context([node("c", "t1")], step=0, parent_ns=parent_ns)
    tasks = prepare_next_tasks(checkpoint({"t1": 1}), last_values(t1=1, x=None), ctx)
    expected = formula_id(CID, f"{parent_ns}|c", "0", "c", "__pregel_pull", "t1")
    assert list(tasks) == [expected]
    assert tasks[expected].checkpoint_ns == f"{parent_ns}|c:{expected}"


def test_push_task_ids_follow_the_send_index() -> None:
    w = node("w")
    tasks_ch = Topic(Send, key=TASKS)
    tasks_ch.update([Send("missing", 0), Send("w", "one"), Send("w", "two")])
    channels: dict[str, BaseChannel] = {TASKS: tasks_ch}
    tasks = prepare_next_tasks(checkpoint({TASKS: 1}), channels, context([w], step=2))
    first = formula_id(CID, "w", "2", "w", "__pregel_push", "1")
    second = formula_id(CID, "w", "2", "w", "__pregel_push", "2")
    assert list(tasks) == [first, second]  # an unknown node's Send keeps its index
    assert [(t.path, t.triggers, t.input) for t in tasks.values()] == [
        ((PUSH, 1, False), (PUSH,), "one"),
        ((PUSH, 2, False), (PUSH,), "two"),
    ]
    assert tasks[first].checkpoint_ns == f"w:{first}"


def test_push_tasks_come_before_pull_tasks() -> None:
    tasks_ch = Topic(Send, key=TASKS)
    tasks_ch.update([Send("a", 1)])
    channels: dict[str, BaseChannel] = {TASKS: tasks_ch, **last_values(t=1, x=None)}
    tasks = prepare_next_tasks(checkpoint({TASKS: 1, "t": 1}), channels, context([node("a", "t")]))
    assert [t.path[0] for t in tasks.values()] == [PUSH, PULL]


def test_task_ids_are_a_function_of_checkpoint_step_namespace_node_and_triggers() -> None:
    def ids(cid: str = CID, step: int = 1, parent_ns: str = "", trigger: str = "t1") -> list[str]:
        nodes = [node("b", trigger), node("a", trigger)]
        channels = last_values(t1=1, t2=1, x=None)
        return list(
            prepare_next_tasks(
                checkpoint({"t1": 1, "t2": 1}, checkpoint_id=cid),
                channels,
                context(nodes, step=step, parent_ns=parent_ns),
            )
        )

    base = ids()
    assert len(set(base)) == 2
    assert ids() == base  # deterministic
    for changed in (ids(cid=OTHER_CID), ids(step=2), ids(parent_ns="p:1"), ids(trigger="t2")):
        assert set(changed).isdisjoint(base)


# --- which nodes run ---------------------------------------------------------------------


def test_node_runs_when_a_trigger_is_available_and_newer_than_seen() -> None:
    ctx = context([node("n", "t1", "t2")])
    channels = last_values(t1=1, t2=None, x=None)

    def names(versions: dict[str, int], seen: dict[str, dict[str, int]] | None) -> list[str]:
        tasks = prepare_next_tasks(checkpoint(versions, seen), channels, ctx)
        return [t.name for t in tasks.values()]

    assert names({"t1": 2}, None) == ["n"]  # never ran: any available trigger
    assert names({"t1": 2}, {"n": {"t1": 1}}) == ["n"]
    assert names({"t1": 2}, {"n": {"t1": 2}}) == []  # already seen
    assert names({"t1": 2, "t2": 3}, {"n": {"t1": 2}}) == []  # t2 newer but empty
    assert names({}, None) == []  # a thread with no versions has no tasks


def test_updated_channels_limit_the_candidates() -> None:
    ctx = context([node("a", "t1"), node("b", "t2")])
    channels = last_values(t1=1, t2=1, x=None)
    ck = checkpoint({"t1": 1, "t2": 1})
    assert sorted(t.name for t in prepare_next_tasks(ck, channels, ctx).values()) == ["a", "b"]
    limited = prepare_next_tasks(ck, channels, ctx, updated_channels={"t2"})
    assert [t.name for t in limited.values()] == ["b"]


def test_task_input() -> None:
    start = NodeSpec(
        name=START, func=None, triggers=(START,), input_keys=START, writers=(), hidden=True
    )
    mapped = node("m", "t", mapper=lambda d: ("mapped", d))
    channels = last_values(t=1, x=7)
    channels[START] = EphemeralValue(Any, key=START)
    ck = checkpoint({"t": 1, START: 1})
    ctx = context([start, mapped])
    # START is not available: a str input key that is empty means no task.
    assert [t.name for t in prepare_next_tasks(ck, channels, ctx).values()] == ["m"]
    channels[START].update([{"x": 1}])
    tasks = {t.name: t for t in prepare_next_tasks(ck, channels, ctx).values()}
    assert tasks[START].input == {"x": 1}
    assert tasks["m"].input == ("mapped", {"x": 7})
    planned = prepare_next_tasks(ck, channels, ctx, for_execution=False)
    assert {t.name: t.input for t in planned.values()}["m"] == {"x": 7}  # no mapper


def test_prepare_task_rebuilds_each_task_of_the_step_from_its_path() -> None:
    """What a distributed job prepares from a task path is the step's task, exactly."""
    tasks_ch = Topic(Send, key=TASKS)
    tasks_ch.update([Send("w", 1), Send("nope", 2), Send("w", 3)])
    channels: dict[str, BaseChannel] = {TASKS: tasks_ch, **last_values(t1=1, t2=1, x=4)}
    ck = checkpoint({TASKS: 2, "t1": 2, "t2": 1}, {"b": {"t2": 1}})
    ctx = context([node("a", "t1"), node("b", "t2"), node("w")], step=5, parent_ns="p:1")
    step = prepare_next_tasks(ck, channels, ctx)
    assert sorted((t.name, t.path) for t in step.values()) == [
        ("a", (PULL, "a")),
        ("w", (PUSH, 0, False)),
        ("w", (PUSH, 2, False)),
    ]
    for task in step.values():
        again = prepare_task(ck, channels, ctx, task.path)
        assert again is not None
        assert (again.id, again.name, again.path, again.triggers) == (
            task.id,
            task.name,
            task.path,
            task.triggers,
        )
        assert (again.input, again.checkpoint_ns, again.node) == (
            task.input,
            task.checkpoint_ns,
            task.node,
        )
    assert prepare_task(ck, channels, ctx, (PULL, "b")) is None  # b saw t2 already
    assert prepare_task(ck, channels, ctx, (PULL, "ghost")) is None
    assert prepare_task(ck, channels, ctx, (PUSH, 1, False)) is None  # Send to unknown node
    assert prepare_task(ck, channels, ctx, (PUSH, 3, False)) is None  # no such Send


# --- cross-check with LangGraph's prepare_next_tasks ---------------------------------------


class FanState(TypedDict):
    items: Annotated[list[Any], operator.add]


def _fan_out(graph_cls: Any, send: Any, start: str, end: str) -> Any:
    def make(name: str) -> Any:
        return lambda state: {"items": [name]}

    g = graph_cls(FanState)
    for name in ("a", "b", "c", "w"):
        g.add_node(name, make(name))
    g.add_edge(start, "a")
    g.add_edge(start, "b")
    g.add_edge(["a", "b"], "c")
    g.add_conditional_edges("a", lambda s: [send("w", 1), send("w", 2)])
    g.add_edge("c", end)
    g.add_edge("w", end)
    return g


def _oracle_tasks(
    app: Any, ck: Any, step: int, parent_ns: str, updated: set[str] | None
) -> dict[str, tuple[str, tuple[Any, ...]]]:
    channels, managed = lg_channels_from_checkpoint(app.channels, ck)
    tasks = lg_algo.prepare_next_tasks(
        ck,
        [],
        app.nodes,
        channels,
        managed,
        {"configurable": {"checkpoint_ns": parent_ns}},
        step,
        step + 10,
        for_execution=False,
        trigger_to_nodes=app.trigger_to_nodes,
        updated_channels=updated,
    )
    return summary(tasks)


@pytest.mark.parametrize("parent_ns", ["", "parent:0e9a2f52-8b4e-4b7c-b7b4-8a3c3f8a7c9d"])
@pytest.mark.parametrize("use_updated", [False, True])
def test_prepare_next_tasks_matches_langgraph_on_the_same_checkpoint(
    parent_ns: str, use_updated: bool
) -> None:
    oracle = _fan_out(LgStateGraph, LgSend, LG_START, LG_END).compile(
        checkpointer=LgSaver(), interrupt_before=["c", "w"]
    )
    config = {"configurable": {"thread_id": "t"}}
    oracle.invoke({"items": []}, config)
    saved = oracle.checkpointer.get_tuple(config)
    assert saved is not None
    ck, step = saved.checkpoint, saved.metadata["step"] + 1
    updated = set(ck["updated_channels"]) if use_updated else None
    expected = _oracle_tasks(oracle, ck, step, parent_ns, updated)
    assert sorted(name for name, _ in expected.values()) == ["c", "w", "w"]

    ours = _fan_out(StateGraph, Send, START, END).compile()
    mine = copy.deepcopy(ck)
    mine["channel_values"][TASKS] = [Send(p.node, p.arg) for p in ck["channel_values"][TASKS]]
    channels = channels_from_checkpoint(ours.channel_specs, mine)
    ctx = StepContext(
        nodes=ours.nodes, trigger_to_nodes=ours.trigger_to_nodes, parent_ns=parent_ns, step=step
    )
    tasks = prepare_next_tasks(mine, channels, ctx, updated_channels=updated)
    assert summary(tasks) == expected


# --- task paths ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        (PULL, "a"),
        (PUSH, 0, False),
        (PUSH, 12, True),
        (PUSH, ("__pregel_pull", "a"), 2, True),
        "x",
        7,
        (),
    ],
)
def test_task_path_str_matches_langgraph(path: Any) -> None:
    assert task_path_str(path) == lg_algo.task_path_str(path)


def test_task_path_order_is_pull_by_name_then_push_by_index() -> None:
    paths = [(PUSH, 10, False), (PULL, "b"), (PUSH, 2, False), (PULL, "a"), (PUSH, 0, False)]
    assert sorted(paths, key=task_path_str) == [
        (PULL, "a"),
        (PULL, "b"),
        (PUSH, 0, False),
        (PUSH, 2, False),
        (PUSH, 10, False),
    ]


def test_increment() -> None:
    assert increment(None) == 1 == lg_algo.increment(None, None)
    assert increment(41) == 42 == lg_algo.increment(41, None)


# --- static breakpoints --------------------------------------------------------------------


def _tasks(*specs: NodeSpec) -> list[PreparedTask]:
    return [
        PreparedTask(
            id=f"id-{s.name}",
            name=s.name,
            path=(PULL, s.name),
            triggers=s.triggers,
            input=None,
            checkpoint_ns=s.name,
            node=s,
        )
        for s in specs
    ]


def _oracle_should_interrupt(ck: Checkpoint, nodes: Any, tasks: list[PreparedTask]) -> list[str]:
    lg_tasks = [
        SimpleNamespace(name=t.name, config={"tags": ["langsmith:hidden"] if t.node.hidden else []})
        for t in tasks
    ]
    return [t.name for t in lg_algo.should_interrupt(ck, nodes, lg_tasks)]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("seen", "nodes", "expected"),
    [
        (None, ["b"], ["b"]),  # never interrupted: every version counts as new
        ({"t1": 1, "t2": 2}, ["b"], ["b"]),  # t2 advanced past the last interrupt
        ({"t1": 1, "t2": 3}, ["a", "b"], []),  # nothing advanced: no repeat interrupt
        ({"t1": 1, "t2": 5}, ["a", "b"], []),
        ({"t1": 1}, ["c"], []),  # no task of that name
        ({"t1": 1}, "*", ["a", "b"]),  # "*" is every task except hidden ones
        ({"t1": 1, "t2": 3}, "*", []),
    ],
)
def test_should_interrupt(seen: dict[str, int] | None, nodes: Any, expected: list[str]) -> None:
    ck = checkpoint({"t1": 1, "t2": 3}, {"__interrupt__": seen} if seen is not None else None)
    tasks = _tasks(node("a", "t1"), node("b", "t2"), node("h", "t1", hidden=True))
    assert [t.name for t in should_interrupt(ck, nodes, tasks)] == expected
    assert _oracle_should_interrupt(ck, nodes, tasks) == expected
