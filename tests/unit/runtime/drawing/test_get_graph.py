"""``get_graph()`` draws what LangGraph draws, for the graphs of LangGraph's own tests.

Each test is named after the upstream test (tests/test_pregel.py, test_pregel_async.py,
test_large_cases.py of langgraph 1.2.22) whose snapshot it reproduces: it builds the same
graph with graphruntime, asserts the snapshot text exactly, and builds it once more with
LangGraph to check every output (JSON, Mermaid with and without styles, ASCII, the edge
list) is identical. Where the upstream graph uses something graphruntime has no
counterpart for (``add_messages``, a root-channel ``StateGraph(list)``, a langchain
Runnable as a node) the test swaps in the nearest equivalent that draws the same graph, and
says so.
"""

from __future__ import annotations

import asyncio
import json
import operator
from types import SimpleNamespace
from typing import Annotated, Any, Literal, TypedDict

import pytest
from pydantic import BaseModel

from graphruntime.drawing import Edge

from .oracle import FRONT, GR, LG, STYLES, edge, fn_node, graph_node, returns, same_as_langgraph


def noop(state: Any) -> Any:
    return None


# --- tests/test_pregel.py ------------------------------------------------------------------


class OverallState(TypedDict):
    locations: list[str]
    results: Annotated[list[str], operator.add]


def test_conditional_entrypoint_to_multiple_state_graph() -> None:
    def build(ns: SimpleNamespace) -> Any:
        def continue_to_weather(state: OverallState) -> list[Any]:
            return [ns.Send("get_weather", {"location": x}) for x in state["locations"]]

        workflow = ns.StateGraph(OverallState)
        workflow.add_node("get_weather", noop)
        workflow.add_edge("get_weather", ns.END)
        workflow.set_conditional_entry_point(continue_to_weather, path_map=["get_weather"])
        return workflow.compile()

    drawn = same_as_langgraph(build)
    assert json.dumps(drawn.to_json(), indent=2) == json.dumps(
        {
            "nodes": [fn_node("__start__"), fn_node("get_weather"), {"id": "__end__"}],
            "edges": [
                edge("__start__", "get_weather", cond=True),
                edge("get_weather", "__end__"),
            ],
        },
        indent=2,
    )
    assert drawn.draw_mermaid(with_styles=False) == (
        "graph TD;\n\t__start__ -.-> get_weather;\n\tget_weather --> __end__;\n"
    )


class ListEdgeState(TypedDict):
    foo: Annotated[list[str], operator.add]


def test_conditional_state_graph_with_list_edge_inputs() -> None:
    def build(ns: SimpleNamespace) -> Any:
        builder = ns.StateGraph(ListEdgeState)
        builder.add_node("A", lambda x: {"foo": ["A"]})
        builder.add_node("B", lambda x: {"foo": ["B"]})
        builder.add_edge(ns.START, "A")
        builder.add_edge(ns.START, "B")
        builder.add_edge(["A", "B"], ns.END)
        return builder.compile()

    drawn = same_as_langgraph(build)
    assert json.dumps(drawn.to_json(), indent=2) == json.dumps(
        {
            "nodes": [fn_node("__start__"), fn_node("A"), fn_node("B"), {"id": "__end__"}],
            "edges": [
                edge("__start__", "A"),
                edge("__start__", "B"),
                edge("A", "__end__"),
                edge("B", "__end__"),
            ],
        },
        indent=2,
    )
    assert drawn.draw_mermaid(with_styles=False) == (
        "graph TD;\n\t__start__ --> A;\n\t__start__ --> B;\n\tA --> __end__;\n\tB --> __end__;\n"
    )


class EntryState(TypedDict, total=False):
    input: str
    output: str
    steps: Annotated[list[str], operator.add]


def test_conditional_entrypoint_graph_state() -> None:
    def should_start(data: EntryState) -> str:
        return "go-right" if len(data["input"]) > 10 else "go-left"

    def build(ns: SimpleNamespace) -> Any:
        workflow = ns.StateGraph(EntryState)
        workflow.add_node("left", noop)
        workflow.add_node("right", noop)
        workflow.set_conditional_entry_point(should_start, {"go-left": "left", "go-right": "right"})
        workflow.add_conditional_edges("left", lambda data: ns.END, {ns.END: ns.END})
        workflow.add_edge("right", ns.END)
        return workflow.compile()

    drawn = same_as_langgraph(build)
    assert json.dumps(drawn.to_json(), indent=2) == json.dumps(
        {
            "nodes": [
                fn_node("__start__"),
                fn_node("left"),
                fn_node("right"),
                {"id": "__end__"},
            ],
            "edges": [
                edge("__start__", "left", "go-left", cond=True),
                edge("__start__", "right", "go-right", cond=True),
                edge("left", "__end__", cond=True),
                edge("right", "__end__"),
            ],
        },
        indent=2,
    )
    assert drawn.draw_mermaid(with_styles=False) == (
        "graph TD;\n"
        "\t__start__ -. &nbsp;go-left&nbsp; .-> left;\n"
        "\t__start__ -. &nbsp;go-right&nbsp; .-> right;\n"
        "\tleft -.-> __end__;\n"
        "\tright --> __end__;\n"
    )


class FanOutState(TypedDict, total=False):
    query: str
    answer: str
    docs: Annotated[list[str], operator.add]


FAN_OUT = ["rewrite_query", "analyzer_one", "retriever_one", "retriever_two", "qa"]


def test_in_one_fan_out_state_graph_waiting_edge() -> None:
    def build(ns: SimpleNamespace) -> Any:
        workflow = ns.StateGraph(FanOutState)
        for name in FAN_OUT:
            workflow.add_node(name, noop)
        workflow.set_entry_point("rewrite_query")
        workflow.add_edge("rewrite_query", "analyzer_one")
        workflow.add_edge("analyzer_one", "retriever_one")
        workflow.add_edge("rewrite_query", "retriever_two")
        workflow.add_edge(["retriever_one", "retriever_two"], "qa")
        workflow.set_finish_point("qa")
        return workflow.compile()

    assert same_as_langgraph(build).draw_mermaid(with_styles=False) == (
        "graph TD;\n"
        "\t__start__ --> rewrite_query;\n"
        "\tanalyzer_one --> retriever_one;\n"
        "\tretriever_one --> qa;\n"
        "\tretriever_two --> qa;\n"
        "\trewrite_query --> analyzer_one;\n"
        "\trewrite_query --> retriever_two;\n"
        "\tqa --> __end__;\n"
    )


@pytest.mark.parametrize("use_waiting_edge", [False, True])
def test_in_one_fan_out_state_graph_defer_node(use_waiting_edge: bool) -> None:
    def build(ns: SimpleNamespace) -> Any:
        workflow = ns.StateGraph(FanOutState)
        for name in FAN_OUT:
            workflow.add_node(name, noop, defer=name == "qa")
        workflow.set_entry_point("rewrite_query")
        workflow.add_edge("rewrite_query", "retriever_one")
        workflow.add_edge("retriever_one", "analyzer_one")
        workflow.add_edge("rewrite_query", "retriever_two")
        if use_waiting_edge:
            workflow.add_edge(["retriever_one", "retriever_two"], "qa")
        else:
            workflow.add_edge("retriever_one", "qa")
            workflow.add_edge("retriever_two", "qa")
        workflow.set_finish_point("qa")
        return workflow.compile()

    drawn = same_as_langgraph(build)
    assert drawn.draw_mermaid(with_styles=False) == (
        "graph TD;\n"
        "\t__start__ --> rewrite_query;\n"
        "\tanalyzer_one -.-> qa;\n"
        "\tretriever_one --> analyzer_one;\n"
        "\tretriever_one --> qa;\n"
        "\tretriever_two --> qa;\n"
        "\trewrite_query --> retriever_one;\n"
        "\trewrite_query --> retriever_two;\n"
        "\tqa --> __end__;\n"
    )
    assert drawn.nodes["qa"].metadata == {"defer": True}


def test_in_one_fan_out_state_graph_waiting_edge_via_branch() -> None:
    def rewrite_query_then(data: FanOutState) -> Literal["retriever_two"]:
        return "retriever_two"

    def build(ns: SimpleNamespace) -> Any:
        workflow = ns.StateGraph(FanOutState)
        for name in FAN_OUT:
            workflow.add_node(name, noop)
        workflow.set_entry_point("rewrite_query")
        workflow.add_edge("rewrite_query", "analyzer_one")
        workflow.add_edge("analyzer_one", "retriever_one")
        workflow.add_conditional_edges("rewrite_query", rewrite_query_then)
        workflow.add_edge(["retriever_one", "retriever_two"], "qa")
        workflow.set_finish_point("qa")
        return workflow.compile()

    assert same_as_langgraph(build).draw_mermaid(with_styles=False) == VIA_BRANCH


VIA_BRANCH = (
    "graph TD;\n"
    "\t__start__ --> rewrite_query;\n"
    "\tanalyzer_one --> retriever_one;\n"
    "\tretriever_one --> qa;\n"
    "\tretriever_two --> qa;\n"
    "\trewrite_query --> analyzer_one;\n"
    "\trewrite_query -.-> retriever_two;\n"
    "\tqa --> __end__;\n"
)


class InnerObject(BaseModel):
    yo: int


class PydanticState(BaseModel):
    query: str
    inner: Annotated[InnerObject, lambda x, y: y]
    answer: str | None = None
    docs: Annotated[list[str], operator.add]


class PydanticInput(BaseModel):
    query: str
    inner: InnerObject


class PydanticOutput(BaseModel):
    answer: str
    docs: list[str]


def test_in_one_fan_out_state_graph_waiting_edge_custom_state_class_pydantic2() -> None:
    # test_pregel.py and test_pregel_async.py share this snapshot text.
    def decider(data: PydanticState) -> str:
        return "retriever_two"

    def build(ns: SimpleNamespace) -> Any:
        workflow = ns.StateGraph(
            PydanticState, input_schema=PydanticInput, output_schema=PydanticOutput
        )
        for name in FAN_OUT:
            workflow.add_node(name, noop)
        workflow.set_entry_point("rewrite_query")
        workflow.add_edge("rewrite_query", "analyzer_one")
        workflow.add_edge("analyzer_one", "retriever_one")
        workflow.add_conditional_edges("rewrite_query", decider, {"retriever_two": "retriever_two"})
        workflow.add_edge(["retriever_one", "retriever_two"], "qa")
        workflow.set_finish_point("qa")
        return workflow.compile()

    assert same_as_langgraph(build).draw_mermaid(with_styles=False) == VIA_BRANCH


class MultiEdgeState(TypedDict):
    my_key: Annotated[str, operator.add]


def test_simple_multi_edge() -> None:
    def build(ns: SimpleNamespace) -> Any:
        graph = ns.StateGraph(MultiEdgeState)
        for name in ("up", "side", "other", "down"):
            graph.add_node(name, noop)
        graph.set_entry_point("up")
        graph.add_edge("up", "side")
        graph.add_edge("up", "other")
        graph.add_edge(["up", "side"], "down")
        graph.set_finish_point("down")
        return graph.compile()

    assert same_as_langgraph(build).draw_mermaid(with_styles=False) == (
        "graph TD;\n"
        "\t__start__ --> up;\n"
        "\tside --> down;\n"
        "\tup --> down;\n"
        "\tup --> other;\n"
        "\tup --> side;\n"
        "\tdown --> __end__;\n"
        "\tother --> __end__;\n"
    )


class RepeatState(TypedDict):
    hello: str


def test_repeat_condition() -> None:
    def router(state: RepeatState) -> str:
        return "hmm"

    def build(ns: SimpleNamespace) -> Any:
        workflow = ns.StateGraph(RepeatState)
        workflow.add_node("Researcher", lambda x: x)
        workflow.add_node("Chart Generator", lambda x: x)
        workflow.add_node("Call Tool", lambda x: x)
        workflow.add_conditional_edges(
            "Researcher",
            router,
            {
                "redo": "Researcher",
                "continue": "Chart Generator",
                "call_tool": "Call Tool",
                "end": ns.END,
            },
        )
        workflow.add_conditional_edges(
            "Chart Generator",
            router,
            {"continue": "Researcher", "call_tool": "Call Tool", "end": ns.END},
        )
        workflow.add_conditional_edges(
            "Call Tool",
            lambda x: x["sender"],
            {"Researcher": "Researcher", "Chart Generator": "Chart Generator"},
        )
        workflow.set_entry_point("Researcher")
        return workflow.compile()

    assert same_as_langgraph(build).draw_mermaid(with_styles=False) == (
        "graph TD;\n"
        "\tCall\\20Tool -.-> Chart\\20Generator;\n"
        "\tCall\\20Tool -.-> Researcher;\n"
        "\tChart\\20Generator -. &nbsp;call_tool&nbsp; .-> Call\\20Tool;\n"
        "\tChart\\20Generator -. &nbsp;continue&nbsp; .-> Researcher;\n"
        "\tChart\\20Generator -. &nbsp;end&nbsp; .-> __end__;\n"
        "\tResearcher -. &nbsp;call_tool&nbsp; .-> Call\\20Tool;\n"
        "\tResearcher -. &nbsp;continue&nbsp; .-> Chart\\20Generator;\n"
        "\tResearcher -. &nbsp;end&nbsp; .-> __end__;\n"
        "\t__start__ --> Researcher;\n"
        "\tResearcher -. &nbsp;redo&nbsp; .-> Researcher;\n"
    )


class PassthroughState(TypedDict):
    changeme: str


def test_runnable_passthrough_node_graph() -> None:
    # Upstream the node is a langchain Runnable chain; graphruntime nodes are functions.
    async def dummy(state: PassthroughState) -> PassthroughState:
        return state

    def build(ns: SimpleNamespace) -> Any:
        builder = ns.StateGraph(PassthroughState)
        builder.add_node("agent", dummy)
        builder.add_edge(ns.START, "agent")
        return builder.compile()

    graph = build(GR)
    assert graph.get_graph(xray=True).to_json() == graph.get_graph(xray=False).to_json()
    same_as_langgraph(build, xray=True)


class DestState(TypedDict):
    foo: Annotated[str, operator.add]


@pytest.mark.parametrize("as_function", [False, True], ids=["subgraph", "call_subgraph"])
def test_node_destinations(as_function: bool) -> None:
    def build(ns: SimpleNamespace, destinations: Any) -> Any:
        def node_a(state: DestState) -> Any:
            return ns.Command(update={"foo": "a"}, goto="node_b", graph=ns.Command.PARENT)

        sub = ns.StateGraph(DestState).add_node(node_a).add_edge(ns.START, "node_a").compile()

        def call_subgraph(state: DestState) -> Any:
            return sub.invoke(state)

        def node_b(state: DestState) -> Any:
            return {"foo": "b"}

        def node_c(state: DestState) -> Any:
            return {"foo": "c"}

        builder = ns.StateGraph(DestState)
        builder.add_edge(ns.START, "child")
        builder.add_node("child", call_subgraph if as_function else sub, destinations=destinations)
        builder.add_node(node_b)
        builder.add_node(node_c)
        return builder.compile()

    tuples = same_as_langgraph(lambda ns: build(ns, ("node_b", "node_c")))
    assert tuples.edges == [
        Edge(source="__start__", target="child", data=None, conditional=False),
        Edge(source="child", target="node_b", data=None, conditional=True),
        Edge(source="child", target="node_c", data=None, conditional=True),
        Edge(source="node_b", target="__end__", data=None, conditional=False),
        Edge(source="node_c", target="__end__", data=None, conditional=False),
    ]
    labelled = same_as_langgraph(lambda ns: build(ns, {"node_b": "foo", "node_c": "bar"}))
    assert labelled.edges == [
        Edge(source="__start__", target="child", data=None, conditional=False),
        Edge(source="child", target="node_b", data="foo", conditional=True),
        Edge(source="child", target="node_c", data="bar", conditional=True),
        Edge(source="node_b", target="__end__", data=None, conditional=False),
        Edge(source="node_c", target="__end__", data=None, conditional=False),
    ]


class DummyState(BaseModel):
    pass_count: int = 0


def test_migration_graph() -> None:
    def route_b(state: DummyState) -> str:
        return "X" if state.pass_count == 0 else "Y"

    def build(ns: SimpleNamespace) -> Any:
        graph = ns.StateGraph(DummyState)
        for name in ("B", "C", "D"):
            graph.add_node(name, noop)
        graph.add_edge(ns.START, "B")
        graph.add_conditional_edges("B", route_b, {"X": "C", "Y": "D"})
        graph.add_edge("D", "B")
        graph.add_edge("C", ns.END)
        return graph.compile()

    assert same_as_langgraph(build).draw_mermaid(with_styles=False) == (
        "graph TD;\n"
        "\tB -. &nbsp;X&nbsp; .-> C;\n"
        "\tB -. &nbsp;Y&nbsp; .-> D;\n"
        "\tD --> B;\n"
        "\t__start__ --> B;\n"
        "\tC --> __end__;\n"
    )


class LoopState(TypedDict):
    foo: str


def test_get_graph_loop() -> None:
    def build(ns: SimpleNamespace) -> Any:
        workflow = ns.StateGraph(LoopState)
        workflow.add_node("human", noop)
        workflow.add_node("agent", noop)
        workflow.add_edge(ns.START, "human")
        workflow.add_edge("human", "agent")
        workflow.add_edge("agent", "human")
        return workflow.compile()

    drawn = same_as_langgraph(build)
    assert json.dumps(drawn.to_json(), indent=2) == json.dumps(
        {
            "nodes": [
                fn_node("__start__"),
                fn_node("human"),
                fn_node("agent"),
                {"id": "__end__"},
            ],
            "edges": [
                edge("__start__", "human"),
                edge("agent", "human"),
                edge("human", "agent"),
                edge("agent", "__end__", cond=True),
            ],
        },
        indent=2,
    )
    assert drawn.draw_mermaid(with_styles=False) == (
        "graph TD;\n"
        "\t__start__ --> human;\n"
        "\tagent --> human;\n"
        "\thuman --> agent;\n"
        "\tagent -.-> __end__;\n"
    )


class MessagesState(TypedDict):
    # Upstream: langgraph's MessagesState (add_messages); the reducer does not change a drawing.
    messages: Annotated[list[Any], operator.add]


def test_get_graph_self_loop() -> None:
    def build(ns: SimpleNamespace) -> Any:
        sub_builder = ns.StateGraph(MessagesState)
        sub_builder.add_node("agent", lambda x: x)
        sub_builder.add_edge(ns.START, "agent")
        sub = sub_builder.compile()

        def worker_node(state: MessagesState) -> Any:
            return ns.Command(update=sub.invoke(state), goto=ns.END)

        returns(worker_node, ns.Command[Literal["worker_node", "__end__"]])
        builder = ns.StateGraph(MessagesState)
        builder.add_node("worker_node", worker_node)
        builder.add_edge(ns.START, "worker_node")
        return builder.compile()

    drawn = same_as_langgraph(build)
    assert json.dumps(drawn.to_json(), indent=2) == json.dumps(
        {
            "nodes": [fn_node("__start__"), fn_node("worker_node"), {"id": "__end__"}],
            "edges": [
                edge("__start__", "worker_node"),
                edge("worker_node", "__end__", cond=True),
                edge("worker_node", "worker_node", cond=True),
            ],
        },
        indent=2,
    )
    assert drawn.draw_mermaid(with_styles=False) == (
        "graph TD;\n"
        "\t__start__ --> worker_node;\n"
        "\tworker_node -.-> __end__;\n"
        "\tworker_node -.-> worker_node;\n"
    )


class RootState(TypedDict):
    items: list[Any]


def test_get_graph_root_channel() -> None:
    # Upstream uses StateGraph(list) (a root channel); a one-key state draws the same graph.
    def build(ns: SimpleNamespace) -> Any:
        child_builder = ns.StateGraph(RootState)
        child_builder.add_node("child_node", lambda x: x)
        child_builder.add_edge(ns.START, "child_node")
        builder = ns.StateGraph(RootState)
        builder.add_node("child", child_builder.compile())
        builder.add_edge(ns.START, "child")
        return builder.compile()

    drawn = same_as_langgraph(build)
    assert json.dumps(drawn.to_json(), indent=2) == json.dumps(
        {
            "nodes": [fn_node("__start__"), graph_node("child"), {"id": "__end__"}],
            "edges": [edge("__start__", "child"), edge("child", "__end__")],
        },
        indent=2,
    )
    assert drawn.draw_mermaid(with_styles=False) == (
        "graph TD;\n\t__start__ --> child;\n\tchild --> __end__;\n"
    )


class NonterminalState(TypedDict):
    messages: list[str]


def test_get_graph_nonterminal_last_step_source() -> None:
    def tools_condition(_: NonterminalState) -> str:
        return "tools"

    def end_condition(_: NonterminalState) -> str:
        return "chatbot"

    def build(ns: SimpleNamespace) -> Any:
        workflow = ns.StateGraph(NonterminalState)
        for name in ("chatbot", "tools", "human"):
            workflow.add_node(name, noop)
        workflow.add_edge(ns.START, "human")
        workflow.add_edge("tools", "chatbot")
        workflow.add_conditional_edges(
            "chatbot", tools_condition, {"tools": "tools", "human": "human"}
        )
        workflow.add_conditional_edges(
            "human", end_condition, {"chatbot": "chatbot", ns.END: ns.END}
        )
        return workflow.compile()

    drawn = same_as_langgraph(build)
    assert json.dumps(drawn.to_json(), indent=2, sort_keys=True) == json.dumps(
        {
            "edges": [
                edge("__start__", "human"),
                edge("chatbot", "human", cond=True),
                edge("chatbot", "tools", cond=True),
                edge("human", "__end__", cond=True),
                edge("human", "chatbot", cond=True),
                edge("tools", "chatbot"),
            ],
            "nodes": [
                fn_node("__start__"),
                fn_node("chatbot"),
                fn_node("tools"),
                fn_node("human"),
                {"id": "__end__"},
            ],
        },
        indent=2,
        sort_keys=True,
    )


# --- tests/test_pregel_async.py ------------------------------------------------------------


class InvalidState(TypedDict):
    messages: Annotated[list[Any], operator.add]


def test_draw_invalid() -> None:
    def build(ns: SimpleNamespace) -> Any:
        def should_continue(state: InvalidState) -> Any:
            last = state["messages"][-1]
            return [ns.Send("tool", last), ns.Send("nothing", last)]

        workflow = ns.StateGraph(InvalidState)
        for name in ("agent", "tool", "nothing"):
            workflow.add_node(name, noop)
        workflow.set_entry_point("agent")
        workflow.add_conditional_edges(
            "agent", should_continue, path_map=["tool", "nothing", ns.END]
        )
        workflow.add_edge("tool", "agent")
        return workflow.compile()

    assert same_as_langgraph(build).to_json() == {
        "nodes": [
            fn_node("__start__"),
            fn_node("agent"),
            fn_node("tool"),
            fn_node("nothing"),
            {"id": "__end__"},
        ],
        "edges": [
            {"source": "__start__", "target": "agent"},
            {"source": "agent", "target": "__end__", "conditional": True},
            {"source": "agent", "target": "nothing", "conditional": True},
            {"source": "agent", "target": "tool", "conditional": True},
            {"source": "tool", "target": "agent"},
            {"source": "nothing", "target": "__end__"},
        ],
    }


class ConcurrencyState(TypedDict):
    items: Annotated[list[Any], operator.add]


def test_max_concurrency_control() -> None:
    # Upstream state is StateGraph(Annotated[list, operator.add]), a root channel; the nodes,
    # their Command[Literal[...]] hints and so the drawing are the same with a one-key state.
    def build(ns: SimpleNamespace) -> Any:
        builder = ns.StateGraph(ConcurrencyState)
        builder.add_node("1", returns(lambda state: None, ns.Command[Literal["2"]]))
        builder.add_node("2", returns(lambda state: None, ns.Command[Literal["3"]]))
        builder.add_node("3", lambda state: None)
        builder.add_edge(ns.START, "1")
        return builder.compile()

    assert same_as_langgraph(build).draw_mermaid() == (
        FRONT + "\t__start__([<p>__start__</p>]):::first\n"
        "\t1(1)\n"
        "\t2(2)\n"
        "\t3(3)\n"
        "\t__end__([<p>__end__</p>]):::last\n"
        "\t1 -.-> 2;\n"
        "\t2 -.-> 3;\n"
        "\t__start__ --> 1;\n"
        "\t3 --> __end__;\n" + STYLES
    )


# --- tests/test_large_cases.py -------------------------------------------------------------


class ConditionalAgentState(TypedDict, total=False):
    input: str
    agent_outcome: Any
    intermediate_steps: Annotated[list[Any], operator.add]


def test_conditional_state_graph() -> None:
    # Upstream "agent" is a langchain Runnable chain (its JSON id names RunnableSequence);
    # here it is a function, so only the Mermaid text is compared with the snapshot.
    def should_continue(data: ConditionalAgentState) -> str:
        return "continue"

    def build(ns: SimpleNamespace) -> Any:
        workflow = ns.StateGraph(ConditionalAgentState)
        workflow.add_node("agent", noop)
        workflow.add_node("tools", noop)
        workflow.set_entry_point("agent")
        workflow.add_conditional_edges(
            "agent", should_continue, {"continue": "tools", "exit": ns.END}
        )
        workflow.add_edge("tools", "agent")
        return workflow.compile()

    drawn = same_as_langgraph(build)
    assert drawn.to_json()["edges"] == [
        edge("__start__", "agent"),
        edge("agent", "__end__", "exit", cond=True),
        edge("agent", "tools", "continue", cond=True),
        edge("tools", "agent"),
    ]
    assert drawn.draw_mermaid(with_styles=False) == (
        "graph TD;\n"
        "\t__start__ --> agent;\n"
        "\tagent -. &nbsp;exit&nbsp; .-> __end__;\n"
        "\tagent -. &nbsp;continue&nbsp; .-> tools;\n"
        "\ttools --> agent;\n"
    )


def test_send_react_interrupt_control() -> None:
    # Shared by test_large_cases.py and test_pregel_async.py.
    def build(ns: SimpleNamespace) -> Any:
        def agent(state: MessagesState) -> Any:
            return ns.Command(goto=[ns.Send("foo", {})])

        returns(agent, ns.Command[Literal["foo"]])

        def foo(call: Any) -> Any:
            return {"messages": ["tool"]}

        builder = ns.StateGraph(MessagesState)
        builder.add_node(agent)
        builder.add_node(foo)
        builder.add_edge(ns.START, "agent")
        return builder.compile()

    assert same_as_langgraph(build).draw_mermaid() == (
        FRONT + "\t__start__([<p>__start__</p>]):::first\n"
        "\tagent(agent)\n"
        "\tfoo(foo)\n"
        "\t__end__([<p>__end__</p>]):::last\n"
        "\t__start__ --> agent;\n"
        "\tagent -.-> foo;\n"
        "\tfoo --> __end__;\n" + STYLES
    )


# --- beyond the upstream snapshots ---------------------------------------------------------


class PlainState(TypedDict):
    x: int


@pytest.mark.parametrize(
    ("before", "after"),
    [(["a"], ["a", "b"]), ("*", ["b"]), (["b"], "*"), ([], [])],
)
def test_node_metadata_and_interrupt_labels(before: Any, after: Any) -> None:
    def build(ns: SimpleNamespace) -> Any:
        builder = ns.StateGraph(PlainState)
        builder.add_node("a", noop, metadata={"owner": "me", "tags": ["x", "y"]})
        builder.add_node("b", noop, defer=True)
        builder.add_edge(ns.START, "a")
        builder.add_edge("a", "b")
        return builder.compile(interrupt_before=before, interrupt_after=after)

    drawn = same_as_langgraph(build)
    assert drawn.nodes["a"].metadata["owner"] == "me"
    if before == ["a"]:
        assert drawn.nodes["a"].metadata["__interrupt"] == "before,after"
        assert "owner = me" in drawn.draw_mermaid()


@pytest.mark.parametrize("xray", [False, True])
def test_aget_graph_is_get_graph(xray: bool) -> None:
    def build(ns: SimpleNamespace) -> Any:
        inner = ns.StateGraph(PlainState)
        inner.add_node("i", noop)
        inner.add_edge(ns.START, "i")
        outer = ns.StateGraph(PlainState)
        outer.add_node("sub", inner.compile())
        outer.add_edge(ns.START, "sub")
        return outer.compile()

    graph = build(GR)
    drawn = asyncio.run(graph.aget_graph(xray=xray))
    assert drawn.to_json() == graph.get_graph(xray=xray).to_json()
    assert drawn.to_json() == asyncio.run(build(LG).aget_graph(xray=xray)).to_json()


def test_command_hint_inside_optional_and_on_a_method() -> None:
    class Router:
        def __init__(self, ns: SimpleNamespace) -> None:
            self.ns = ns

        def __call__(self, state: PlainState) -> Any:
            return None

    def build(ns: SimpleNamespace) -> Any:
        def pick(state: PlainState) -> Any:
            return None

        returns(pick, ns.Command[Literal["b", "__end__"]] | None)
        router = Router(ns)
        Router.__call__.__annotations__ = {"return": ns.Command[Literal["a"]]}
        builder = ns.StateGraph(PlainState)
        builder.add_node("a", pick)
        builder.add_node("b", router)
        builder.add_edge(ns.START, "a")
        return builder.compile()

    # `X | None` (types.UnionType) hides the hint from LangGraph, and so from us.
    drawn = same_as_langgraph(build)
    assert ("b", "a") in [(e.source, e.target) for e in drawn.edges]


def test_subgraph_without_checkpointing_is_not_inlined() -> None:
    def build(ns: SimpleNamespace) -> Any:
        inner = ns.StateGraph(PlainState)
        inner.add_node("i1", noop)
        inner.add_node("i2", noop)
        inner.add_edge(ns.START, "i1")
        inner.add_edge("i1", "i2")
        outer = ns.StateGraph(PlainState)
        outer.add_node("sub", inner.compile(checkpointer=False))
        outer.add_edge(ns.START, "sub")
        return outer.compile()

    assert list(same_as_langgraph(build, xray=True).nodes) == ["__start__", "sub", "__end__"]


def test_destinations_name_an_unknown_node() -> None:
    # LangGraph rejects this at compile time; graphruntime's validation does not look at
    # destinations, so the drawing simply has no edge to a node that does not exist.
    builder = GR.StateGraph(PlainState)
    builder.add_node("a", noop, destinations=("ghost",))
    builder.add_edge(GR.START, "a")
    drawn = builder.compile().get_graph()
    assert "ghost" not in drawn.nodes
    assert drawn.edges == [Edge("__start__", "a"), Edge("a", "__end__")]
