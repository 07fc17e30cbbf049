"""A graph's drawing and JSON schemas, as the LangGraph Server API shows them.

Computed where the graph's code is (a worker, when asked through
:mod:`workers.remote_graphs`, or any process that has it), and returned as plain JSON.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import TypeAdapter

from graphruntime.graph.state import CompiledStateGraph
from graphruntime.pregel import Pregel


def graph_info(
    graph: Pregel,
    *,
    kind: str,
    xray: int | bool = False,
    namespace: str | None = None,
    recurse: bool = False,
) -> Any:
    """``kind``: "graph" (nodes and edges), "schemas" or "subgraphs" ({namespace: schemas})."""
    if kind == "graph":
        if not isinstance(graph, CompiledStateGraph):
            raise ValueError(f"graph {graph.name!r} is not a StateGraph: it has no drawing")
        return graph.get_graph(xray=xray).to_json()
    if kind == "schemas":
        return schemas(graph)
    if kind == "subgraphs":
        return {
            ns: schemas(sub)
            for ns, sub in graph.get_subgraphs(namespace=namespace, recurse=recurse)
            if isinstance(sub, Pregel)
        }
    raise ValueError(f"unknown graph information {kind!r}")


def schemas(graph: Pregel) -> dict[str, Any]:
    """The input, output, state and context JSON schemas of ``graph``."""
    context = graph.get_context_jsonschema()
    return {
        "input_schema": graph.get_input_jsonschema(),
        "output_schema": graph.get_output_jsonschema(),
        "state_schema": _state_schema(graph),
        "config_schema": None,
        "context_schema": context,
    }


def _state_schema(graph: Pregel) -> dict[str, Any]:
    if isinstance(graph, CompiledStateGraph):
        state = graph.builder.state_schema
        if hasattr(state, "model_json_schema"):
            return dict(state.model_json_schema())
        if isinstance(state, type) and (
            hasattr(state, "__annotations__") or dataclasses.is_dataclass(state)
        ):
            try:
                return dict(TypeAdapter(state).json_schema())
            except Exception:  # noqa: BLE001 - an exotic schema: the output's instead
                pass
    return graph.get_output_jsonschema()
