"""``StateGraph``: the builder users write graphs with, compiled into a :class:`Pregel`."""

from __future__ import annotations

import dis
import inspect
import logging
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Self

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import NS_END, NS_SEP, TASKS
from graphruntime._internal._fields import object_as_updates
from graphruntime.channels import (
    BaseChannel,
    EphemeralValue,
    LastValueAfterFinish,
    NamedBarrierValue,
    NamedBarrierValueAfterFinish,
    Topic,
)
from graphruntime.checkpoint.base import BaseCheckpointSaver
from graphruntime.constants import END, START, TAG_HIDDEN
from graphruntime.drawing import Graph
from graphruntime.errors import (
    ErrorCode,
    GraphValidationError,
    InvalidUpdateError,
    ParentCommand,
    create_error_message,
)
from graphruntime.graph._branch import BranchSpec
from graphruntime.graph._schema import (
    first_param_schema,
    make_mapper,
    schema_channels,
)
from graphruntime.pregel._node import NodeSpec, Writer
from graphruntime.pregel.main import Pregel
from graphruntime.types import All, Command, RetryPolicy, Send

logger = logging.getLogger(__name__)


@dataclass
class _NodeDef:
    action: Any
    input_schema: Any
    retry_policy: tuple[RetryPolicy, ...]
    metadata: dict[str, Any]
    defer: bool
    destinations: Any = None


class StateGraph:
    """A graph whose nodes read and write a shared state (as ``langgraph.graph.StateGraph``)."""

    def __init__(
        self,
        state_schema: Any,
        context_schema: Any = None,
        *,
        input_schema: Any = None,
        output_schema: Any = None,
        **kwargs: Any,
    ) -> None:
        input_schema = input_schema or kwargs.pop("input", None)
        output_schema = output_schema or kwargs.pop("output", None)
        self.state_schema = state_schema
        self.context_schema = context_schema
        self.input_schema = input_schema or state_schema
        self.output_schema = output_schema or state_schema
        self.channels: dict[str, BaseChannel] = {}
        self.schemas: dict[Any, dict[str, BaseChannel]] = {}
        self.nodes: dict[str, _NodeDef] = {}
        self.edges: set[tuple[str, str]] = set()
        self.waiting_edges: set[tuple[tuple[str, ...], str]] = set()
        self.branches: defaultdict[str, dict[str, BranchSpec]] = defaultdict(dict)
        self.compiled = False
        for schema in (self.state_schema, self.input_schema, self.output_schema):
            self._add_schema(schema)

    def _add_schema(self, schema: Any) -> None:
        if schema in self.schemas:
            return
        channels = schema_channels(schema)
        self.schemas[schema] = channels
        for key, channel in channels.items():
            if key not in self.channels:
                self.channels[key] = channel

    # --- building -------------------------------------------------------------------------

    def add_node(
        self,
        node: str | Callable[..., Any] | Any,
        action: Callable[..., Any] | Any = None,
        *,
        defer: bool = False,
        metadata: dict[str, Any] | None = None,
        input_schema: Any = None,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        destinations: Any = None,
        **kwargs: Any,
    ) -> Self:
        """Add a node: a function of the state, an async function, or a compiled graph."""
        input_schema = input_schema or kwargs.pop("input", None)
        if not isinstance(node, str):
            action = node
            node = (
                getattr(action, "name", None)
                or getattr(action, "__name__", None)
                or action.__class__.__name__  # a callable instance: its class's name
            )
            if node is None:
                raise GraphValidationError("Node name must be provided if action is not a function")
        if action is None:
            raise GraphValidationError(f"Node `{node}` needs an action (a function or a graph).")
        if self.compiled:
            logger.warning(
                "Adding a node to a graph that has already been compiled. This will not be "
                "reflected in the compiled graph."
            )
        if node in self.nodes:
            raise GraphValidationError(f"Node `{node}` already present.")
        if node in (END, START):
            raise GraphValidationError(f"Node `{node}` is reserved.")
        for character in (NS_SEP, NS_END):
            if character in node:
                raise GraphValidationError(
                    f"'{character}' is a reserved character and is not allowed in the node names."
                )
        schema = input_schema or first_param_schema(action) or self.state_schema
        self._add_schema(schema)
        if isinstance(retry_policy, RetryPolicy):
            policies: tuple[RetryPolicy, ...] = (retry_policy,)
        else:
            policies = tuple(retry_policy or ())
        self.nodes[node] = _NodeDef(
            action, schema, policies, dict(metadata or {}), defer, destinations
        )
        return self

    def add_edge(self, start_key: str | Sequence[str], end_key: str) -> Self:
        """Add an edge; a list of sources waits for all of them (a barrier)."""
        if isinstance(start_key, str):
            if start_key == END:
                raise GraphValidationError("END cannot be a start node")
            if end_key == START:
                raise GraphValidationError("START cannot be an end node")
            self.edges.add((start_key, end_key))
            return self
        for start in start_key:
            if start == END:
                raise GraphValidationError("END cannot be a start node")
            if start not in self.nodes:
                raise GraphValidationError(f"Need to add_node `{start}` first")
        if end_key == START:
            raise GraphValidationError("START cannot be an end node")
        if end_key != END and end_key not in self.nodes:
            raise GraphValidationError(f"Need to add_node `{end_key}` first")
        self.waiting_edges.add((tuple(start_key), end_key))
        return self

    def add_conditional_edges(
        self,
        source: str,
        path: Callable[..., Any],
        path_map: dict[Hashable, str] | list[str] | None = None,
    ) -> Self:
        """Route from ``source`` by calling ``path`` on the state after ``source`` ran."""
        name = getattr(path, "__name__", None) or "condition"
        if name == "<lambda>":
            name = "condition" if "condition" not in self.branches[source] else name
        if name in self.branches[source]:
            raise GraphValidationError(
                f"Branch with name `{name}` already exists for node `{source}`"
            )
        self.branches[source][name] = BranchSpec.from_path(path, path_map)
        return self

    def add_sequence(self, nodes: Sequence[Callable[..., Any] | tuple[str, Any]]) -> Self:
        """Add nodes chained one after another, in order."""
        if len(nodes) < 1:
            raise GraphValidationError("Sequence requires at least one node.")
        previous: str | None = None
        for item in nodes:
            if isinstance(item, tuple) and len(item) == 2:
                name, action = item
            else:
                action = item
                found = getattr(item, "name", None) or getattr(item, "__name__", None)
                if not isinstance(found, str):
                    raise GraphValidationError(f"Unsupported node type: {type(item)}")
                name = found
            if name in self.nodes:
                raise GraphValidationError(
                    f"Node names must be unique: node with the name '{name}' already exists. "
                    "If you need to use two different runnables/callables with the same name "
                    "(for example, using `lambda`), please provide them as tuples "
                    "(name, runnable/callable)."
                )
            self.add_node(name, action)
            if previous is not None:
                self.add_edge(previous, name)
            previous = name
        return self

    def set_entry_point(self, key: str) -> Self:
        return self.add_edge(START, key)

    def set_conditional_entry_point(
        self, path: Callable[..., Any], path_map: dict[Hashable, str] | list[str] | None = None
    ) -> Self:
        return self.add_conditional_edges(START, path, path_map)

    def set_finish_point(self, key: str) -> Self:
        return self.add_edge(key, END)

    # --- validation -----------------------------------------------------------------------

    def validate(self, interrupt: Sequence[str] | None = None) -> Self:
        all_sources = {src for src, _ in self.edges}
        all_sources.update(s for starts, _ in self.waiting_edges for s in starts)
        all_sources.update(self.branches)
        for source in all_sources:
            if source not in self.nodes and source != START:
                raise GraphValidationError(f"Found edge starting at unknown node '{source}'")
        if START not in all_sources:
            raise GraphValidationError(
                "Graph must have an entrypoint: add at least one edge from START to another node"
            )
        all_targets = {end for _, end in self.edges} | {end for _, end in self.waiting_edges}
        for start, branches in self.branches.items():
            for cond, branch in branches.items():
                if branch.ends is not None:
                    for end in branch.ends.values():
                        if end not in self.nodes and end != END:
                            raise GraphValidationError(
                                f"At '{start}' node, '{cond}' branch found unknown target '{end}'"
                            )
        for target in all_targets:
            if target not in self.nodes and target != END:
                raise GraphValidationError(f"Found edge ending at unknown node `{target}`")
        for node in interrupt or ():
            if node not in self.nodes:
                raise GraphValidationError(f"Interrupt node `{node}` not found")
        self.compiled = True
        return self

    # --- compile --------------------------------------------------------------------------

    def compile(
        self,
        checkpointer: BaseCheckpointSaver | bool | None = None,
        *,
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        debug: bool = False,
        name: str | None = None,
        **kwargs: Any,
    ) -> CompiledStateGraph:
        """Validate the graph and turn it into an executable :class:`CompiledStateGraph`."""
        interrupt_before = interrupt_before or []
        interrupt_after = interrupt_after or []
        self.validate(
            interrupt=[
                *(interrupt_before if interrupt_before != "*" else []),
                *(interrupt_after if interrupt_after != "*" else []),
            ]
        )
        return _compile(self, checkpointer, interrupt_before, interrupt_after, name or "LangGraph")


class CompiledStateGraph(Pregel):
    """A compiled :class:`StateGraph`; run with ``invoke``/``stream``."""

    builder: StateGraph

    # --- drawing and schemas (see _draw.py, _jsonschema.py) -------------------------------

    def get_graph(self, config: RunnableConfig | None = None, *, xray: int | bool = False) -> Graph:
        """The drawable graph; ``xray`` inlines subgraphs (``True``: all levels, ``n``: n)."""
        from graphruntime.graph._draw import draw_graph

        return draw_graph(self, config, xray=xray)

    async def aget_graph(
        self, config: RunnableConfig | None = None, *, xray: int | bool = False
    ) -> Graph:
        return self.get_graph(config, xray=xray)

    def get_input_jsonschema(self, config: RunnableConfig | None = None) -> dict[str, Any]:
        from graphruntime.graph._jsonschema import input_jsonschema

        return input_jsonschema(self)

    def get_output_jsonschema(self, config: RunnableConfig | None = None) -> dict[str, Any]:
        from graphruntime.graph._jsonschema import output_jsonschema

        return output_jsonschema(self)

    def get_context_jsonschema(self) -> dict[str, Any] | None:
        from graphruntime.graph._jsonschema import context_jsonschema

        return context_jsonschema(self)


def _state_writer(output_keys: frozenset[str]) -> Writer:
    def updates(value: Any) -> list[tuple[str, Any]]:
        if value is None:
            return []
        if isinstance(value, dict):
            return [(k, v) for k, v in value.items() if k in output_keys]
        if isinstance(value, Command):
            if value.graph == Command.PARENT:
                return []
            return [(k, v) for k, v in value._update_as_tuples() if k in output_keys]
        if (
            isinstance(value, (list, tuple))
            and value
            and any(isinstance(i, Command) for i in value)
        ):
            out: list[tuple[str, Any]] = []
            for item in value:
                if isinstance(item, Command):
                    if item.graph != Command.PARENT:
                        out.extend((k, v) for k, v in item._update_as_tuples() if k in output_keys)
                else:
                    out.extend(updates(item))
            return out
        as_updates = object_as_updates(value, sorted(output_keys))
        if as_updates is not None:
            return as_updates
        raise InvalidUpdateError(
            create_error_message(
                message=f"Expected dict, got {value}",
                error_code=ErrorCode.INVALID_GRAPH_NODE_RETURN_VALUE,
            )
        )

    def control(value: Any) -> list[tuple[str, Any]]:
        if isinstance(value, Send):
            return [(TASKS, value)]
        commands: list[Command[Any]] = []
        if isinstance(value, Command):
            commands.append(value)
        elif isinstance(value, (list, tuple)):
            commands.extend(c for c in value if isinstance(c, Command))
        out: list[tuple[str, Any]] = []
        for command in commands:
            if command.graph == Command.PARENT:
                raise ParentCommand(command)
            goto = [command.goto] if isinstance(command.goto, (Send, str)) else command.goto
            for target in goto:
                if isinstance(target, Send):
                    out.append((TASKS, target))
                elif isinstance(target, str) and target != END:
                    out.append((f"branch:to:{target}", None))
        return out

    def write(value: Any, config: RunnableConfig) -> list[tuple[str, Any]]:
        return [*updates(value), *control(value)]

    return write


def find_subgraph(action: Any) -> Pregel | None:
    """The compiled graph a node runs: the node itself, or one its function refers to.

    A function refers to a graph through a name it captures or a global it loads,
    or an attribute path from one (``holder.graph.invoke``), read from its bytecode;
    nested functions count through the names they capture. A wrapper with nothing
    in reach is looked through (``__wrapped__``).
    """
    if isinstance(action, Pregel):
        return action if action.checkpointer is not False else None
    seen: set[int] = set()
    while action is not None and id(action) not in seen:
        seen.add(id(action))
        found = _referenced_graph(action)
        if found is not None:
            return found
        action = getattr(action, "__wrapped__", None)
    return None


def _is_graph(value: Any) -> bool:
    return isinstance(value, Pregel) and value.checkpointer is not False


def _referenced_graph(action: Any) -> Pregel | None:
    func = getattr(action, "__func__", action)
    code = getattr(func, "__code__", None)
    if code is None:
        return None
    captured: dict[str, Any] = {}
    for name, cell in zip(code.co_freevars, getattr(func, "__closure__", None) or (), strict=False):
        try:
            captured[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    globals_ = getattr(func, "__globals__", {})
    names = dict(captured)
    for name in code.co_names:
        if name in globals_:
            names.setdefault(name, globals_[name])
    for value in names.values():
        if _is_graph(value):
            found: Pregel = value
            return found
    for scope, chain in _attribute_paths(code, top=True):
        value = (names if scope else captured).get(chain[0])
        for attr in chain[1:]:
            value = getattr(value, attr, None)
            if value is None:
                break
            if _is_graph(value):
                return value  # type: ignore[no-any-return]
    return None


_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME", "LOAD_CLOSURE"})
_ATTRS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})


def _attribute_paths(code: Any, *, top: bool) -> Iterator[tuple[bool, tuple[str, ...]]]:
    """``(from the function's own code, (name, attr, ...))`` for each attribute load.

    Nested code objects only reach what they capture: their globals are not followed.
    """
    instructions = list(dis.get_instructions(code))
    for i, ins in enumerate(instructions):
        if ins.opname not in _LOADS or (not top and ins.opname != "LOAD_DEREF"):
            continue
        chain = [str(ins.argval)]
        for nxt in instructions[i + 1 :]:
            if nxt.opname not in _ATTRS:
                break
            chain.append(str(nxt.argval))
        if len(chain) > 1:
            yield top, tuple(chain)
    for const in code.co_consts:
        if inspect.iscode(const):
            yield from _attribute_paths(const, top=False)


def _static(writes: list[tuple[str, Any]]) -> Writer:
    frozen = list(writes)

    def write(value: Any, config: RunnableConfig) -> list[tuple[str, Any]]:
        return frozen

    return write


def _compile(
    builder: StateGraph,
    checkpointer: BaseCheckpointSaver | bool | None,
    interrupt_before: All | Sequence[str],
    interrupt_after: All | Sequence[str],
    name: str,
) -> CompiledStateGraph:
    channels: dict[str, BaseChannel] = dict(builder.channels)
    channels[START] = EphemeralValue(builder.input_schema, key=START)
    channels[TASKS] = Topic(Send, accumulate=False, key=TASKS)
    all_keys = frozenset(builder.channels)
    start_keys = frozenset(builder.schemas[builder.input_schema])
    triggers: dict[str, list[str]] = {START: [START]}
    writers: dict[str, list[Writer]] = {START: [_state_writer(start_keys)]}
    for node, spec in builder.nodes.items():
        branch_channel = f"branch:to:{node}"
        channels[branch_channel] = (
            LastValueAfterFinish(Any, key=branch_channel)
            if spec.defer
            else EphemeralValue(Any, guard=False, key=branch_channel)
        )
        triggers[node] = [branch_channel]
        writers[node] = [_state_writer(all_keys)]
    for start, end in sorted(builder.edges):
        if end != END:
            writers[start].append(_static([(f"branch:to:{end}", None)]))
    for starts, end in sorted(builder.waiting_edges):
        if end == END:
            continue
        chan = f"join:{'+'.join(starts)}:{end}"
        barrier_cls = (
            NamedBarrierValueAfterFinish if builder.nodes[end].defer else NamedBarrierValue
        )
        channels[chan] = barrier_cls(str, set(starts), key=chan)
        triggers[end].append(chan)
        for start in starts:
            writers[start].append(_static([(chan, start)]))
    for start, branches in builder.branches.items():
        schema = (
            builder.nodes[start].input_schema if start in builder.nodes else builder.state_schema
        )
        keys = list(builder.schemas[schema])
        for branch in branches.values():
            writers[start].append(branch.writer(keys, make_mapper(schema)))
    nodes: dict[str, NodeSpec] = {
        START: NodeSpec(
            name=START,
            func=None,
            triggers=(START,),
            input_keys=START,
            writers=tuple(writers[START]),
            tags=(TAG_HIDDEN,),
            hidden=True,
        )
    }
    for node, spec in builder.nodes.items():
        input_keys = tuple(builder.schemas[spec.input_schema])
        sub = find_subgraph(spec.action)
        nodes[node] = NodeSpec(
            name=node,
            func=spec.action,
            triggers=tuple(triggers[node]),
            input_keys=input_keys,
            writers=tuple(writers[node]),
            mapper=make_mapper(spec.input_schema),
            retry_policy=spec.retry_policy,
            metadata=spec.metadata,
            subgraphs=(sub,) if sub is not None else (),
        )
    compiled = CompiledStateGraph(
        nodes=nodes,
        channels=channels,
        input_channels=START,
        output_channels=list(builder.schemas[builder.output_schema]),
        stream_channels=list(builder.channels),
        stream_mode="updates",
        checkpointer=checkpointer,
        interrupt_before_nodes=interrupt_before,
        interrupt_after_nodes=interrupt_after,
        name=name,
        auto_validate=False,
    )
    compiled.builder = builder
    compiled._output_mapper = make_mapper(builder.output_schema)
    return compiled
