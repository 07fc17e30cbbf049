"""Value types of the public API (as ``langgraph.types``)."""

from __future__ import annotations

import dataclasses
import importlib
import warnings
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Generic, Literal, NamedTuple, NotRequired, TypeVar

from typing_extensions import TypeAliasType, TypedDict

from graphruntime._internal._config import RunnableConfig, StreamWriter
from graphruntime._internal._fields import update_as_tuples
from graphruntime._internal._interrupt import Interrupt, interrupt_id
from graphruntime._internal._metadata import CheckpointMetadata
from graphruntime.errors import InvalidArgumentError, InvalidArgumentTypeError
from graphruntime.warnings import LangGraphDeprecatedSinceV11

Interrupt.__module__ = __name__  # its public home; defined below types so errors can use it

__all__ = (
    "All",
    "CachePolicy",  # noqa: F822 - a higher layer's, loaded by __getattr__ below
    "CheckpointPayload",
    "CheckpointStreamPart",
    "CheckpointTask",
    "Checkpointer",  # noqa: F822 - a higher layer's, loaded by __getattr__
    "Command",
    "CustomStreamPart",
    "DebugPayload",
    "DebugStreamPart",
    "Durability",
    "GraphOutput",
    "Interrupt",
    "MessagesStreamPart",
    "Overwrite",
    "PregelExecutableTask",  # noqa: F822 - a higher layer's, loaded by __getattr__
    "PregelTask",
    "RetryPolicy",
    "Send",
    "StateSnapshot",
    "StateUpdate",
    "StreamMode",
    "StreamPart",
    "StreamWriter",
    "TaskPayload",
    "TaskResultPayload",
    "TasksStreamPart",
    "TimeoutPolicy",
    "TracePolicy",
    "UpdatesStreamPart",
    "ValuesStreamPart",
    "default_retry_on",
    "interrupt",
    "omit_payload",
)


# LangGraph's names for types that live in higher layers here: CachePolicy with the cache
# (its default key goes through the checkpoint serde), a step's executable task and what
# compile(checkpointer=...) takes with the step machinery. Loaded on first use, so this
# module imports neither.
_ELSEWHERE = {
    "CachePolicy": ("graphruntime.cache", "CachePolicy"),
    "Checkpointer": ("graphruntime.pregel.main", "Checkpointer"),
    "PregelExecutableTask": ("graphruntime.pregel._algo", "PreparedTask"),
}


def __getattr__(name: str) -> Any:
    if name in _ELSEWHERE:
        module, attr = _ELSEWHERE[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


All = Literal["*"]
StreamMode = Literal["values", "updates", "custom", "debug", "messages", "checkpoints", "tasks"]
Durability = Literal["sync", "async", "exit"]
"""When a run saves: ``"sync"`` each step before the next starts, ``"async"`` each step
while the next runs, ``"exit"`` only the run's last checkpoint."""


def _http_status(exc: Exception) -> int | bool | None:
    """The status of an HTTP client's error (httpx, requests): False when it is not one."""
    for cls in type(exc).__mro__:
        module = cls.__module__.split(".")[0]
        if (module, cls.__name__) in (("httpx", "HTTPStatusError"), ("requests", "HTTPError")):
            response = getattr(exc, "response", None)
            status = getattr(response, "status_code", None) if response is not None else None
            return status if isinstance(status, int) else None
    return False


def default_retry_on(exc: Exception) -> bool:
    """LangGraph's default: retry everything but programming errors and most OS errors.

    An HTTP client's status error (httpx, requests) is retried on a 5xx status, or when
    there is no response at all.
    """
    if isinstance(exc, ConnectionError):
        return True
    status = _http_status(exc)
    if status is not False:
        return status is None or 500 <= status < 600
    return not isinstance(
        exc,
        (
            ValueError,
            TypeError,
            ArithmeticError,
            ImportError,
            LookupError,
            NameError,
            SyntaxError,
            RuntimeError,
            ReferenceError,
            StopIteration,
            StopAsyncIteration,
            OSError,
        ),
    )


class RetryPolicy(NamedTuple):
    """How often and when to retry a failing node; ``GraphInterrupt`` is never retried."""

    initial_interval: float = 0.5
    backoff_factor: float = 2.0
    max_interval: float = 128.0
    max_attempts: int = 3
    jitter: bool = True
    retry_on: type[Exception] | Sequence[type[Exception]] | Callable[[Exception], bool] = (
        default_retry_on
    )


def _timeout_seconds(value: float | timedelta | None, *, field: str) -> float | None:
    if value is None:
        return None
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds <= 0:
        raise InvalidArgumentError(
            f"{field} must be greater than 0 seconds, got {value!r}; leave it unset for no limit"
        )
    return seconds


@dataclass(frozen=True, slots=True)
class TimeoutPolicy:
    """Time limits for each attempt of a node (async nodes only).

    Args:
        run_timeout: a wall-clock cap in seconds; progress does not extend it.
        idle_timeout: the longest an attempt may go without progress (a write, a
            streamed chunk, ``runtime.heartbeat()``).
        refresh_on: ``"auto"``: any progress refreshes ``idle_timeout``;
            ``"heartbeat"``: only ``runtime.heartbeat()`` does.

    A number or a ``timedelta`` given where a policy is expected is a ``run_timeout``.
    An attempt past its limit is cancelled and fails with ``NodeTimeoutError``, which
    the node's ``RetryPolicy`` may retry.
    """

    run_timeout: float | timedelta | None = None
    idle_timeout: float | timedelta | None = None
    refresh_on: Literal["auto", "heartbeat"] = "auto"

    @classmethod
    def coerce(cls, value: float | timedelta | TimeoutPolicy | None) -> TimeoutPolicy | None:
        """Normalize ``value`` to a policy with limits in seconds (None: no limit)."""
        if value is None:
            return None
        if not isinstance(value, TimeoutPolicy):
            if isinstance(value, bool) or not isinstance(value, int | float | timedelta):
                raise InvalidArgumentTypeError(
                    f"A timeout is a number of seconds, a timedelta or a TimeoutPolicy, "
                    f"got {value!r}"
                )
            value = cls(run_timeout=value)
        if value.refresh_on not in ("auto", "heartbeat"):
            raise InvalidArgumentError(
                f"refresh_on must be 'auto' or 'heartbeat', not {value.refresh_on!r}"
            )
        run = _timeout_seconds(value.run_timeout, field="run_timeout")
        idle = _timeout_seconds(value.idle_timeout, field="idle_timeout")
        if run is None and idle is None:
            return None
        if value.run_timeout is run and value.idle_timeout is idle:
            return value  # already coerced (frozen: safe to share)
        return cls(run_timeout=run, idle_timeout=idle, refresh_on=value.refresh_on)


@dataclass(frozen=True, slots=True)
class TracePolicy:
    """What a node's own trace run records (tracing callbacks only; never execution).

    Args:
        process_inputs: maps the node's input to what its trace run records.
        process_outputs: maps the node's output to what its trace run records.
    """

    process_inputs: Callable[[Any], Any] | None = None
    process_outputs: Callable[[Any], Any] | None = None


def omit_payload(_value: Any) -> dict[str, Any]:
    """A ``TracePolicy`` processor that records an empty payload."""
    return {}


class Send:
    """A packet for ``node`` with its own input ``arg``: one task in the next step."""

    __slots__ = ("node", "arg", "timeout")

    def __init__(
        self,
        /,
        node: str,
        arg: Any,
        *,
        timeout: float | timedelta | TimeoutPolicy | None = None,
    ) -> None:
        self.node = node
        self.arg = arg
        self.timeout = TimeoutPolicy.coerce(timeout)
        """This task's time limits; None: the target node's own."""

    def __hash__(self) -> int:
        return hash((self.node, repr(self.arg), self.timeout))

    def __repr__(self) -> str:
        if self.timeout is None:
            return f"Send(node={self.node!r}, arg={self.arg!r})"
        return f"Send(node={self.node!r}, arg={self.arg!r}, timeout={self.timeout!r})"

    def __eq__(self, value: object) -> bool:
        return (
            isinstance(value, Send)
            and self.node == value.node
            and self.arg == value.arg
            and self.timeout == value.timeout
        )


N = TypeVar("N", bound=Hashable)


@dataclass(kw_only=True, slots=True, frozen=True)
class Command(Generic[N]):
    """Update state, route to nodes, or resume an interrupt — from a node or as input."""

    graph: str | None = None
    update: Any | None = None
    resume: dict[str, Any] | Any | None = None
    goto: Send | Sequence[Send | N] | N = ()

    PARENT: ClassVar[Literal["__parent__"]] = "__parent__"

    def __repr__(self) -> str:
        contents = ", ".join(
            f"{f.name}={getattr(self, f.name)!r}"
            for f in dataclasses.fields(self)
            if getattr(self, f.name)
        )
        return f"Command({contents})"

    def _update_as_tuples(self) -> Sequence[tuple[str, Any]]:
        return update_as_tuples(self.update)


@dataclass(slots=True)
class Overwrite:
    """Write ``value`` to a reducer channel, bypassing the reducer."""

    value: Any
    type: Literal["__overwrite__"] = "__overwrite__"


class PregelTask(NamedTuple):
    """One task of a pending step, as shown by ``get_state``."""

    id: str
    name: str
    path: tuple[Any, ...]
    error: Exception | None = None
    interrupts: tuple[Interrupt, ...] = ()
    state: RunnableConfig | StateSnapshot | None = None
    result: Any | None = None


class StateUpdate(NamedTuple):
    """One update of ``bulk_update_state``: ``values`` as if ``as_node`` returned them."""

    values: dict[str, Any] | None
    as_node: str | None = None
    task_id: str | None = None


class StateSnapshot(NamedTuple):
    """State of a thread at the start of a step."""

    values: dict[str, Any] | Any
    next: tuple[str, ...]
    config: RunnableConfig
    metadata: dict[str, Any] | None
    created_at: str | None
    parent_config: RunnableConfig | None
    tasks: tuple[PregelTask, ...]
    interrupts: tuple[Interrupt, ...]


# --- stream parts: what ``stream(..., version="v2")`` yields --------------------------------

StateT = TypeVar("StateT")
OutputT = TypeVar("OutputT")


class TaskPayload(TypedDict):
    """A task about to run (``stream_mode="tasks"``)."""

    id: str
    name: str
    input: Any
    triggers: list[str]
    metadata: NotRequired[dict[str, Any]]
    """The task's run metadata (``langgraph_node``, ``lc_agent_name``...), when not empty."""


class TaskResultPayload(TypedDict):
    """A task that ended (``stream_mode="tasks"``): its writes, error or interrupts."""

    id: str
    name: str
    error: str | None
    interrupts: list[dict[str, Any]]
    result: dict[str, Any]


class CheckpointTask(TypedDict):
    """One task of a :class:`CheckpointPayload`."""

    id: str
    name: str
    error: NotRequired[str]
    result: NotRequired[Any]
    interrupts: NotRequired[list[dict[str, Any]]]
    state: StateSnapshot | RunnableConfig | None


class CheckpointPayload(TypedDict, Generic[StateT]):
    """A saved checkpoint (``stream_mode="checkpoints"``), shaped as ``get_state`` shows it."""

    config: RunnableConfig | None
    metadata: CheckpointMetadata
    values: StateT
    next: list[str]
    parent_config: RunnableConfig | None
    tasks: list[CheckpointTask]


class _DebugCheckpointPayload(TypedDict, Generic[StateT]):
    step: int
    timestamp: str
    type: Literal["checkpoint"]
    payload: CheckpointPayload[StateT]


class _DebugTaskPayload(TypedDict):
    step: int
    timestamp: str
    type: Literal["task"]
    payload: TaskPayload


class _DebugTaskResultPayload(TypedDict):
    step: int
    timestamp: str
    type: Literal["task_result"]
    payload: TaskResultPayload


DebugPayload = TypeAliasType(
    "DebugPayload",
    _DebugCheckpointPayload[StateT] | _DebugTaskPayload | _DebugTaskResultPayload,
    type_params=(StateT,),
)
"""A ``debug`` chunk: a checkpoint, task or task result with its step; see ``type``."""


class ValuesStreamPart(TypedDict, Generic[OutputT]):
    """The state after a step; interrupts are in their own field, not in ``data``."""

    type: Literal["values"]
    ns: tuple[str, ...]
    data: OutputT
    interrupts: tuple[Interrupt, ...]


class UpdatesStreamPart(TypedDict):
    """What each node of a step returned: ``{node: update}``."""

    type: Literal["updates"]
    ns: tuple[str, ...]
    data: dict[str, Any]


class MessagesStreamPart(TypedDict):
    """An LLM message or token with its run metadata: ``data`` is ``(message, metadata)``."""

    type: Literal["messages"]
    ns: tuple[str, ...]
    data: tuple[Any, dict[str, Any]]


class CustomStreamPart(TypedDict):
    """A value a node wrote with its ``StreamWriter``."""

    type: Literal["custom"]
    ns: tuple[str, ...]
    data: Any


class CheckpointStreamPart(TypedDict, Generic[StateT]):
    type: Literal["checkpoints"]
    ns: tuple[str, ...]
    data: CheckpointPayload[StateT]


class TasksStreamPart(TypedDict):
    """A task's start (``TaskPayload``) or end (``TaskResultPayload``)."""

    type: Literal["tasks"]
    ns: tuple[str, ...]
    data: TaskPayload | TaskResultPayload


class DebugStreamPart(TypedDict, Generic[StateT]):
    type: Literal["debug"]
    ns: tuple[str, ...]
    data: DebugPayload[StateT]


StreamPart = TypeAliasType(
    "StreamPart",
    ValuesStreamPart[OutputT]
    | UpdatesStreamPart
    | MessagesStreamPart
    | CustomStreamPart
    | CheckpointStreamPart[StateT]
    | TasksStreamPart
    | DebugStreamPart[StateT],
    type_params=(StateT, OutputT),
)
"""One chunk of ``stream(..., version="v2")``; ``part["type"]`` tells which."""


class GraphOutputKeyAccessWarning(LangGraphDeprecatedSinceV11):
    """``result[key]`` / ``key in result`` on a :class:`GraphOutput`: use ``.value``.

    A LangGraph 1.1 deprecation, so ported ``pytest.warns`` / filter lines naming
    ``LangGraphDeprecatedSinceV11`` catch it.
    """


@dataclass(frozen=True)
class GraphOutput(Generic[OutputT]):
    """What ``invoke(..., version="v2")`` returns: the output and the run's interrupts."""

    value: OutputT
    interrupts: tuple[Interrupt, ...] = ()

    def __getitem__(self, key: str) -> Any:
        _warn_key_access("result[key]")
        if key == "__interrupt__":
            return self.interrupts
        if isinstance(self.value, dict):
            return self.value[key]
        try:
            return getattr(self.value, key)
        except AttributeError:
            raise KeyError(key) from None

    def __contains__(self, key: object) -> bool:
        _warn_key_access("key in result")
        if key == "__interrupt__":
            return bool(self.interrupts)
        if isinstance(self.value, dict):
            return key in self.value
        return isinstance(key, str) and hasattr(self.value, key)


def _warn_key_access(how: str) -> None:
    # LangGraph's wording: ported filters match on it.
    warnings.warn(
        f"Accessing GraphOutput via `{how}` is deprecated. Use `result.value` to access "
        "the output value directly, or `result.interrupts` for interrupts.",
        GraphOutputKeyAccessWarning,
        stacklevel=3,
    )


def interrupt(
    value: Any,
    *,
    response_schema: Any = None,
    deadline: timedelta | datetime | None = None,
    default: Any = None,
) -> Any:
    """Pause the running node and show ``value`` to the caller.

    The first call raises ``GraphInterrupt``; when the thread is resumed with
    ``Command(resume=answer)`` the node runs again from its first line and this
    call returns ``answer``. Several calls in one node are matched by position.

    ``deadline`` (a timedelta from now, or an aware datetime) and ``default`` are
    graphruntime's: the wait ends at the deadline, and ``default`` answers it. On the
    workers the sweeper resumes an expired wait with ``default`` (once, as actor
    ``deadline``); in-process nothing runs by itself: the deadline is stored with the
    interrupt (``get_state().interrupts[i].deadline``) for the caller to act on.
    """
    from graphruntime._internal._config import get_config
    from graphruntime._internal._constants import (
        CONFIG_KEY_CHECKPOINT_NS,
        CONFIG_KEY_SCRATCHPAD,
        CONFIG_KEY_SEND,
        RESUME,
    )
    from graphruntime.errors import GraphInterrupt, mark_invalid_resume

    conf = get_config()["configurable"]
    until = _deadline(deadline, default)
    adapter = None
    if response_schema is not None and not isinstance(response_schema, dict):
        from pydantic import TypeAdapter

        adapter = TypeAdapter(response_schema)

    def validate(v: Any) -> Any:
        if adapter is None:
            return v
        try:
            return adapter.validate_python(v)
        except ValueError as exc:  # pydantic's ValidationError
            mark_invalid_resume(exc)
            raise

    scratchpad = conf[CONFIG_KEY_SCRATCHPAD]
    idx = scratchpad.interrupt_counter()
    if idx < len(scratchpad.resume):
        v = scratchpad.resume[idx]
        validated = validate(v)
        conf[CONFIG_KEY_SEND]([(RESUME, scratchpad.resume[: idx + 1])])
        return validated
    v = scratchpad.get_null_resume(True)
    if v is not None:
        validated = validate(v)
        scratchpad.resume.append(v)
        conf[CONFIG_KEY_SEND]([(RESUME, list(scratchpad.resume))])
        return validated
    new_id = interrupt_id(conf[CONFIG_KEY_CHECKPOINT_NS], len(scratchpad.resume))
    if until is not None:
        # the same wait asked again (its task re-ran): the clock does not restart
        earlier = scratchpad.previous_interrupts.get(new_id)
        if earlier is not None and earlier.deadline is not None:
            until = earlier.deadline
    raise GraphInterrupt(
        (
            Interrupt(
                value=value,
                id=new_id,
                response_schema=adapter.json_schema() if adapter is not None else response_schema,
                deadline=until,
                default=default if until is not None else None,
            ),
        )
    )


def _deadline(deadline: timedelta | datetime | None, default: Any) -> datetime | None:
    """The absolute deadline ``interrupt()`` was given, checked."""
    if deadline is None:
        if default is not None:
            raise InvalidArgumentError(
                "interrupt(default=...) needs deadline=: the default answers it"
            )
        return None
    if default is None:
        raise InvalidArgumentError(
            "interrupt(deadline=...) needs default=: the resume value applied when it passes"
        )
    if isinstance(deadline, timedelta):
        return datetime.now(UTC) + deadline
    if isinstance(deadline, datetime):
        if deadline.tzinfo is None:
            raise InvalidArgumentError(
                "interrupt(deadline=...) takes a timedelta or an aware datetime "
                "(with tzinfo), not a naive one"
            )
        return deadline.astimezone(UTC)
    raise InvalidArgumentTypeError(
        f"interrupt(deadline=...) takes a timedelta or a datetime, not {deadline!r}"
    )
