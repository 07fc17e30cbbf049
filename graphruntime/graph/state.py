"""``StateGraph``: the builder users write graphs with, compiled into a :class:`Pregel`."""

from __future__ import annotations

import logging
import warnings
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Generic, Self

from graphruntime._internal._call import check_signature
from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import NS_END, NS_SEP
from graphruntime.cache.base import BaseCache
from graphruntime.channels import BaseChannel, LastValue
from graphruntime.checkpoint.base import BaseCheckpointSaver
from graphruntime.constants import END, START
from graphruntime.drawing import Graph
from graphruntime.errors import GraphValidationError, InvalidArgumentTypeError
from graphruntime.graph._branch import BranchSpec
from graphruntime.graph._compile import compile_graph, find_subgraph
from graphruntime.graph._schema import (
    first_param_schema,
    make_mapper,
    schema_fields,
    warn_invalid_state_schema,
)
from graphruntime.graph._spec import NodeDef, node_name
from graphruntime.managed.base import ManagedValueSpec
from graphruntime.pregel._builder import Parallel_
from graphruntime.pregel.main import Pregel
from graphruntime.store.base import BaseStore
from graphruntime.types import All, CachePolicy, RetryPolicy, TimeoutPolicy, TracePolicy
from graphruntime.typing import ContextT, InputT, OutputT, StateT
from graphruntime.warnings import LangGraphDeprecatedSinceV05, LangGraphDeprecatedSinceV10

__all__ = ("CompiledStateGraph", "StateGraph", "find_subgraph")

logger = logging.getLogger(__name__)

DEFAULT_ERROR_HANDLER = "__default_error_handler__"
_MISSING: Any = object()


@dataclass
class _NodeDefaults:
    """``set_node_defaults``: policies every node gets unless it sets its own."""

    retry_policy: tuple[RetryPolicy, ...] | None = None
    cache_policy: CachePolicy[Any] | None = None
    error_handler: Any = None
    timeout: TimeoutPolicy | None = None


def _policies(retry: RetryPolicy | Sequence[RetryPolicy] | None) -> tuple[RetryPolicy, ...] | None:
    if retry is None:
        return None
    return (retry,) if isinstance(retry, RetryPolicy) else tuple(retry)


def _deprecated(kwargs: dict[str, Any], name: str, message: str, category: type[Warning]) -> Any:
    value = kwargs.pop(name, _MISSING)
    if value is not _MISSING:
        warnings.warn(message, category, stacklevel=3)
    return value


def _reject_unknown(kwargs: dict[str, Any], where: str) -> None:
    if kwargs:
        names = ", ".join(sorted(kwargs))
        raise InvalidArgumentTypeError(f"{where} got unexpected keyword argument(s): {names}")


class StateGraph(Generic[StateT, ContextT, InputT, OutputT]):
    """A graph whose nodes read and write a shared state (as ``langgraph.graph.StateGraph``).

    Args:
        state_schema: the state: a TypedDict, dataclass or pydantic model (one channel
            per field), or any other type (``list``, ``Annotated[list, add]``): the
            whole state is one value.
        context_schema: the run's context (``invoke(..., context=...)``), given to nodes
            as ``runtime.context``.
        input_schema / output_schema: what a run takes and returns (default: the state).
    """

    def __init__(
        self,
        state_schema: Any,
        context_schema: Any = None,
        *,
        input_schema: Any = None,
        output_schema: Any = None,
        **kwargs: Any,
    ) -> None:
        config_schema = _deprecated(
            kwargs,
            "config_schema",
            "`config_schema` is deprecated and will be removed. Please use `context_schema` "
            "instead.",
            LangGraphDeprecatedSinceV10,
        )
        if config_schema is not _MISSING and context_schema is None:
            context_schema = config_schema
        input_ = _deprecated(
            kwargs,
            "input",
            "`input` is deprecated and will be removed. Please use `input_schema` instead.",
            LangGraphDeprecatedSinceV05,
        )
        if input_ is not _MISSING and input_schema is None:
            input_schema = input_
        output = _deprecated(
            kwargs,
            "output",
            "`output` is deprecated and will be removed. Please use `output_schema` instead.",
            LangGraphDeprecatedSinceV05,
        )
        if output is not _MISSING and output_schema is None:
            output_schema = output
        _reject_unknown(kwargs, "StateGraph()")
        self.state_schema = state_schema
        self.context_schema = context_schema
        self.input_schema = input_schema or state_schema
        self.output_schema = output_schema or state_schema
        self.channels: dict[str, BaseChannel] = {}
        self.managed: dict[str, ManagedValueSpec] = {}
        self.schemas: dict[Any, dict[str, BaseChannel | ManagedValueSpec]] = {}
        self.nodes: dict[str, NodeDef] = {}
        self.edges: set[tuple[str, str]] = set()
        self.waiting_edges: set[tuple[tuple[str, ...], str]] = set()
        self.branches: defaultdict[str, dict[str, BranchSpec]] = defaultdict(dict)
        self.compiled = False
        self._node_defaults = _NodeDefaults()
        self._add_schema(self.state_schema)
        self._add_schema(self.input_schema, allow_managed=False)
        self._add_schema(self.output_schema, allow_managed=False)

    def _add_schema(self, schema: Any, allow_managed: bool = True) -> None:
        if schema in self.schemas:
            return
        warn_invalid_state_schema(schema)
        channels, managed = schema_fields(schema)
        if managed and not allow_managed:
            raise GraphValidationError(
                f"Invalid managed channels detected in {getattr(schema, '__name__', '')}: "
                f"{', '.join(managed)}. Managed channels are not permitted in Input/Output "
                "schema."
            )
        self.schemas[schema] = {**channels, **managed}
        for key, channel in channels.items():
            if key not in self.channels:
                self.channels[key] = channel
            elif type(self.channels[key]) is not type(channel) and not isinstance(
                channel, LastValue
            ):
                raise GraphValidationError(f"Channel '{key}' already exists with a different type")
        for key, spec in managed.items():
            if key in self.managed and self.managed[key] is not spec:
                raise GraphValidationError(
                    f"Managed value '{key}' already exists with a different type"
                )
            self.managed[key] = spec

    # --- building -------------------------------------------------------------------------

    def set_node_defaults(
        self,
        *,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        cache_policy: CachePolicy[Any] | None = None,
        error_handler: Callable[..., Any] | None = None,
        timeout: float | timedelta | TimeoutPolicy | None = None,
    ) -> Self:
        """Policies for every node that does not set its own, applied at ``compile()``.

        ``retry_policy`` and ``timeout`` also apply to error handlers; ``cache_policy``
        and ``error_handler`` only to regular nodes (a handler never handles itself).
        Subgraphs do not inherit them.
        """
        defaults = self._node_defaults
        if retry_policy is not None:
            defaults.retry_policy = _policies(retry_policy)
        if cache_policy is not None:
            defaults.cache_policy = cache_policy
        if error_handler is not None:
            defaults.error_handler = error_handler
        if timeout is not None:
            defaults.timeout = TimeoutPolicy.coerce(timeout)
        return self

    def add_node(
        self,
        node: str | Callable[..., Any] | Any,
        action: Callable[..., Any] | Any = None,
        *,
        defer: bool = False,
        metadata: dict[str, Any] | None = None,
        input_schema: Any = None,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        cache_policy: CachePolicy[Any] | None = None,
        error_handler: Callable[..., Any] | None = None,
        destinations: dict[str, str] | tuple[str, ...] | None = None,
        timeout: float | timedelta | TimeoutPolicy | None = None,
        trace_policy: TracePolicy | None = None,
        **kwargs: Any,
    ) -> Self:
        """Add a node: a function of the state, an async function, or a compiled graph.

        ``error_handler`` runs in the same step when the node fails for good (after its
        retries); it gets the node's input and, as ``error: NodeError``, what failed.
        ``timeout`` limits each attempt of an async node.
        """
        retry = _deprecated(
            kwargs,
            "retry",
            "`retry` is deprecated and will be removed. Please use `retry_policy` instead.",
            LangGraphDeprecatedSinceV05,
        )
        if retry is not _MISSING and retry_policy is None:
            retry_policy = retry
        input_ = _deprecated(
            kwargs,
            "input",
            "`input` is deprecated and will be removed. Please use `input_schema` instead.",
            LangGraphDeprecatedSinceV05,
        )
        if input_ is not _MISSING and input_schema is None:
            input_schema = input_
        _reject_unknown(kwargs, "add_node()")
        coerced_timeout = TimeoutPolicy.coerce(timeout)
        if not isinstance(node, str):
            action = node
            node = node_name(action)
        if action is None:
            raise GraphValidationError(f"Node `{node}` needs an action (a function or a graph).")
        if isinstance(action, dict):
            # LangGraph runs a dict node as LangChain's RunnableParallel
            parallel: Any = Parallel_(action)
            action = parallel
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
        check_signature(action)
        inferred = None if input_schema is not None else first_param_schema(action)
        schema = input_schema or inferred or self.state_schema
        handler_name: str | None = None
        if error_handler is not None:
            handler_name = f"__error_handler__{node}"
            if handler_name in self.nodes:
                raise GraphValidationError(
                    f"Auto-generated error handler node `{handler_name}` already exists."
                )
            check_signature(error_handler)
            self.nodes[handler_name] = NodeDef(
                error_handler, schema, None, {}, False, is_error_handler=True
            )
        if input_schema is not None or inferred is not None:
            self._add_schema(schema)
        self.nodes[node] = NodeDef(
            action,
            schema,
            _policies(retry_policy),
            dict(metadata or {}),
            defer,
            destinations,
            cache_policy=cache_policy,
            timeout=coerced_timeout,
            error_handler=handler_name,
            trace_policy=trace_policy,
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
        """Route from ``source`` by calling ``path`` on the state after ``source`` ran.

        ``path`` reads the state as its first parameter's type says (a schema class), or
        as ``source`` reads it.
        """
        name = getattr(path, "__name__", None) or "condition"
        if name == "<lambda>":
            name = "condition" if "condition" not in self.branches[source] else name
        if name in self.branches[source]:
            raise GraphValidationError(
                f"Branch with name `{name}` already exists for node `{source}`"
            )
        branch = BranchSpec.from_path(path, path_map)
        self.branches[source][name] = branch
        if branch.input_schema is not None:
            self._add_schema(branch.input_schema)
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

    def _apply_node_defaults(self) -> None:
        """Give every node the defaults it does not override (once, at compile)."""
        defaults = self._node_defaults
        if defaults.error_handler is not None:
            existing = self.nodes.get(DEFAULT_ERROR_HANDLER)
            if existing is None or existing.action is not defaults.error_handler:
                if existing is not None:
                    raise GraphValidationError(
                        f"Auto-generated default error handler node `{DEFAULT_ERROR_HANDLER}` "
                        "already exists."
                    )
                check_signature(defaults.error_handler)
                self.nodes[DEFAULT_ERROR_HANDLER] = NodeDef(
                    defaults.error_handler,
                    self.state_schema,
                    None,
                    {},
                    False,
                    is_error_handler=True,
                )
        for spec in self.nodes.values():
            if not spec.is_error_handler:
                if defaults.error_handler is not None and spec.error_handler is None:
                    spec.error_handler = DEFAULT_ERROR_HANDLER
                if defaults.cache_policy is not None and spec.cache_policy is None:
                    spec.cache_policy = defaults.cache_policy
            if defaults.retry_policy is not None and spec.retry_policy is None:
                spec.retry_policy = defaults.retry_policy
            if defaults.timeout is not None and spec.timeout is None:
                spec.timeout = defaults.timeout

    # --- compile --------------------------------------------------------------------------

    def compile(
        self,
        checkpointer: BaseCheckpointSaver | bool | None = None,
        *,
        cache: BaseCache[Any] | None = None,
        store: BaseStore | None = None,
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        debug: bool = False,
        name: str | None = None,
        transformers: Sequence[Callable[[tuple[str, ...]], Any]] | None = None,
        **kwargs: Any,
    ) -> CompiledStateGraph[StateT, ContextT, InputT, OutputT]:
        """Validate the graph and turn it into an executable :class:`CompiledStateGraph`.

        Args:
            checkpointer: a saver; ``True`` (a subgraph that keeps its own history under
                its parent's saver), ``False`` (never checkpoint), None (inherit).
            cache: where cached node results live (nodes with a ``cache_policy``).
            store: the long-term store nodes get as ``store``/``runtime.store``.
            transformers: :class:`~graphruntime.stream.StreamTransformer` classes (or
                ``scope -> transformer`` factories) added to every
                ``stream_events(version="v3")`` run of the graph, after the built-in ones.
        """
        _reject_unknown(kwargs, "compile()")
        if checkpointer not in (None, True, False) and not isinstance(
            checkpointer, BaseCheckpointSaver
        ):
            raise InvalidArgumentTypeError(
                "Invalid checkpointer provided. Expected an instance of `BaseCheckpointSaver`, "
                f"`True`, `False`, or `None`. Received {type(checkpointer).__name__}. Pass a "
                "proper saver (e.g., InMemorySaver, PostgresSaver)."
            )
        interrupt_before = interrupt_before or []
        interrupt_after = interrupt_after or []
        self.validate(
            interrupt=[
                *(interrupt_before if interrupt_before != "*" else []),
                *(interrupt_after if interrupt_after != "*" else []),
            ]
        )
        self._apply_node_defaults()
        compiled = CompiledStateGraph[StateT, ContextT, InputT, OutputT](
            **compile_graph(self),
            checkpointer=checkpointer,
            interrupt_before_nodes=interrupt_before,
            interrupt_after_nodes=interrupt_after,
            name=name or "LangGraph",
            store=store,
            cache=cache,
            context_schema=self.context_schema,
            debug=debug,
            stream_transformers=transformers,
        )
        compiled.builder = self
        compiled._output_mapper = make_mapper(self.output_schema, compiled.output_channels)
        compiled._state_mapper = make_mapper(self.state_schema, compiled.stream_channels)
        return compiled


class CompiledStateGraph(Pregel, Generic[StateT, ContextT, InputT, OutputT]):
    """A compiled :class:`StateGraph`; run with ``invoke``/``stream``."""

    builder: StateGraph[StateT, ContextT, InputT, OutputT]

    # --- drawing and schemas (see _draw.py, _jsonschema.py) -------------------------------

    def get_graph(self, config: RunnableConfig | None = None, *, xray: int | bool = False) -> Graph:
        """The drawable graph; ``xray`` inlines subgraphs (``True``: all levels, ``n``: n)."""
        from graphruntime.graph._draw import draw_graph

        return draw_graph(self, self.builder, config, xray=xray)

    async def aget_graph(
        self, config: RunnableConfig | None = None, *, xray: int | bool = False
    ) -> Graph:
        return self.get_graph(config, xray=xray)

    def get_input_jsonschema(self, config: RunnableConfig | None = None) -> dict[str, Any]:
        from graphruntime.graph._jsonschema import input_jsonschema

        return input_jsonschema(self.builder, self.name)

    def get_output_jsonschema(self, config: RunnableConfig | None = None) -> dict[str, Any]:
        from graphruntime.graph._jsonschema import output_jsonschema

        return output_jsonschema(self.builder, self.name)

    def get_context_jsonschema(self) -> dict[str, Any] | None:
        from graphruntime.graph._jsonschema import context_jsonschema

        return context_jsonschema(self.builder)

    def config_schema(self, *, include: Sequence[str] | None = None) -> Any:
        """Deprecated: the context schema (use ``get_context_jsonschema``)."""
        warnings.warn(
            "`config_schema` is deprecated. Use `get_context_jsonschema` for the relevant "
            "schema instead.",
            LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        return self.builder.context_schema if self.builder.context_schema is not None else {}

    def get_config_jsonschema(self, *, include: Sequence[str] | None = None) -> Any:
        """Deprecated: use ``get_context_jsonschema``."""
        warnings.warn(
            "`get_config_jsonschema` is deprecated. Use `get_context_jsonschema` instead.",
            LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        return self.get_context_jsonschema()
