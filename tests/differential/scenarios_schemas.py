"""Scenarios: state schemas (TypedDict, dataclass, pydantic), reducers and channel kinds."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from pydantic import BaseModel

from .observe import Recorder
from .registry import scenario
from .runtimes import Runtime


class ChainState(TypedDict):
    text: str
    n: int


class ListState(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    last: str


def _merge_dicts(left: dict[str, int], right: dict[str, int]) -> dict[str, int]:
    return {**left, **right}


class ReducerState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    total: Annotated[int, operator.add]
    seen: Annotated[dict[str, int], _merge_dicts]
    plain: str


class LoopState(TypedDict):
    n: int
    trace: Annotated[list[str], operator.add]


class QuestionIn(TypedDict):
    question: str


class AnswerOut(TypedDict):
    answer: str


class QAState(TypedDict, total=False):
    question: str
    answer: str
    scratch: str


@dataclass
class DataState:
    name: str
    items: Annotated[list[str], operator.add] = field(default_factory=list)
    n: int = 0


class ModelState(BaseModel):
    name: str
    items: Annotated[list[str], operator.add] = []
    n: int = 0


@scenario
def scenario_typeddict_chain(rt: Runtime, rec: Recorder) -> None:
    """TypedDict state through a static chain; a node returning None writes nothing."""

    def a(state: ChainState) -> dict[str, Any]:
        rec.count("a")
        return {"text": state["text"] + "a", "n": 1}

    def b(state: ChainState) -> dict[str, Any]:
        rec.count("b")
        return {"text": state["text"] + "b", "ignored_key": 1}

    def c(state: ChainState) -> None:
        rec.count("c")
        rec.record("c sees", dict(state))

    g = rt.StateGraph(ChainState)
    g.add_node("a", a)
    g.add_node("b", b)
    g.add_node("c", c)
    g.add_edge(rt.START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", rt.END)
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"text": ">"}, cfg))
    rec.record("second input, stream updates", list(app.stream({"text": "#"}, cfg)))
    rec.record("state", app.get_state(cfg))
    rec.record("history length", len(list(app.get_state_history(cfg))))


@scenario
def scenario_dataclass_state(rt: Runtime, rec: Recorder) -> None:
    """Dataclass state: nodes get an instance; dict or instance input; defaults are written."""

    def grow(state: DataState) -> dict[str, Any]:
        rec.count("grow")
        rec.record("node input", state)
        return {"items": [state.name], "n": state.n + 1}

    g = rt.StateGraph(DataState)
    g.add_node("grow", grow)
    g.add_edge(rt.START, "grow")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("dict input", app.invoke({"name": "x"}, cfg))
    rec.record("partial dict input keeps n", app.invoke({"name": "y"}, cfg))
    rec.record("instance input resets n", app.invoke(DataState(name="z"), cfg))
    rec.record("state values", app.get_state(cfg).values)


@scenario
def scenario_pydantic_state(rt: Runtime, rec: Recorder) -> None:
    """Pydantic state: nodes get a model, outputs are plain dicts, bad input fails validation."""

    def grow(state: ModelState) -> dict[str, Any]:
        rec.count("grow")
        rec.record("node input", state)
        return {"items": [state.name], "n": state.n + 1}

    g = rt.StateGraph(ModelState)
    g.add_node("grow", grow)
    g.add_edge(rt.START, "grow")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"name": "x"}, cfg))
    rec.record("stream values", list(app.stream({"name": "y"}, cfg, stream_mode="values")))
    rec.record("state values", app.get_state(cfg).values)
    with rec.expect_error("wrong type"):
        app.invoke({"name": 3}, rec.thread())
    with rec.expect_error("missing required field"):
        app.invoke({}, rec.thread())


@scenario
def scenario_annotated_reducers(rt: Runtime, rec: Recorder) -> None:
    """Annotated reducers fold writes (list add, int add, custom); unset reducers still show."""

    def first(state: ReducerState) -> dict[str, Any]:
        rec.count("first")
        return {"log": ["first"], "total": 2, "seen": {"first": 1}}

    def second(state: ReducerState) -> dict[str, Any]:
        rec.count("second")
        return {"log": ["second"], "total": 3, "seen": {"first": 9, "second": 2}}

    g = rt.StateGraph(ReducerState)
    g.add_node("first", first)
    g.add_node("second", second)
    g.add_edge(rt.START, "first")
    g.add_edge("first", "second")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("empty input shows reducer defaults", app.invoke({}, cfg))
    rec.record("input is folded too", app.invoke({"log": ["input"], "total": 10}, cfg))
    rec.record("stream values", list(app.stream({"plain": "p"}, cfg, stream_mode="values")))


@scenario
def scenario_last_value_conflict(rt: Runtime, rec: Recorder) -> None:
    """Two writes to a LastValue key in one step → InvalidUpdateError; get_state then raises."""

    def left(state: ListState) -> dict[str, Any]:
        rec.count("left")
        return {"last": "left"}

    def right(state: ListState) -> dict[str, Any]:
        rec.count("right")
        return {"last": "right"}

    g = rt.StateGraph(ListState)
    g.add_node("left", left)
    g.add_node("right", right)
    g.add_edge(rt.START, "left")
    g.add_edge(rt.START, "right")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    with rec.expect_error("invoke"):
        app.invoke({"items": ["in"]}, cfg)
    with rec.expect_error("get_state after the conflict"):
        app.get_state(cfg)
    history = list(app.get_state_history(cfg))
    rec.record("history still readable", [(h.metadata or {}).get("step") for h in history])
    # no checkpointer: same error
    plain = g.compile()
    with rec.expect_error("invoke without checkpointer"):
        plain.invoke({})


@scenario
def scenario_reducer_order_is_task_path_order(rt: Runtime, rec: Recorder) -> None:
    """Reducer folding within a step follows node name order, then Send index order."""

    def fan(state: ListState) -> dict[str, Any]:
        rec.count("fan")
        return {"items": ["fan"]}

    def make(name: str) -> Any:
        def node(state: ListState) -> dict[str, Any]:
            rec.count(name)
            return {"items": [name]}

        return node

    def worker(arg: dict[str, Any]) -> dict[str, Any]:
        rec.count("worker")
        return {"items": [f"send-{arg['i']}"]}

    def route(state: ListState) -> list[Any]:
        return ["zeta", "alpha", "mid", *[rt.Send("worker", {"i": i}) for i in (2, 0, 1)]]

    g = rt.StateGraph(ListState)
    g.add_node("fan", fan)
    for name in ("zeta", "mid", "alpha"):
        g.add_node(name, make(name))
    g.add_node("worker", worker)
    g.add_edge(rt.START, "fan")
    g.add_conditional_edges("fan", route)
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"items": []}, cfg))
    rec.record("next after run", app.get_state(cfg).next)
    history = list(app.get_state_history(cfg))
    rec.record("fan-out step: tasks in order", [(t.name, t.path) for t in history[1].tasks])
    rec.record("fan-out step: next", history[1].next)


@scenario
def scenario_named_barrier(rt: Runtime, rec: Recorder) -> None:
    """add_edge([a, b], c) waits for both sources, even when they finish in different steps.

    The run whose history is read uses durability="sync": with LangGraph's default async
    durability the barrier's set can be mutated by the next step before the previous
    checkpoint is serialized, so that checkpoint (randomly) lists c in next.
    """

    def node(name: str) -> Any:
        def run(state: ListState) -> dict[str, Any]:
            rec.count(name)
            return {"items": [name]}

        return run

    g = rt.StateGraph(ListState)
    for name in ("a", "a2", "b", "c"):
        g.add_node(name, node(name))
    g.add_edge(rt.START, "a")
    g.add_edge(rt.START, "b")
    g.add_edge("a", "a2")
    g.add_edge(["a2", "b"], "c")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"items": []}, cfg, durability="sync"))
    rec.record(
        "next per step",
        [h.next for h in reversed(list(app.get_state_history(cfg)))],
    )
    rec.record("second run fires the barrier again", app.invoke({"items": ["again"]}, cfg))


@scenario
def scenario_ephemeral_triggers(rt: Runtime, rec: Recorder) -> None:
    """Triggers are ephemeral: a node runs once per trigger; a loop re-triggers it each step."""

    def tick(state: LoopState) -> dict[str, Any]:
        rec.count("tick")
        return {"n": state["n"] + 1, "trace": [f"tick{state['n']}"]}

    def side(state: LoopState) -> dict[str, Any]:
        rec.count("side")
        return {"trace": ["side"]}

    def again(state: LoopState) -> str:
        return "tick" if state["n"] < 3 else rt.END

    g = rt.StateGraph(LoopState)
    g.add_node("tick", tick)
    g.add_node("side", side)
    g.add_edge(rt.START, "tick")
    g.add_edge(rt.START, "side")
    g.add_conditional_edges("tick", again)
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"n": 0, "trace": []}, cfg))
    rec.record("steps", [h.metadata["step"] for h in app.get_state_history(cfg)])
    rec.record_counts("counts after first run")
    rec.record("new input restarts from START", app.invoke({"n": 2}, cfg))


@scenario
def scenario_overwrite(rt: Runtime, rec: Recorder) -> None:
    """Overwrite(v) and {"__overwrite__": v} bypass the reducer; two overwrites → error."""

    def reset(state: ListState) -> dict[str, Any]:
        rec.count("reset")
        return {"items": rt.Overwrite(["reset"])}

    def raw(state: ListState) -> dict[str, Any]:
        rec.count("raw")
        return {"items": {"__overwrite__": ["raw"]}}

    def append(state: ListState) -> dict[str, Any]:
        rec.count("append")
        return {"items": ["appended"]}

    g = rt.StateGraph(ListState)
    g.add_node("reset", reset)
    g.add_node("append", append)
    g.add_node("raw", raw)
    g.add_edge(rt.START, "reset")
    g.add_edge("reset", "append")
    g.add_edge("append", "raw")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"items": ["input"]}, cfg))
    rec.record("input overwrite", app.invoke({"items": rt.Overwrite(["from input"])}, cfg))

    def other(state: ListState) -> dict[str, Any]:
        rec.count("other")
        return {"items": rt.Overwrite(["other"])}

    g2 = rt.StateGraph(ListState)
    g2.add_node("reset", reset)
    g2.add_node("other", other)
    g2.add_edge(rt.START, "reset")
    g2.add_edge(rt.START, "other")
    with rec.expect_error("two overwrites in one step"):
        g2.compile().invoke({"items": []})


@scenario
def scenario_input_keys_not_in_schema(rt: Runtime, rec: Recorder) -> None:
    """Unknown input keys and unknown keys in node updates are ignored, not errors."""

    def node(state: ChainState) -> dict[str, Any]:
        rec.count("node")
        rec.record("node sees", dict(state))
        return {"text": state.get("text", "") + "!", "bogus": 1}

    g = rt.StateGraph(ChainState)
    g.add_node("node", node)
    g.add_edge(rt.START, "node")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"text": "hi", "extra": 1, "n": 5}, cfg))
    rec.record("state", app.get_state(cfg).values)
    rec.record("only unknown keys", app.invoke({"extra": 2}, rec.thread()))


@scenario
def scenario_input_output_schema(rt: Runtime, rec: Recorder) -> None:
    """input_schema filters what input writes; output_schema filters invoke's result only.

    stream(stream_mode="values") still yields every state key (LangGraph's stream channels
    ignore the output schema).
    """

    def think(state: QAState) -> dict[str, Any]:
        rec.count("think")
        rec.record("think sees", dict(state))
        return {"scratch": state["question"].upper()}

    def answer(state: QAState) -> dict[str, Any]:
        rec.count("answer")
        return {"answer": state["scratch"] + "!"}

    g = rt.StateGraph(QAState, input_schema=QuestionIn, output_schema=AnswerOut)
    g.add_node("think", think)
    g.add_node("answer", answer)
    g.add_edge(rt.START, "think")
    g.add_edge("think", "answer")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("invoke", app.invoke({"question": "why", "scratch": "ignored"}, cfg))
    rec.record("stream values", list(app.stream({"question": "how"}, cfg, stream_mode="values")))
    rec.record("stream updates", list(app.stream({"question": "who"}, cfg)))
    rec.record("get_state has every key", app.get_state(cfg).values)
