"""The graph registry: workers load graphs only from ``GRAPHRUNTIME_GRAPHS``."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from graphruntime.graph import StateGraph
from graphruntime.pregel import Pregel
from workers.errors import ConfigurationError, UnknownGraphError


@dataclass
class GraphRegistry:
    """Maps graph names to compiled graphs; nothing outside the configured list loads."""

    specs: Mapping[str, str]
    _loaded: dict[str, Pregel] = field(default_factory=dict)

    @classmethod
    def parse(cls, spec: str) -> GraphRegistry:
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
        module_name, _, attr = target.partition(":")
        module = importlib.import_module(module_name)
        obj: object = module
        for part in attr.split("."):
            obj = getattr(obj, part)
        if isinstance(obj, StateGraph):
            obj = obj.compile()
        if not isinstance(obj, Pregel):
            raise ConfigurationError(
                f"GRAPHRUNTIME_GRAPHS entry {name}={target} is a {type(obj).__name__}; it must "
                "be a compiled graph or a StateGraph builder."
            )
        self._loaded[name] = obj
        return obj
