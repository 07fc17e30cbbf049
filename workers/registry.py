"""The graph registry: workers load graphs only from ``GRAPHRUNTIME_GRAPHS``."""

from __future__ import annotations

import hashlib
import importlib
import inspect
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from graphruntime.cache.base import BaseCache
from graphruntime.checkpoint import JsonSerializer, schema_classes
from graphruntime.compat import LangGraphAliasError, alias_from_env
from graphruntime.errors import SerializationError
from graphruntime.graph import StateGraph
from graphruntime.graph.state import CompiledStateGraph
from graphruntime.pregel import Pregel
from graphruntime.store.base import BaseStore
from workers.errors import ConfigurationError, UnknownGraphError

log = logging.getLogger(__name__)


def graph_schema_classes(graph: Pregel) -> set[type]:
    """The classes a graph's (and its subgraphs') state, input, output and context schemas
    name."""
    found: set[type] = set()
    seen: set[int] = set()
    stack: list[Pregel] = [graph]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, CompiledStateGraph):
            found |= schema_classes(*current.builder.schemas)
        if current.context_schema is not None:  # a run's context= travels to the workers
            found |= schema_classes(current.context_schema)
        for node in current.nodes.values():
            stack.extend(sub for sub in node.subgraphs if isinstance(sub, Pregel))
    return found


@dataclass
class GraphRegistry:
    """Maps graph names to compiled graphs; nothing outside the configured list loads."""

    specs: Mapping[str, str]
    _loaded: dict[str, Pregel] = field(default_factory=dict)
    serde: JsonSerializer | None = None
    """A strict serializer that learns each loaded graph's schema classes."""
    node_store: BaseStore | None = None
    """The store every worker shares: given to each graph compiled with a store."""
    node_cache: BaseCache[Any] | None = None
    """The cache every worker shares: given to each graph compiled with a cache."""

    @classmethod
    def parse(cls, spec: str) -> GraphRegistry:
        """The registry of ``GRAPHRUNTIME_GRAPHS``; with ``GRAPHRUNTIME_ALIAS_LANGGRAPH=1``,
        ``langgraph.*`` imports are graphruntime's from here on, so graphs built by code
        that imports LangGraph itself (LangChain's ``create_agent``) load as graphruntime
        graphs."""
        try:
            alias_from_env()
        except LangGraphAliasError as exc:
            raise ConfigurationError(str(exc)) from exc
        entries: dict[str, str] = {}
        for raw in spec.split(","):
            item = raw.strip()
            if not item:
                continue
            name, sep, target = item.partition("=")
            if not sep or ":" not in target or not name.strip():
                raise ConfigurationError(
                    f"Bad GRAPHRUNTIME_GRAPHS entry {item!r}: write name=module:attribute, "
                    "e.g. approvals=myapp.graphs:approval_graph"
                )
            entries[name.strip()] = target.strip()
        return cls(entries)

    @classmethod
    def of(cls, graphs: Mapping[str, Pregel | StateGraph]) -> GraphRegistry:
        """A registry of graphs already at hand (tests, embedding applications)."""
        loaded = {
            name: graph.compile() if isinstance(graph, StateGraph) else graph
            for name, graph in graphs.items()
        }
        return cls({name: f"<in memory {name}>" for name in loaded}, loaded)

    def use_serde(self, serde: JsonSerializer) -> None:
        """Make ``serde`` allow the schema classes of every graph loaded, now and later."""
        self.serde = serde
        for name, graph in self._loaded.items():
            self._allow_schemas(name, graph)

    def use_store(self, store: BaseStore) -> None:
        """Give ``store`` to every graph compiled with a store, now and later: a store
        compiled in (``InMemoryStore``) would live in one worker process only."""
        self.node_store = store
        for name, graph in list(self._loaded.items()):
            self._loaded[name] = self._shared(name, graph)

    def use_cache(self, cache: BaseCache[Any]) -> None:
        """Give ``cache`` to every graph compiled with a cache, now and later: a cache
        compiled in (``InMemoryCache``) would serve one worker process only, and a
        client's ``clear_cache`` could not reach it."""
        self.node_cache = cache
        for name, graph in list(self._loaded.items()):
            self._loaded[name] = self._shared(name, graph)

    def _shared(self, name: str, graph: Pregel) -> Pregel:
        """``graph`` with the workers' store and cache in place of those compiled in."""
        store, cache = self.node_store, self.node_cache
        if store is not None and graph.store is not None and graph.store is not store:
            log.info(
                "graph %s: its nodes get the workers' %s instead of the %s it was compiled with",
                name,
                type(store).__name__,
                type(graph.store).__name__,
            )
            graph = graph.with_store(store)
        if cache is not None and graph.cache is not None and graph.cache is not cache:
            log.info(
                "graph %s: its results are cached in the workers' %s instead of the %s it "
                "was compiled with",
                name,
                type(cache).__name__,
                type(graph.cache).__name__,
            )
            graph = graph.with_cache(cache)
        return graph

    def names(self) -> list[str]:
        return sorted(self.specs)

    def get(self, name: str) -> Pregel:
        if name in self._loaded:
            return self._loaded[name]
        target = self.specs.get(name)
        if target is None:
            known = ", ".join(self.names()) or "none"
            raise UnknownGraphError(
                f"Unknown graph {name!r}: the workers serve only the graphs configured in "
                f"GRAPHRUNTIME_GRAPHS ({known}). Add it there and restart the workers."
            )
        module_name, _, attr = target.rpartition(":")
        try:
            obj: object = _import(module_name)
            for part in attr.split("."):
                obj = getattr(obj, part)
            if callable(obj) and not isinstance(obj, Pregel | StateGraph):
                obj = _call_factory(obj)
        except Exception as exc:  # an import error, or any error the module raised
            raise ConfigurationError(
                f"Graph entry {name}={target} cannot be loaded: "
                f"{type(exc).__name__}: {exc}. Fix the entry (module:attribute, importable "
                "on the workers' PYTHONPATH, or a langgraph.json path) or remove it."
            ) from exc
        if isinstance(obj, StateGraph):
            obj = obj.compile()
        if not isinstance(obj, Pregel) and type(obj).__module__.startswith("langgraph."):
            raise ConfigurationError(
                f"Graph entry {name}={target} is a {type(obj).__name__} built with the real "
                "LangGraph, not graphruntime. Set GRAPHRUNTIME_ALIAS_LANGGRAPH=1 for the "
                "workers (environment or langgraph.json's env), so `langgraph` imports are "
                "graphruntime's, or import StateGraph from graphruntime.graph in its module."
            )
        if not isinstance(obj, Pregel):
            raise ConfigurationError(
                f"Graph entry {name}={target} is a {type(obj).__name__}; it must be a compiled "
                "graph, a StateGraph builder, or a factory returning one."
            )
        self._allow_schemas(name, obj)
        graph = self._shared(name, obj)
        self._loaded[name] = graph
        return graph

    def _allow_schemas(self, name: str, graph: Pregel) -> None:
        if self.serde is None:
            return
        try:
            self.serde.allow(*graph_schema_classes(graph))
        except SerializationError as exc:
            raise ConfigurationError(
                f"Graph {name!r}: its state schemas name a class that cannot be stored: {exc}"
            ) from exc


def _import(module: str) -> object:
    """A module by name, or a file (``/abs/path/agent.py``, from langgraph.json) by path."""
    if not module.endswith(".py"):
        return importlib.import_module(module)
    import sys
    from importlib.util import module_from_spec, spec_from_file_location

    path = os.path.abspath(module)
    name = "graphruntime_graph_" + hashlib.sha256(path.encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    spec = spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigurationError(f"cannot load {path}: name a Python file (.py) that exists")
    loaded = module_from_spec(spec)
    sys.modules[name] = loaded
    try:
        spec.loader.exec_module(loaded)
    except BaseException:
        del sys.modules[name]
        raise
    return loaded


def _call_factory(factory: Any) -> object:
    """A graph factory (as langgraph.json allows), called once with an empty config: on
    the workers a graph is built when it loads, not per run."""
    if inspect.iscoroutinefunction(factory) or inspect.isasyncgenfunction(factory):
        raise ConfigurationError(
            "a graph factory must return the graph itself (async factories and context "
            "managers are not supported on the workers)"
        )
    params = [
        p
        for p in inspect.signature(factory).parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    if len(params) > 1:
        raise ConfigurationError("a graph factory takes no argument or one config")
    built = factory({"configurable": {}}) if params else factory()
    if inspect.isawaitable(built) or hasattr(built, "__enter__") or hasattr(built, "__aenter__"):
        raise ConfigurationError(
            "a graph factory must return the graph itself (async factories and context "
            "managers are not supported on the workers)"
        )
    return built
