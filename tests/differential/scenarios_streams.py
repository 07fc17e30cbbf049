"""Scenarios: stream modes (values, updates, custom, several at once)."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

from .observe import Recorder
from .registry import scenario
from .runtimes import Runtime


class StreamState(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    last: str


@scenario
def scenario_stream_modes(rt: Runtime, rec: Recorder) -> None:
    """values/updates/custom and a list of modes; a no-write node still yields an update."""

    def work(state: StreamState) -> dict[str, Any]:
        rec.count("work")
        writer = rt.get_stream_writer()
        writer({"progress": 1})
        writer("halfway")
        return {"items": ["work"], "last": "work"}

    def quiet(state: StreamState) -> None:
        rec.count("quiet")
        rt.get_stream_writer()({"quiet": True})

    def done(state: StreamState) -> dict[str, Any]:
        rec.count("done")
        return {"last": "done"}

    g = rt.StateGraph(StreamState)
    g.add_node("work", work)
    g.add_node("quiet", quiet)
    g.add_node("done", done)
    g.add_edge(rt.START, "work")
    g.add_edge("work", "quiet")
    g.add_edge("quiet", "done")
    app = g.compile(checkpointer=rt.MemorySaver())
    inp: dict[str, Any] = {"items": []}
    rec.record("default (updates)", list(app.stream(inp, rec.thread())))
    rec.record("values", list(app.stream(inp, rec.thread(), stream_mode="values")))
    rec.record("custom", list(app.stream(inp, rec.thread(), stream_mode="custom")))
    rec.record(
        "list of modes",
        list(app.stream(inp, rec.thread(), stream_mode=["custom", "updates", "values"])),
    )
    rec.record("single-element list", list(app.stream(inp, rec.thread(), stream_mode=["values"])))
    rec.record("invoke ignores custom writes", app.invoke(inp, rec.thread()))


@scenario
def scenario_stream_custom_parallel_and_async(rt: Runtime, rec: Recorder) -> None:
    """Custom chunks from parallel and async nodes (order-free), and from a subgraph."""

    def make(name: str) -> Any:
        async def node(state: StreamState) -> dict[str, Any]:
            rec.count(name)
            rt.get_stream_writer()({"from": name})
            await asyncio.sleep(0)
            return {"items": [name]}

        return node

    g = rt.StateGraph(StreamState)
    for name in ("a", "b", "c"):
        g.add_node(name, make(name))
        g.add_edge(rt.START, name)
    app = g.compile(checkpointer=rt.InMemorySaver())

    async def main() -> None:
        chunks = [c async for c in app.astream({"items": []}, rec.thread(), stream_mode="custom")]
        rec.record_unordered("async custom", chunks)
        both = [
            c
            async for c in app.astream(
                {"items": []}, rec.thread(), stream_mode=["custom", "updates"]
            )
        ]
        rec.record_unordered("async custom+updates", both)

    asyncio.run(main())

    def inner(state: StreamState) -> dict[str, Any]:
        rec.count("inner")
        rt.get_stream_writer()("from inside")
        return {"items": ["inner"]}

    child = rt.StateGraph(StreamState)
    child.add_node("inner", inner)
    child.add_edge(rt.START, "inner")
    parent = rt.StateGraph(StreamState)
    parent.add_node("child", child.compile())
    parent.add_edge(rt.START, "child")
    papp = parent.compile(checkpointer=rt.InMemorySaver())
    rec.record("subgraph custom", list(papp.stream({}, rec.thread(), stream_mode="custom")))
    rec.record(
        "subgraph custom, subgraphs=True",
        list(papp.stream({}, rec.thread(), stream_mode=["custom", "updates"], subgraphs=True)),
    )


@scenario
def scenario_stream_values_per_step(rt: Runtime, rec: Recorder) -> None:
    """values mode: one chunk per superstep (parallel writes merged); none for a step that
    wrote nothing."""

    def make(name: str) -> Any:
        def node(state: StreamState) -> dict[str, Any] | None:
            rec.count(name)
            return None if name == "silent" else {"items": [name]}

        return node

    g = rt.StateGraph(StreamState)
    for name in ("x", "y", "silent", "z"):
        g.add_node(name, make(name))
    g.add_edge(rt.START, "x")
    g.add_edge(rt.START, "y")
    g.add_edge("x", "silent")
    g.add_edge("silent", "z")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    rec.record("values", list(app.stream({"items": []}, cfg, stream_mode="values")))
    rec.record("values, second input", list(app.stream({"last": "L"}, cfg, stream_mode="values")))
    rec.record_unordered("updates", app.stream({"items": []}, rec.thread(), stream_mode="updates"))
