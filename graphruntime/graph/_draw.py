"""``get_graph()``: the drawable graph of a compiled :class:`StateGraph`.

Edges are found as LangGraph finds them: by dry-running the superstep loop on empty state,
with every node "writing" what it statically can — its plain edges each time it runs and,
once, every destination its conditional edges or ``destinations=`` declare (conditional,
labelled). An edge is drawn from each writer of a channel to each node that channel
triggers. Following the same steps (and LangGraph's quirks: implicit edges when a node
declares no destination, END edges for the nodes nothing follows) makes the drawing the
same as LangGraph's for the same builder code.
"""

from __future__ import annotations

import inspect
from collections import defaultdict
from collections.abc import Collection, Hashable, Mapping, Sequence
from typing import Any, Literal, NamedTuple, Union, get_args, get_origin
from typing import get_type_hints as _get_type_hints

from graphruntime._internal._typing import MISSING
from graphruntime.channels import BaseChannel, NamedBarrierValue
from graphruntime.constants import END, START
from graphruntime.drawing import Graph
from graphruntime.graph._spec import BuilderSpec
from graphruntime.pregel import Pregel
from graphruntime.types import All, Command

# LangGraph stops its dry run after this many steps; a graph with a cycle runs until then.
_STEP_LIMIT = 250


class _Found(NamedTuple):
    """A discovered edge (field order is the sort order of LangGraph's edge set)."""

    source: str
    target: str
    conditional: bool
    label: str | None


class _Write(NamedTuple):
    """Which channel a node writes, whether conditionally, and the label to draw."""

    channel: str
    conditional: bool
    label: str | None


class _Task(NamedTuple):
    name: str
    triggers: tuple[str, ...]
    writes: list[tuple[str, Any]]


def draw_graph(
    graph: Pregel, builder: BuilderSpec, config: Any = None, *, xray: int | bool = False
) -> Graph:
    """The drawable graph; ``xray`` inlines subgraphs (``True``: all levels, ``n``: n levels)."""
    subgraphs: dict[str, Graph] = {}
    if xray:
        depth = xray if isinstance(xray, bool) or xray <= 0 else xray - 1
        for name, sub in graph.get_subgraphs():
            get_graph = getattr(sub, "get_graph", None)
            if get_graph is not None:
                subgraphs[name] = get_graph(config, xray=depth)
    return _DryRun(graph, builder).drawing(subgraphs)


class _DryRun:
    """One dry run of a compiled graph's superstep loop, collecting edges as it goes."""

    def __init__(self, graph: Pregel, builder: BuilderSpec) -> None:
        self.graph = graph
        self.builder = builder
        self.channels: dict[str, BaseChannel] = {
            key: spec.from_checkpoint(MISSING) for key, spec in graph.channel_specs.items()
        }
        self.versions: dict[str, int] = {}
        self.seen: dict[str, dict[str, int]] = {}
        self.static = {name: _static_writes(self, name) for name in graph.nodes}
        self.plain = {name: _plain_writes(self, name) for name in graph.nodes}

    # --- the channels a node writes -------------------------------------------------------

    def branch_channel(self, node: str) -> str:
        """The channel that triggers ``node`` (its one trigger that is not a barrier)."""
        spec = self.graph.nodes.get(node)
        if spec is not None:
            for trigger in spec.triggers:
                if not isinstance(self.graph.channel_specs.get(trigger), NamedBarrierValue):
                    return trigger
        return f"branch:to:{node}"  # no such node: a write nothing reads, as in LangGraph

    # --- one superstep, as the runtime takes it -------------------------------------------

    def apply(self, tasks: Sequence[_Task]) -> set[str]:
        bump_step = any(task.triggers for task in tasks)
        for task in tasks:
            self.seen.setdefault(task.name, {}).update(
                {c: self.versions[c] for c in task.triggers if c in self.versions}
            )
        version = max(self.versions.values(), default=0) + 1
        for chan in {c for task in tasks for c in task.triggers if c in self.channels}:
            if self.channels[chan].consume():
                self.versions[chan] = version
        pending: defaultdict[str, list[Any]] = defaultdict(list)
        for task in tasks:
            for chan, value in task.writes:
                if chan in self.channels:
                    pending[chan].append(value)
        updated: set[str] = set()
        for chan, values in pending.items():
            if self.channels[chan].update(values):
                self.versions[chan] = version
                if self.channels[chan].is_available():
                    updated.add(chan)
        if bump_step:
            for chan, channel in self.channels.items():
                if channel.is_available() and chan not in updated and channel.update([]):
                    self.versions[chan] = version
                    if channel.is_available():
                        updated.add(chan)
        if bump_step and updated.isdisjoint(self.graph.trigger_to_nodes):
            for chan, channel in self.channels.items():
                if channel.finish():
                    self.versions[chan] = version
                    if channel.is_available():
                        updated.add(chan)
        return updated

    def prepare(self, updated: set[str]) -> list[_Task]:
        if updated:
            candidates: Collection[str] = sorted(
                {n for c in updated for n in self.graph.trigger_to_nodes.get(c, ())}
            )
        elif not self.versions:
            candidates = ()
        else:
            candidates = list(self.graph.nodes)
        tasks = []
        for name in candidates:
            triggers = self.graph.nodes[name].triggers
            seen = self.seen.get(name)
            if any(
                self.channels[c].is_available()
                and (seen is None or self.versions.get(c, 0) > seen.get(c, 0))
                for c in triggers
            ):
                tasks.append(_Task(name, tuple(sorted(triggers)), []))
        return tasks

    # --- the dry run ----------------------------------------------------------------------

    def run(self) -> tuple[set[_Found], dict[str, set[_Write]]]:
        """Every edge found, and the sources of the last step that ran."""
        found: set[_Found] = set()
        static_done: set[str] = set()
        declared: defaultdict[str, set[_Write]] = defaultdict(set)
        sources: dict[str, set[_Write]] = {}
        step_sources: dict[str, set[_Write]] = {}
        tasks = self.prepare(self.apply([_Task(START, (), [(START, {})])]))
        for _step in range(-1, _STEP_LIMIT):
            if not tasks:
                break
            labels: dict[tuple[str, str], str | None] = {}
            for task in tasks:
                task.writes.extend(self.plain[task.name])
                if task.name in static_done:
                    continue
                static_done.add(task.name)
                for chan, label in self.static[task.name]:
                    if chan == END:
                        found.add(_Found(task.name, END, True, label))
                        continue
                    labels[(task.name, chan)] = label
                    declared[task.name].add(_Write(chan, True, label))
                    task.writes.append((chan, None))
            step_sources = {}
            for task in tasks:
                writes = {
                    # a write carrying a value (a barrier's source name) is never conditional
                    _Write(chan, True, labels[(task.name, chan)])
                    if value is None and (task.name, chan) in labels
                    else _Write(chan, False, None)
                    for chan, value in task.writes
                }
                step_sources[task.name] = writes | declared.get(task.name, set())
            sources.update(step_sources)
            writers_of: defaultdict[str, set[_Write]] = defaultdict(set)
            for src, writes in sources.items():
                for chan, conditional, label in writes:
                    writers_of[chan].add(_Write(src, conditional, label))
            tasks = self.prepare(self.apply(tasks))
            for task in tasks:
                from_this_step = False
                for trigger in task.triggers:
                    for src, conditional, label in writers_of[trigger]:
                        found.add(_Found(src, task.name, conditional, label))
                        write = _Write(trigger, conditional, label)
                        if write in step_sources.get(src, ()):
                            from_this_step = True
                        else:
                            sources[src].discard(write)
                if not from_this_step:
                    # nothing declared leads here: it may follow any node of the last step
                    for src in step_sources:
                        found.add(_Found(src, task.name, True, None))
        return found, step_sources

    def drawing(self, subgraphs: Mapping[str, Graph]) -> Graph:
        found, last_sources = self.run()
        drawn = Graph()
        deferred = {name for name, spec in self.builder.nodes.items() if spec.defer}
        for name, spec in self.graph.nodes.items():
            metadata = dict(spec.metadata or {})
            if name in deferred:
                metadata["defer"] = True
            interrupt = _interrupt_label(
                name, self.graph.interrupt_before_nodes, self.graph.interrupt_after_nodes
            )
            if interrupt:
                metadata["__interrupt"] = interrupt
            # A node that runs tools (ToolNode) lists them, as LangGraph draws it.
            tools_by_name = getattr(spec.func, "tools_by_name", None)
            if isinstance(tools_by_name, Mapping) and tools_by_name:
                metadata["__tools"] = list(tools_by_name)
            drawn.add_node(_node_data(spec.func), name, metadata=metadata or None)
        for src, dest, conditional, label in sorted(found, key=_sort_key):
            _add_edge(drawn, src, dest, label if label != dest else None, conditional)
        termini = {f.target for f in found if f.target != END} - {f.source for f in found}
        if termini:
            for src in sorted(termini):
                _add_edge(drawn, src, END)
        elif len(last_sources) == 1 and not any(f.target == END for f in found):
            for src in sorted(last_sources):
                _add_edge(drawn, src, END, conditional=True)
        for name, subgraph in subgraphs.items():
            _inline(drawn, name, subgraph)
        return drawn


def _plain_writes(run: _DryRun, node: str) -> list[tuple[str, Any]]:
    """The writes ``node`` makes every time it runs: its plain edges and barrier inputs."""
    writes: list[tuple[str, Any]] = [
        (run.branch_channel(end), None)
        for start, end in sorted(run.builder.edges)
        if start == node and end != END
    ]
    for chan, spec in run.graph.channel_specs.items():
        if isinstance(spec, NamedBarrierValue) and node in spec.names:
            writes.append((chan, node))
    return writes


def _static_writes(run: _DryRun, node: str) -> list[tuple[str, str | None]]:
    """Where ``node`` may route (``destinations=``, Command hints, conditional edges)."""
    declared: list[tuple[str, str | None]] = []
    spec = run.builder.nodes.get(node)
    if spec is not None:
        ends = node_destinations(spec.action, getattr(spec, "destinations", None))
        if isinstance(ends, Mapping):
            declared.extend((_target(run, end), label) for end, label in ends.items())
        else:
            declared.extend((_target(run, end), None) for end in ends)
    for branch in run.builder.branches.get(node, {}).values():
        for key, end in (branch.ends or {}).items():
            declared.append((_target(run, end), str(key)))
    return declared


def _target(run: _DryRun, end: str) -> str:
    return END if end == END else run.branch_channel(end)


def node_destinations(action: Any, destinations: Any) -> Sequence[str] | Mapping[str, str]:
    """``destinations=`` if given, else the ``Command[Literal[...]]`` return hint's names."""
    if destinations is not None:
        return dict(destinations) if isinstance(destinations, Mapping) else tuple(destinations)
    call = getattr(action, "__call__", None)  # noqa: B004 - a callable object's bound method
    if not (inspect.isfunction(action) or inspect.ismethod(action) or inspect.ismethod(call)):
        return ()
    try:
        hints = _get_type_hints(call) or _get_type_hints(action)
    except (NameError, TypeError):
        return ()  # unresolvable hints just mean "no declared destinations"
    returns = hints.get("return")
    if get_origin(returns) is Union:
        returns = next((a for a in get_args(returns) if get_origin(a) is Command), returns)
    args = get_args(returns) if get_origin(returns) is Command else ()
    if args and get_origin(args[0]) is Literal:
        return tuple(get_args(args[0]))
    return ()


def _interrupt_label(name: str, before: All | Sequence[str], after: All | Sequence[str]) -> str:
    # `in` on "*" is a substring test: LangGraph labels no node for interrupt_before="*".
    if name in before and name in after:
        return "before,after"
    if name in before:
        return "before"
    if name in after:
        return "after"
    return ""


def _start_node(value: Any) -> Any:
    """Stands for START's input-writing step in the drawing (it is a callable in LangGraph)."""
    return value


def _node_data(func: Any) -> Any:
    return _start_node if func is None else func


def _sort_key(found: _Found) -> tuple[str, str, bool, bool, str]:
    return (
        found.source,
        found.target,
        found.conditional,
        found.label is not None,
        found.label or "",
    )


def _add_edge(
    graph: Graph, source: str, target: str, data: Hashable | None = None, conditional: bool = False
) -> None:
    """Add an edge unless one joins the same nodes already; END is added on first use."""
    if any(e.source == source and e.target == target for e in graph.edges):
        return
    if target == END and target not in graph.nodes:
        graph.add_node(None, END)
    graph.add_edge(graph.nodes[source], graph.nodes[target], data, conditional)


def _inline(graph: Graph, name: str, subgraph: Graph) -> None:
    """Replace node ``name`` with ``subgraph``'s nodes (ids prefixed ``name:``)."""
    if not (
        len(subgraph.nodes) > 1
        and name in graph.nodes
        and subgraph.first_node()
        and subgraph.last_node()
    ):
        return
    subgraph.trim_first_node()
    subgraph.trim_last_node()
    graph.nodes.pop(name)
    first, last = graph.extend(subgraph, prefix=name)
    for i, edge in enumerate(graph.edges):
        if edge.source == name and last is not None:
            edge = edge.copy(source=last.id)
        if edge.target == name and first is not None:
            edge = edge.copy(target=first.id)
        graph.edges[i] = edge


__all__ = ["draw_graph", "node_destinations"]
