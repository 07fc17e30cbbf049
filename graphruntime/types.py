"""Value types of the public API (as ``langgraph.types``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Generic, Literal, NamedTuple, TypeVar

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._fields import update_as_tuples
from graphruntime._internal._interrupt import Interrupt, interrupt_id

Interrupt.__module__ = __name__  # its public home; defined below types so errors can use it

__all__ = (
    "All",
    "Command",
    "Durability",
    "Interrupt",
    "Overwrite",
    "PregelTask",
    "RetryPolicy",
    "Send",
    "StateSnapshot",
    "StreamMode",
    "default_retry_on",
    "interrupt",
)

All = Literal["*"]
StreamMode = Literal["values", "updates", "custom", "debug", "messages", "checkpoints", "tasks"]
Durability = Literal["sync", "async", "exit"]


def default_retry_on(exc: Exception) -> bool:
    """LangGraph's default: retry everything but programming errors and most OS errors."""
    if isinstance(exc, ConnectionError):
        return True
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


class Send:
    """A packet for ``node`` with its own input ``arg``: one task in the next step."""

    __slots__ = ("node", "arg")

    def __init__(self, /, node: str, arg: Any) -> None:
        self.node = node
        self.arg = arg

    def __hash__(self) -> int:
        return hash((self.node, repr(self.arg)))

    def __repr__(self) -> str:
        return f"Send(node={self.node!r}, arg={self.arg!r})"

    def __eq__(self, value: object) -> bool:
        return isinstance(value, Send) and self.node == value.node and self.arg == value.arg


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
    from graphruntime.errors import GraphInterrupt

    conf = get_config()["configurable"]
    until = _deadline(deadline, default)
    adapter = None
    if response_schema is not None and not isinstance(response_schema, dict):
        from pydantic import TypeAdapter

        adapter = TypeAdapter(response_schema)

    def validate(v: Any) -> Any:
        return adapter.validate_python(v) if adapter is not None else v

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
            raise ValueError("interrupt(default=...) needs deadline=: the default answers it")
        return None
    if default is None:
        raise ValueError(
            "interrupt(deadline=...) needs default=: the resume value applied when it passes"
        )
    if isinstance(deadline, timedelta):
        return datetime.now(UTC) + deadline
    if isinstance(deadline, datetime):
        if deadline.tzinfo is None:
            raise ValueError(
                "interrupt(deadline=...) takes a timedelta or an aware datetime "
                "(with tzinfo), not a naive one"
            )
        return deadline.astimezone(UTC)
    raise TypeError(f"interrupt(deadline=...) takes a timedelta or a datetime, not {deadline!r}")
