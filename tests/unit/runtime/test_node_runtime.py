"""What a node gets besides its state: Runtime, context, store, injected parameters, drain."""

from __future__ import annotations

import asyncio
import operator
import warnings
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import pytest

from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.config import RunnableConfig, get_store
from graphruntime.errors import GraphDrained
from graphruntime.graph import START, StateGraph
from graphruntime.runtime import ExecutionInfo, RunControl, Runtime, ServerInfo, get_runtime
from graphruntime.store.base import BaseStore
from graphruntime.store.memory import InMemoryStore


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


@dataclass
class Ctx:
    user: str
    level: int = 1


def _one_node(node: Any, **kwargs: Any) -> Any:
    return StateGraph(State, **kwargs).add_node("node", node).add_edge(START, "node")


def test_state_graph_is_subscriptable_with_one_to_four_parameters() -> None:
    assert StateGraph[State] is not None
    assert StateGraph[State, Ctx] is not None
    assert StateGraph[State, Ctx, State, State] is not None


def test_dict_context_is_coerced_to_the_context_schema() -> None:
    seen: list[Any] = []

    def node(state: State, runtime: Runtime[Ctx]) -> dict[str, Any]:
        seen.append(runtime.context)
        return {"log": [runtime.context.user]}

    app = _one_node(node, context_schema=Ctx).compile()
    assert app.invoke({"log": []}, context={"user": "ann"}) == {"log": ["ann"]}
    assert seen == [Ctx(user="ann", level=1)]
    with pytest.raises(TypeError):
        app.invoke({"log": []}, context={"nobody": "x"})


def test_get_runtime_and_execution_info_in_a_node() -> None:
    infos: list[ExecutionInfo] = []

    def node(state: State) -> dict[str, Any]:
        runtime = get_runtime(Ctx)
        assert runtime.execution_info is not None
        infos.append(runtime.execution_info)
        return {"log": [runtime.context.user]}

    app = _one_node(node, context_schema=Ctx).compile(checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "t1"}, "run_id": "r1"}
    app.invoke({"log": []}, config, context=Ctx(user="bo"))
    (info,) = infos
    assert (info.thread_id, info.run_id, info.node_attempt) == ("t1", "r1", 1)
    assert info.checkpoint_ns.startswith("node:")
    assert info.task_id in info.checkpoint_ns
    assert isinstance(info.node_first_attempt_time, float)


def test_server_info_comes_from_the_configurable_keys_a_server_sets() -> None:
    seen: list[ServerInfo | None] = []

    def node(state: State, runtime: Runtime[None]) -> dict[str, Any]:
        seen.append(runtime.server_info)
        return {}

    app = _one_node(node).compile()
    app.invoke({"log": []}, {"configurable": {"assistant_id": "a", "graph_id": "g"}})
    app.invoke({"log": []})
    assert seen == [ServerInfo(assistant_id="a", graph_id="g"), None]


def test_store_reaches_nodes_by_parameter_get_store_and_subgraphs() -> None:
    store = InMemoryStore()

    def write(state: State, store: BaseStore) -> dict[str, Any]:
        store.put(("ns",), "k", {"v": 1})
        return {"log": ["wrote"]}

    def read(state: State) -> dict[str, Any]:
        item = get_store().get(("ns",), "k")
        return {"log": [f"read {item.value['v'] if item else None}"]}

    child = StateGraph(State).add_node("read", read).add_edge(START, "read").compile()
    app = (
        StateGraph(State)
        .add_node("write", write)
        .add_node("child", child)
        .add_edge(START, "write")
        .add_edge("write", "child")
        .compile(store=store)
    )
    # the subgraph returns its whole state, which the parent's reducer appends
    assert app.invoke({"log": []}) == {"log": ["wrote", "wrote", "read 1"]}


def test_optional_store_parameter_gets_none_without_a_store() -> None:
    def node(state: State, store: BaseStore | None) -> dict[str, Any]:
        return {"log": [f"store={store}"]}

    assert _one_node(node).compile().invoke({"log": []}) == {"log": ["store=None"]}


def test_a_config_parameter_typed_otherwise_is_not_injected_and_warned_about() -> None:
    def typed(state: State, config: dict[str, Any]) -> dict[str, Any]:
        return {}

    with pytest.warns(UserWarning, match="should be typed as 'RunnableConfig'"):
        StateGraph(State).add_node("typed", typed)

    def fine(state: State, config: RunnableConfig) -> dict[str, Any]:
        return {}

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        StateGraph(State).add_node("fine", fine)


def test_runtime_merge_keeps_what_the_other_does_not_set() -> None:
    control = RunControl()
    base: Runtime[Ctx | None] = Runtime(context=Ctx("a"), control=control)
    merged = base.merge(Runtime(context=None))
    assert merged.context == Ctx("a")
    assert merged.control is control
    assert base.merge(Runtime(context=Ctx("b"))).context == Ctx("b")
    with pytest.raises(RuntimeError):
        Runtime().patch_execution_info(node_attempt=2)


def test_drain_stops_between_steps_and_the_thread_resumes() -> None:
    ran: list[str] = []

    def first(state: State, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.control is not None
        runtime.control.request_drain("deploy")
        ran.append("first")
        return {"log": ["first"]}

    def second(state: State) -> dict[str, Any]:
        ran.append("second")
        return {"log": ["second"]}

    app = (
        StateGraph(State)
        .add_node("first", first)
        .add_node("second", second)
        .add_edge(START, "first")
        .add_edge("first", "second")
        .compile(checkpointer=InMemorySaver())
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    with pytest.raises(GraphDrained, match="deploy") as caught:
        app.invoke({"log": []}, config, control=RunControl())
    assert caught.value.reason == "deploy"
    assert app.get_state(config).next == ("second",)
    assert app.invoke(None, config) == {"log": ["first", "second"]}
    assert ran == ["first", "second"]


def test_a_drained_control_stops_an_async_run_before_its_first_task() -> None:
    async def node(state: State) -> dict[str, Any]:
        raise AssertionError("must not run")

    control = RunControl()
    control.request_drain()
    with pytest.raises(GraphDrained):
        asyncio.run(_one_node(node).compile().ainvoke({"log": []}, control=control))


def test_with_config_merges_under_each_run_config() -> None:
    seen: list[Any] = []

    def node(state: State, config: RunnableConfig) -> dict[str, Any]:
        seen.append((config["configurable"].get("bound"), config["metadata"].get("m")))
        return {}

    app = _one_node(node).compile().with_config({"configurable": {"bound": 1}}, recursion_limit=5)
    assert app.config is not None
    assert app.config["recursion_limit"] == 5
    app.invoke({"log": []}, {"metadata": {"m": 2}})
    assert seen == [(1, 2)]
    assert app.copy().config == app.config


def test_task_runtime_sets_every_runtime_field() -> None:
    from dataclasses import fields

    from graphruntime.pregel._algo import PreparedTask
    from graphruntime.pregel._runtime import RUNTIME_FIELDS, task_runtime

    assert {f.name for f in fields(Runtime)} == set(RUNTIME_FIELDS)
    base = Runtime(context=Ctx("ann"), control=RunControl(), previous="prev")
    task = PreparedTask("tid", "node", ("__pregel_pull", "node"), (), None, "node:tid", None)  # type: ignore[arg-type]
    built = task_runtime(
        base,
        task,
        None,
        checkpoint_id="cid",
        thread_id="t",
        run_id=7,
        previous=None,
        first_attempt=1.5,
    )
    info = ExecutionInfo(
        checkpoint_id="cid",
        checkpoint_ns="node:tid",
        task_id="tid",
        thread_id="t",
        run_id="7",
        node_first_attempt_time=1.5,
    )
    assert built == Runtime(
        context=base.context, control=base.control, previous="prev", execution_info=info
    )
    with pytest.raises(AttributeError):
        built.context = None  # type: ignore[misc]
