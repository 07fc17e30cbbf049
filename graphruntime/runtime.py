"""What a running node can reach besides its state (as ``langgraph.runtime``).

A node gets the run's :class:`Runtime` by naming a parameter ``runtime``, or from
:func:`get_runtime`: the run's ``context`` (``invoke(..., context=...)``), the graph's
store, the custom stream writer, what this attempt of the node is
(:class:`ExecutionInfo`), and the run's :class:`RunControl`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Protocol, cast, runtime_checkable

from graphruntime._internal._config import get_config
from graphruntime._internal._constants import CONF, CONFIG_KEY_RUNTIME
from graphruntime.errors import UsageError
from graphruntime.typing import ContextT

if TYPE_CHECKING:
    from graphruntime.store.base import BaseStore

__all__ = (
    "DEFAULT_RUNTIME",
    "BaseUser",
    "ExecutionInfo",
    "RunControl",
    "Runtime",
    "ServerInfo",
    "get_runtime",
)


@runtime_checkable
class BaseUser(Protocol):
    """An authenticated user, as a server hands it to a run (``langgraph_sdk``'s shape)."""

    @property
    def identity(self) -> str: ...
    @property
    def is_authenticated(self) -> bool: ...
    @property
    def display_name(self) -> str: ...
    def __getitem__(self, key: str) -> Any: ...


@dataclass(frozen=True, slots=True)
class ExecutionInfo:
    """What is running: the checkpoint, namespace and task, and which attempt this is."""

    checkpoint_id: str
    checkpoint_ns: str
    task_id: str
    thread_id: str | None = None
    """None when the run has no checkpointer thread."""
    run_id: str | None = None
    """``config["run_id"]``, when the caller gave one."""
    node_attempt: int = 1
    """This attempt of the node, from 1 (retries count up)."""
    node_first_attempt_time: float | None = None
    """When the first attempt started (Unix time, seconds)."""

    def patch(self, **overrides: Any) -> ExecutionInfo:
        """A copy with ``overrides`` replaced."""
        return replace(self, **overrides)


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """Set when a server runs the graph: which assistant and graph, and for whom."""

    assistant_id: str
    graph_id: str
    user: BaseUser | None = None


class RunControl:
    """Asks a run to stop cooperatively between two steps (e.g. on SIGTERM).

    After :meth:`request_drain` the run finishes the step under way, checkpoints it and
    raises ``GraphDrained``; a step that was the last one ends the run normally. One
    control per run: once drained it stays drained. Safe from any thread (one attribute
    write).
    """

    __slots__ = ("_drain_reason",)

    def __init__(self) -> None:
        self._drain_reason: str | None = None

    def request_drain(self, reason: str = "shutdown") -> None:
        self._drain_reason = reason

    @property
    def drain_requested(self) -> bool:
        return self._drain_reason is not None

    @property
    def drain_reason(self) -> str | None:
        return self._drain_reason


def _no_op_stream_writer(_: Any) -> None:
    return None


def _no_op_heartbeat() -> None:
    return None


@dataclass(kw_only=True, slots=True, frozen=True)
class Runtime(Generic[ContextT]):
    """The run-scoped things a node can use besides its state.

    ``config`` is not here: name a ``config`` parameter or call ``get_config()``.
    """

    context: ContextT = field(default=None)  # type: ignore[assignment]
    """The run's context (``invoke(..., context=...)``), coerced to the graph's schema."""
    store: BaseStore | None = None
    """The graph's store (``compile(store=...)``)."""
    stream_writer: Callable[[Any], None] = _no_op_stream_writer
    """Writes to the ``custom`` stream."""
    heartbeat: Callable[[], None] = _no_op_heartbeat
    """Records progress for the node's ``idle_timeout``; a no-op outside one."""
    previous: Any = None
    """The functional API's previous return value for the thread."""
    execution_info: ExecutionInfo | None = None
    """What is running; set for every task."""
    server_info: ServerInfo | None = None
    control: RunControl | None = None
    """The run's drain control; set for every run."""

    def merge(self, other: Runtime[ContextT]) -> Runtime[ContextT]:
        """``other``'s values where it has them (truthy), this runtime's elsewhere."""
        return Runtime(
            context=other.context or self.context,
            store=other.store or self.store,
            stream_writer=self.stream_writer
            if other.stream_writer is _no_op_stream_writer
            else other.stream_writer,
            heartbeat=self.heartbeat if other.heartbeat is _no_op_heartbeat else other.heartbeat,
            previous=self.previous if other.previous is None else other.previous,
            execution_info=other.execution_info or self.execution_info,
            server_info=other.server_info or self.server_info,
            control=other.control or self.control,
        )

    def override(self, **overrides: Any) -> Runtime[ContextT]:
        """A copy with ``overrides`` replaced."""
        return replace(self, **overrides)

    def patch_execution_info(self, **overrides: Any) -> Runtime[ContextT]:
        """A copy whose ``execution_info`` has ``overrides`` replaced."""
        if self.execution_info is None:
            raise UsageError("Cannot patch execution_info before it has been set")
        return replace(self, execution_info=self.execution_info.patch(**overrides))

    @property
    def drain_requested(self) -> bool:
        return self.control.drain_requested if self.control is not None else False

    @property
    def drain_reason(self) -> str | None:
        return self.control.drain_reason if self.control is not None else None


DEFAULT_RUNTIME: Runtime[Any] = Runtime()


def get_runtime(context_schema: type[ContextT] | None = None) -> Runtime[ContextT]:
    """The running node's :class:`Runtime` (only inside a node of a running graph).

    ``context_schema`` only types the result.
    """
    runtime = get_config()[CONF].get(CONFIG_KEY_RUNTIME)
    if runtime is None:
        raise UsageError(
            "get_runtime() called outside of a running graph: call it from a node, a task or a "
            "tool while the graph runs"
        )
    return cast("Runtime[ContextT]", runtime)
