"""A graph's drawing and JSON schemas, as the LangGraph Server API shows them.

Computed where the graph's code is (a worker, when asked through
:mod:`workers.remote_graphs`, or any process that has it), and returned as plain JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_type_hints

from pydantic import create_model

from graphruntime.graph.state import CompiledStateGraph
from graphruntime.pregel import Pregel
from workers.errors import InvalidRequestError


def graph_info(
    graph: Pregel,
    *,
    kind: str,
    xray: int | bool = False,
    namespace: str | None = None,
    recurse: bool = False,
    name: str | None = None,
) -> Any:
    """``kind``: "graph" (nodes and edges), "schemas" or "subgraphs" ({namespace: schemas})."""
    if kind == "graph":
        if not isinstance(graph, CompiledStateGraph):
            raise InvalidRequestError(
                f"graph {graph.name!r} is not a StateGraph: it has no drawing"
            )
        drawing = graph.get_graph(xray=xray).to_json()
        for node in drawing["nodes"]:  # the API names nodes only, as LangGraph's
            if isinstance(node.get("data"), dict):
                node["data"] = {k: v for k, v in node["data"].items() if k != "id"}
        return drawing
    if kind == "schemas":
        return schemas(graph, name)
    if kind == "subgraphs":
        return {
            ns: schemas(sub, ns)
            for ns, sub in graph.get_subgraphs(namespace=namespace, recurse=recurse)
            if isinstance(sub, Pregel)
        }
    raise InvalidRequestError(
        f"unknown graph information {kind!r}: ask for graph, schemas or subgraphs"
    )


def schemas(graph: Pregel, name: str | None = None) -> dict[str, Any]:
    """The input, output, state and context JSON schemas of ``graph``; a schema pydantic
    cannot express is null (as in LangGraph)."""
    return {
        "input_schema": _or_none(graph.get_input_jsonschema),
        "output_schema": _or_none(graph.get_output_jsonschema),
        "state_schema": _or_none(lambda: _state_schema(graph, name)),
        "config_schema": {},
        "context_schema": _or_none(graph.get_context_jsonschema),
    }


def _or_none(make: Callable[[], dict[str, Any] | None]) -> dict[str, Any] | None:
    try:
        return make()
    except Exception:  # noqa: BLE001 - a schema pydantic cannot express: none, as LangGraph
        return None


def _state_schema(graph: Pregel, name: str | None) -> dict[str, Any]:
    """The state's keys, each optional (a state is read partially filled)."""
    if not isinstance(graph, CompiledStateGraph):
        return graph.get_output_jsonschema()
    state = graph.builder.state_schema
    if hasattr(state, "model_json_schema"):
        return dict(state.model_json_schema())
    hints = get_type_hints(state, include_extras=True)
    fields: dict[str, Any] = {name: (hint, None) for name, hint in hints.items()}
    model = create_model(f"{name or graph.name}_state", **fields)
    return dict(model.model_json_schema())
