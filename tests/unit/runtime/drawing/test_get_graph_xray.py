"""``get_graph(xray=...)`` inlines subgraphs as LangGraph does, for LangGraph's own tests.

Named after the upstream tests (langgraph 1.2.22 tests/test_pregel.py and
test_large_cases.py); each asserts the snapshot text and that LangGraph draws the same.
Upstream states use ``add_messages``; ``operator.add`` stands in (a reducer does not change
a drawing).
"""

from __future__ import annotations

import operator
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

import pytest

from .oracle import FRONT, STYLES, edge, fn_node, graph_node, same_as_langgraph


class State(TypedDict):
    messages: Annotated[list[Any], operator.add]


class MarketState(TypedDict):
    my_key: Annotated[str, operator.add]
    market: str


def logic(state: Any) -> Any:
    return None


def test_nested_graph_xray() -> None:
    def build(ns: SimpleNamespace) -> Any:
        tool_two_graph = ns.StateGraph(MarketState)
        tool_two_graph.add_node("tool_two_slow", logic)
        tool_two_graph.add_node("tool_two_fast", logic)
        tool_two_graph.set_conditional_entry_point(
            lambda s: "tool_two_slow" if s["market"] == "DE" else "tool_two_fast",
            ["tool_two_slow", "tool_two_fast"],
        )
        graph = ns.StateGraph(MarketState)
        graph.add_node("tool_one", logic)
        graph.add_node("tool_two", tool_two_graph.compile())
        graph.add_node("tool_three", logic)
        graph.set_conditional_entry_point(
            lambda s: "tool_one", ["tool_one", "tool_two", "tool_three"]
        )
        return graph.compile()

    drawn = same_as_langgraph(build, xray=True)
    assert drawn.to_json() == {
        "nodes": [
            fn_node("__start__"),
            fn_node("tool_one"),
            fn_node("tool_three"),
            {"id": "__end__"},
            fn_node("tool_two:__start__"),
            fn_node("tool_two:tool_two_slow"),
            fn_node("tool_two:tool_two_fast"),
            {"id": "tool_two:__end__"},
        ],
        "edges": [
            edge("__start__", "tool_one", cond=True),
            edge("__start__", "tool_three", cond=True),
            edge("__start__", "tool_two:__start__", cond=True),
            edge("tool_one", "__end__"),
            edge("tool_three", "__end__"),
            edge("tool_two:__end__", "__end__"),
            edge("tool_two:__start__", "tool_two:tool_two_fast", cond=True),
            edge("tool_two:__start__", "tool_two:tool_two_slow", cond=True),
            edge("tool_two:tool_two_fast", "tool_two:__end__"),
            edge("tool_two:tool_two_slow", "tool_two:__end__"),
        ],
    }
    assert drawn.draw_mermaid() == (
        FRONT + "\t__start__([<p>__start__</p>]):::first\n"
        "\ttool_one(tool_one)\n"
        "\ttool_three(tool_three)\n"
        "\t__end__([<p>__end__</p>]):::last\n"
        "\t__start__ -.-> tool_one;\n"
        "\t__start__ -.-> tool_three;\n"
        "\t__start__ -.-> tool_two\\3a__start__;\n"
        "\ttool_one --> __end__;\n"
        "\ttool_three --> __end__;\n"
        "\ttool_two\\3a__end__ --> __end__;\n"
        "\tsubgraph tool_two\n"
        "\ttool_two\\3a__start__(<p>__start__</p>)\n"
        "\ttool_two\\3atool_two_slow(tool_two_slow)\n"
        "\ttool_two\\3atool_two_fast(tool_two_fast)\n"
        "\ttool_two\\3a__end__(<p>__end__</p>)\n"
        "\ttool_two\\3a__start__ -.-> tool_two\\3atool_two_fast;\n"
        "\ttool_two\\3a__start__ -.-> tool_two\\3atool_two_slow;\n"
        "\ttool_two\\3atool_two_fast --> tool_two\\3a__end__;\n"
        "\ttool_two\\3atool_two_slow --> tool_two\\3a__end__;\n"
        "\tend\n" + STYLES
    )


class InnerState(TypedDict):
    my_key: str
    my_other_key: str


class OuterState(TypedDict):
    my_key: str
    never_called: Any


def test_nested_graph() -> None:
    def build(ns: SimpleNamespace) -> Any:
        inner = ns.StateGraph(InnerState)
        inner.add_node("up", logic)
        inner.set_entry_point("up")
        inner.set_finish_point("up")
        graph = ns.StateGraph(OuterState)
        graph.add_node("inner", inner.compile())
        graph.add_node("side", logic)
        graph.set_entry_point("inner")
        graph.add_edge("inner", "side")
        graph.set_finish_point("side")
        return graph.compile()

    assert same_as_langgraph(build).draw_mermaid(with_styles=False) == (
        "graph TD;\n\t__start__ --> inner;\n\tinner --> side;\n\tside --> __end__;\n"
    )
    assert same_as_langgraph(build, xray=True).draw_mermaid() == (
        FRONT + "\t__start__([<p>__start__</p>]):::first\n"
        "\tside(side)\n"
        "\t__end__([<p>__end__</p>]):::last\n"
        "\t__start__ --> inner\\3aup;\n"
        "\tinner\\3aup --> side;\n"
        "\tside --> __end__;\n"
        "\tsubgraph inner\n"
        "\tinner\\3aup(up)\n"
        "\tend\n" + STYLES
    )


class InterviewState(TypedDict):
    messages: Annotated[list[Any], operator.add]
    analyst: Any
    section: Any


class ResearchGraphState(TypedDict):
    analysts: list[Any]
    topic: str
    max_analysts: int
    sections: list[Any]
    interviews: Annotated[list[Any], operator.add]


def test_xray_lance() -> None:
    def route_messages(state: InterviewState) -> str:
        return "ask_question"

    def interview(ns: SimpleNamespace) -> Any:
        builder = ns.StateGraph(InterviewState)
        builder.add_node("ask_question", logic)
        builder.add_node("answer_question", logic)
        builder.add_edge(ns.START, "ask_question")
        builder.add_edge("ask_question", "answer_question")
        builder.add_conditional_edges("answer_question", route_messages, ["ask_question", ns.END])
        return builder.compile()

    def build(ns: SimpleNamespace) -> Any:
        def run_all_interviews(state: ResearchGraphState) -> list[Any]:
            return [ns.Send("conduct_interview", {}) for _ in state["analysts"]]

        builder = ns.StateGraph(ResearchGraphState)
        builder.add_node("generate_analysts", logic)
        builder.add_node("conduct_interview", interview(ns))
        builder.add_node("generate_sections", logic)
        builder.add_edge(ns.START, "generate_analysts")
        builder.add_conditional_edges(
            "generate_analysts", run_all_interviews, ["conduct_interview"]
        )
        builder.add_edge("conduct_interview", "generate_sections")
        builder.add_edge("generate_sections", ns.END)
        return builder.compile()

    # Upstream draws the interview graph after .with_config(run_name=...), which does not
    # change its drawing.
    assert same_as_langgraph(interview).to_json() == {
        "nodes": [
            fn_node("__start__"),
            fn_node("ask_question"),
            fn_node("answer_question"),
            {"id": "__end__"},
        ],
        "edges": [
            edge("__start__", "ask_question"),
            edge("answer_question", "__end__", cond=True),
            edge("answer_question", "ask_question", cond=True),
            edge("ask_question", "answer_question"),
        ],
    }
    assert same_as_langgraph(build).to_json() == {
        "nodes": [
            fn_node("__start__"),
            fn_node("generate_analysts"),
            graph_node("conduct_interview"),
            fn_node("generate_sections"),
            {"id": "__end__"},
        ],
        "edges": [
            edge("__start__", "generate_analysts"),
            edge("conduct_interview", "generate_sections"),
            edge("generate_analysts", "conduct_interview", cond=True),
            edge("generate_sections", "__end__"),
        ],
    }
    assert same_as_langgraph(build, xray=1).to_json() == {
        "nodes": [
            fn_node("__start__"),
            fn_node("generate_analysts"),
            fn_node("generate_sections"),
            {"id": "__end__"},
            fn_node("conduct_interview:__start__"),
            fn_node("conduct_interview:ask_question"),
            fn_node("conduct_interview:answer_question"),
            {"id": "conduct_interview:__end__"},
        ],
        "edges": [
            edge("__start__", "generate_analysts"),
            edge("conduct_interview:__end__", "generate_sections"),
            edge("generate_analysts", "conduct_interview:__start__", cond=True),
            edge("generate_sections", "__end__"),
            edge("conduct_interview:__start__", "conduct_interview:ask_question"),
            edge("conduct_interview:answer_question", "conduct_interview:__end__", cond=True),
            edge("conduct_interview:answer_question", "conduct_interview:ask_question", cond=True),
            edge("conduct_interview:ask_question", "conduct_interview:answer_question"),
        ],
    }


def _loop_graph(ns: SimpleNamespace, one: str, two: str, two_node: Any) -> Any:
    """``one`` loops through ``two`` until its router says "1" (END)."""
    builder = ns.StateGraph(State)
    builder.add_node(one, logic)
    builder.add_node(two, two_node)
    builder.add_edge("__start__", one)
    builder.add_edge(two, one)
    builder.add_conditional_edges(one, lambda x: "1", {"0": two, "1": "__end__"})
    return builder


def test_xray_issue() -> None:
    def build(ns: SimpleNamespace) -> Any:
        child = _loop_graph(ns, "c_one", "c_two", logic).compile()
        return _loop_graph(ns, "p_one", "p_two", child).compile()

    assert same_as_langgraph(build, xray=True).draw_mermaid() == (
        FRONT + "\t__start__([<p>__start__</p>]):::first\n"
        "\tp_one(p_one)\n"
        "\t__end__([<p>__end__</p>]):::last\n"
        "\t__start__ --> p_one;\n"
        "\tp_one -. &nbsp;1&nbsp; .-> __end__;\n"
        "\tp_one -. &nbsp;0&nbsp; .-> p_two\\3a__start__;\n"
        "\tp_two\\3a__end__ --> p_one;\n"
        "\tsubgraph p_two\n"
        "\tp_two\\3a__start__(<p>__start__</p>)\n"
        "\tp_two\\3ac_one(c_one)\n"
        "\tp_two\\3ac_two(c_two)\n"
        "\tp_two\\3a__end__(<p>__end__</p>)\n"
        "\tp_two\\3a__start__ --> p_two\\3ac_one;\n"
        "\tp_two\\3ac_one -. &nbsp;1&nbsp; .-> p_two\\3a__end__;\n"
        "\tp_two\\3ac_one -. &nbsp;0&nbsp; .-> p_two\\3ac_two;\n"
        "\tp_two\\3ac_two --> p_two\\3ac_one;\n"
        "\tend\n" + STYLES
    )


def test_xray_bool() -> None:
    def build(ns: SimpleNamespace) -> Any:
        child = _loop_graph(ns, "c_one", "c_two", logic).compile()
        parent = _loop_graph(ns, "p_one", "p_two", child).compile()
        return _loop_graph(ns, "gp_one", "gp_two", parent).compile()

    assert same_as_langgraph(build, xray=True).draw_mermaid() == (
        FRONT + "\t__start__([<p>__start__</p>]):::first\n"
        "\tgp_one(gp_one)\n"
        "\t__end__([<p>__end__</p>]):::last\n"
        "\t__start__ --> gp_one;\n"
        "\tgp_one -. &nbsp;1&nbsp; .-> __end__;\n"
        "\tgp_one -. &nbsp;0&nbsp; .-> gp_two\\3a__start__;\n"
        "\tgp_two\\3a__end__ --> gp_one;\n"
        "\tsubgraph gp_two\n"
        "\tgp_two\\3a__start__(<p>__start__</p>)\n"
        "\tgp_two\\3ap_one(p_one)\n"
        "\tgp_two\\3a__end__(<p>__end__</p>)\n"
        "\tgp_two\\3a__start__ --> gp_two\\3ap_one;\n"
        "\tgp_two\\3ap_one -. &nbsp;1&nbsp; .-> gp_two\\3a__end__;\n"
        "\tgp_two\\3ap_one -. &nbsp;0&nbsp; .-> gp_two\\3ap_two\\3a__start__;\n"
        "\tgp_two\\3ap_two\\3a__end__ --> gp_two\\3ap_one;\n"
        "\tsubgraph p_two\n"
        "\tgp_two\\3ap_two\\3a__start__(<p>__start__</p>)\n"
        "\tgp_two\\3ap_two\\3ac_one(c_one)\n"
        "\tgp_two\\3ap_two\\3ac_two(c_two)\n"
        "\tgp_two\\3ap_two\\3a__end__(<p>__end__</p>)\n"
        "\tgp_two\\3ap_two\\3a__start__ --> gp_two\\3ap_two\\3ac_one;\n"
        "\tgp_two\\3ap_two\\3ac_one -. &nbsp;1&nbsp; .-> gp_two\\3ap_two\\3a__end__;\n"
        "\tgp_two\\3ap_two\\3ac_one -. &nbsp;0&nbsp; .-> gp_two\\3ap_two\\3ac_two;\n"
        "\tgp_two\\3ap_two\\3ac_two --> gp_two\\3ap_two\\3ac_one;\n"
        "\tend\n"
        "\tend\n" + STYLES
    )


@pytest.mark.parametrize("xray", [1, 2, True])
def test_xray_depth(xray: int | bool) -> None:
    # Not upstream: xray=n inlines n levels of the three-level graph of test_xray_bool.
    def build(ns: SimpleNamespace) -> Any:
        child = _loop_graph(ns, "c_one", "c_two", logic).compile()
        parent = _loop_graph(ns, "p_one", "p_two", child).compile()
        return _loop_graph(ns, "gp_one", "gp_two", parent).compile()

    drawn = same_as_langgraph(build, xray=xray)
    inlined = any(node_id.startswith("gp_two:p_two:") for node_id in drawn.nodes)
    assert inlined == (xray is True or xray >= 2)


def test_multiple_sinks_subgraphs() -> None:
    def build(ns: SimpleNamespace) -> Any:
        sub = ns.StateGraph(State)
        sub.add_node("one", lambda x: x)
        sub.add_node("two", lambda x: x)
        sub.add_node("three", lambda x: x)
        sub.add_edge("__start__", "one")
        sub.add_conditional_edges("one", lambda x: "two", ["two", "three"])
        builder = ns.StateGraph(State)
        builder.add_node("uno", lambda x: x)
        builder.add_node("dos", lambda x: x)
        builder.add_node("subgraph", sub.compile())
        builder.add_edge("__start__", "uno")
        builder.add_conditional_edges("uno", lambda x: "dos", ["dos", "subgraph"])
        return builder.compile()

    assert same_as_langgraph(build, xray=True).draw_mermaid() == (
        FRONT + "\t__start__([<p>__start__</p>]):::first\n"
        "\tuno(uno)\n"
        "\tdos(dos)\n"
        "\t__end__([<p>__end__</p>]):::last\n"
        "\t__start__ --> uno;\n"
        "\tuno -.-> dos;\n"
        "\tuno -.-> subgraph\\3aone;\n"
        "\tdos --> __end__;\n"
        "\tsubgraph\\3a__end__ --> __end__;\n"
        "\tsubgraph subgraph\n"
        "\tsubgraph\\3aone(one)\n"
        "\tsubgraph\\3atwo(two)\n"
        "\tsubgraph\\3athree(three)\n"
        "\tsubgraph\\3a__end__(<p>__end__</p>)\n"
        "\tsubgraph\\3aone -.-> subgraph\\3athree;\n"
        "\tsubgraph\\3aone -.-> subgraph\\3atwo;\n"
        "\tsubgraph\\3athree --> subgraph\\3a__end__;\n"
        "\tsubgraph\\3atwo --> subgraph\\3a__end__;\n"
        "\tend\n" + STYLES
    )


class SubGraphState(State):
    city: str


class RouterState(State):
    route: str


def test_weather_subgraph() -> None:
    # The subgraph is called from inside a node function, and interrupts before a node.
    def build(ns: SimpleNamespace) -> Any:
        sub = ns.StateGraph(SubGraphState)
        sub.add_node("model_node", logic)
        sub.add_node("weather_node", logic)
        sub.add_edge(ns.START, "model_node")
        sub.add_edge("model_node", "weather_node")
        sub.add_edge("weather_node", ns.END)
        subgraph = sub.compile(interrupt_before=["weather_node"])

        def route_after_prediction(state: RouterState) -> str:
            return "weather_graph" if state["route"] == "weather" else "normal_llm_node"

        def weather_graph(state: RouterState) -> Any:
            return subgraph.invoke(state)

        graph = ns.StateGraph(RouterState)
        graph.add_node("router_node", logic)
        graph.add_node("normal_llm_node", logic)
        graph.add_node("weather_graph", weather_graph)
        graph.add_edge(ns.START, "router_node")
        graph.add_conditional_edges(
            "router_node", route_after_prediction, path_map=["weather_graph", "normal_llm_node"]
        )
        graph.add_edge("normal_llm_node", ns.END)
        graph.add_edge("weather_graph", ns.END)
        return graph.compile()

    assert same_as_langgraph(build, xray=1).draw_mermaid() == (
        FRONT + "\t__start__([<p>__start__</p>]):::first\n"
        "\trouter_node(router_node)\n"
        "\tnormal_llm_node(normal_llm_node)\n"
        "\t__end__([<p>__end__</p>]):::last\n"
        "\t__start__ --> router_node;\n"
        "\trouter_node -.-> normal_llm_node;\n"
        "\trouter_node -.-> weather_graph\\3amodel_node;\n"
        "\tnormal_llm_node --> __end__;\n"
        "\tweather_graph\\3aweather_node --> __end__;\n"
        "\tsubgraph weather_graph\n"
        "\tweather_graph\\3amodel_node(model_node)\n"
        "\tweather_graph\\3aweather_node(weather_node<hr/><small><em>__interrupt = before"
        "</em></small>)\n"
        "\tweather_graph\\3amodel_node --> weather_graph\\3aweather_node;\n"
        "\tend\n" + STYLES
    )
