"""A ``StateGraph`` builder → the nodes, channels and writers of its compiled ``Pregel``."""

from __future__ import annotations

import dis
import inspect
from collections.abc import Iterator, Sequence
from typing import Any

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import ROOT, TASKS
from graphruntime._internal._fields import object_as_updates
from graphruntime.channels import (
    BaseChannel,
    EphemeralValue,
    LastValueAfterFinish,
    NamedBarrierValue,
    NamedBarrierValueAfterFinish,
    Topic,
)
from graphruntime.constants import END, START, TAG_HIDDEN
from graphruntime.errors import (
    ErrorCode,
    InvalidUpdateError,
    ParentCommand,
    create_error_message,
)
from graphruntime.graph._schema import make_mapper
from graphruntime.graph._spec import BuilderSpec
from graphruntime.managed.base import is_managed_value
from graphruntime.pregel._node import NodeSpec, Writer
from graphruntime.pregel._timeout import check_timeout_supported
from graphruntime.pregel.main import Pregel
from graphruntime.types import Command, Send

__all__ = ("compile_graph", "find_subgraph")


def _command_updates(value: Any, keys: frozenset[str] | None) -> list[tuple[str, Any]] | None:
    """The state writes of a returned Command (or list mixing Commands), if it is one."""
    if isinstance(value, Command):
        if value.graph == Command.PARENT:
            return []
        return [(k, v) for k, v in value._update_as_tuples() if keys is None or k in keys]
    return None


def _state_writer(output_keys: frozenset[str]) -> Writer:
    """Writes for a node of a state with fields: a dict, an object, or Commands."""

    def updates(value: Any) -> list[tuple[str, Any]]:
        if value is None:
            return []
        if isinstance(value, dict):
            return [(k, v) for k, v in value.items() if k in output_keys]
        if (from_command := _command_updates(value, output_keys)) is not None:
            return from_command
        if (
            isinstance(value, (list, tuple))
            and value
            and any(isinstance(i, Command) for i in value)
        ):
            out: list[tuple[str, Any]] = []
            for item in value:
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

    def write(value: Any, config: RunnableConfig) -> list[tuple[str, Any]]:
        return [*updates(value), *_control(value)]

    return write


def _root_writer(value: Any, config: RunnableConfig) -> list[tuple[str, Any]]:
    """Writes for a node whose state is one value (``__root__``): the value it returns."""
    if (from_command := _command_updates(value, None)) is not None:
        updates = from_command
    elif isinstance(value, (list, tuple)) and value and any(isinstance(i, Command) for i in value):
        updates = []
        for item in value:
            if isinstance(item, Command):
                updates.extend(_command_updates(item, None) or ())
            else:
                updates.append((ROOT, item))
    elif value is not None:
        updates = [(ROOT, value)]
    else:
        updates = []
    return [*updates, *_control(value)]


def _control(value: Any) -> list[tuple[str, Any]]:
    """Where a returned Send or Command routes the graph."""
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


def _static(writes: list[tuple[str, Any]]) -> Writer:
    frozen = list(writes)

    def write(value: Any, config: RunnableConfig) -> list[tuple[str, Any]]:
        return frozen

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


def _keys(builder: BuilderSpec, schema: Any) -> tuple[str, ...] | str:
    """What a reader of ``schema`` selects: its keys, or the root channel alone."""
    keys = tuple(builder.schemas[schema])
    return ROOT if keys == (ROOT,) else keys


def compile_graph(builder: BuilderSpec) -> dict[str, Any]:
    """The keyword arguments of the builder's ``Pregel``: nodes, channels, outputs."""
    channels: dict[str, BaseChannel] = dict(builder.channels)
    channels[START] = EphemeralValue(builder.input_schema, key=START)
    channels[TASKS] = Topic(Send, accumulate=False, key=TASKS)
    state_keys = frozenset(builder.channels) | frozenset(builder.managed)
    node_writer: Writer = _root_writer if state_keys == {ROOT} else _state_writer(state_keys)
    start_keys = _keys(builder, builder.input_schema)
    start_writer: Writer = (
        _root_writer
        if start_keys == ROOT
        else _state_writer(
            frozenset(
                k
                for k, v in builder.schemas[builder.input_schema].items()
                if not is_managed_value(v)
            )
        )
    )
    triggers: dict[str, list[str]] = {START: [START]}
    writers: dict[str, list[Writer]] = {START: [start_writer]}
    for node, spec in builder.nodes.items():
        if spec.timeout is not None:
            check_timeout_supported(spec.action, node)
        branch_channel = f"branch:to:{node}"
        channels[branch_channel] = (
            LastValueAfterFinish(Any, key=branch_channel)
            if spec.defer
            else EphemeralValue(Any, guard=False, key=branch_channel)
        )
        triggers[node] = [branch_channel]
        writers[node] = [node_writer]
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
        for branch in branches.values():
            schema = branch.input_schema or (
                builder.nodes[start].input_schema
                if start in builder.nodes
                else builder.state_schema
            )
            keys = _keys(builder, schema)
            writers[start].append(branch.writer(keys, make_mapper(schema, keys)))
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
        input_keys = _keys(builder, spec.input_schema)
        sub = find_subgraph(spec.action)
        nodes[node] = NodeSpec(
            name=node,
            func=spec.action,
            triggers=tuple(triggers[node]),
            input_keys=input_keys,
            writers=tuple(writers[node]),
            mapper=make_mapper(spec.input_schema, input_keys),
            retry_policy=spec.retry_policy or (),
            metadata=spec.metadata,
            subgraphs=(sub,) if sub is not None else (),
            cache_policy=spec.cache_policy,
            timeout=spec.timeout,
            error_handler=spec.error_handler,
            is_error_handler=spec.is_error_handler,
            trace_policy=spec.trace_policy,
        )
    output_keys = _keys(builder, builder.output_schema)
    output_channels: Sequence[str] | str = (
        output_keys
        if isinstance(output_keys, str)
        else [
            k for k, v in builder.schemas[builder.output_schema].items() if not is_managed_value(v)
        ]
    )
    stream_channels: Sequence[str] | str = (
        ROOT if list(builder.channels) == [ROOT] else list(builder.channels)
    )
    return {
        "nodes": nodes,
        "channels": {**channels, **builder.managed},
        "input_channels": START,
        "output_channels": output_channels,
        "stream_channels": stream_channels,
        "stream_mode": "updates",
        "auto_validate": False,
    }
