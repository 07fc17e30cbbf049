"""Graph lifecycle callbacks: a run paused at interrupts, or resumed (as ``langgraph.callbacks``).

Pass a :class:`GraphCallbackHandler` in ``config["callbacks"]`` (alone, in a list, or in
a LangChain callback manager): its ``on_interrupt`` / ``on_resume`` get a
:class:`GraphInterruptEvent` / :class:`GraphResumeEvent`. Other LangChain handlers in the
same config get the usual chain callbacks and none of these. A handler that raises is
logged and skipped unless it sets ``raise_error = True``.

Needs langchain-core (``pip install 'graphruntime[messages]'``): the handlers are
LangChain callback handlers. This module is one of the few graphruntime modules that
import it (import-linter's ``graphruntime-pure`` contract lists them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypeVar
from uuid import UUID

from graphruntime.errors import InvalidArgumentTypeError, MissingDependencyError

try:
    from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
    from langchain_core.callbacks.manager import ahandle_event, handle_event
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError(
        "graphruntime.callbacks needs langchain-core: pip install 'graphruntime[messages]'"
    ) from exc

from graphruntime._internal._config import RunnableConfig
from graphruntime.types import Interrupt

__all__ = (
    "GraphCallbackHandler",
    "GraphInterruptEvent",
    "GraphLifecycleEvent",
    "GraphLifecycleStatus",
    "GraphResumeEvent",
    "get_async_graph_callback_manager_for_config",
    "get_sync_graph_callback_manager_for_config",
)

GraphLifecycleStatus: TypeAlias = Literal[
    "input", "pending", "done", "interrupt_before", "interrupt_after", "out_of_steps"
]
"""The run's status when a lifecycle event was taken."""


@dataclass(frozen=True)
class GraphInterruptEvent:
    """The run paused: at ``interrupts`` (empty for a static breakpoint)."""

    run_id: UUID | None
    status: GraphLifecycleStatus
    checkpoint_id: str
    checkpoint_ns: tuple[str, ...]
    interrupts: tuple[Interrupt, ...]


@dataclass(frozen=True)
class GraphResumeEvent:
    """The run resumed from the checkpoint ``checkpoint_id``."""

    run_id: UUID | None
    status: GraphLifecycleStatus
    checkpoint_id: str
    checkpoint_ns: tuple[str, ...]


GraphLifecycleEvent: TypeAlias = GraphInterruptEvent | GraphResumeEvent


class GraphCallbackHandler(BaseCallbackHandler):
    """Subclass and override the events you want; both default to doing nothing."""

    def on_interrupt(self, event: GraphInterruptEvent) -> Any:
        """The run paused at one or more interrupts."""

    def on_resume(self, event: GraphResumeEvent) -> Any:
        """The run resumed from a saved checkpoint."""


def _graph_handlers(handlers: Sequence[BaseCallbackHandler]) -> list[GraphCallbackHandler]:
    return [h for h in handlers if isinstance(h, GraphCallbackHandler)]


_MISSING: Any = object()
_ManagerT = TypeVar("_ManagerT", bound="_GraphManagerBase")


class _GraphManagerBase(BaseCallbackManager):
    """A callback manager holding only graph handlers, bound to the graph's run id.

    ``add_handler`` accepts any LangChain handler (instrumentation libraries inject
    theirs this way); only graph handlers receive the lifecycle events.
    """

    run_id: UUID | None

    def __init__(
        self,
        handlers: Sequence[GraphCallbackHandler] | None = None,
        inheritable_handlers: Sequence[GraphCallbackHandler] | None = None,
        parent_run_id: UUID | None = None,
        *,
        tags: list[str] | None = None,
        inheritable_tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inheritable_metadata: dict[str, Any] | None = None,
        run_id: UUID | None = None,
    ) -> None:
        super().__init__(
            handlers=list(handlers or ()),
            inheritable_handlers=list(inheritable_handlers or ()),
            parent_run_id=parent_run_id,
            tags=tags,
            inheritable_tags=inheritable_tags,
            metadata=metadata,
            inheritable_metadata=inheritable_metadata,
        )
        self.run_id = run_id

    @classmethod
    def _from_manager(cls: type[_ManagerT], source: Any, run_id: UUID | None) -> _ManagerT:
        return cls(
            handlers=_graph_handlers(source.handlers),
            inheritable_handlers=_graph_handlers(source.inheritable_handlers),
            parent_run_id=source.parent_run_id,
            tags=list(source.tags),
            inheritable_tags=list(source.inheritable_tags),
            metadata=dict(source.metadata),
            inheritable_metadata=dict(source.inheritable_metadata),
            run_id=run_id,
        )

    def copy(self: _ManagerT, *, run_id: UUID | None = _MISSING) -> _ManagerT:
        if run_id is not _MISSING and run_id is not None and not isinstance(run_id, UUID):
            raise InvalidArgumentTypeError("run_id must be a UUID or None")
        return self._from_manager(self, self.run_id if run_id is _MISSING else run_id)

    @classmethod
    def configure(
        cls: type[_ManagerT], callbacks: object | None = None, *, run_id: UUID | None = None
    ) -> _ManagerT:
        """A manager with the graph handlers among ``callbacks`` (handler, list or manager)."""
        if callbacks is None:
            return cls(run_id=run_id)
        if isinstance(callbacks, cls):
            return callbacks.copy(run_id=run_id)
        if isinstance(callbacks, BaseCallbackManager):
            return cls._from_manager(callbacks, run_id)
        if isinstance(callbacks, GraphCallbackHandler):
            return cls((callbacks,), run_id=run_id)
        if isinstance(callbacks, (str, bytes)) or not isinstance(callbacks, Sequence):
            raise InvalidArgumentTypeError(
                "callbacks must be a callback handler, a sequence of them, or a callback "
                f"manager; got {type(callbacks).__name__}"
            )
        return cls(_graph_handlers(list(callbacks)), run_id=run_id)


class _GraphCallbackManager(_GraphManagerBase):
    """Sync dispatcher of graph lifecycle events."""

    def on_interrupt(self, event: GraphInterruptEvent) -> None:
        handle_event(self.handlers, "on_interrupt", None, event)

    def on_resume(self, event: GraphResumeEvent) -> None:
        handle_event(self.handlers, "on_resume", None, event)


class _AsyncGraphCallbackManager(_GraphManagerBase):
    """Async dispatcher of graph lifecycle events."""

    @property
    def is_async(self) -> bool:
        return True

    async def on_interrupt(self, event: GraphInterruptEvent) -> None:
        await ahandle_event(self.handlers, "on_interrupt", None, event)

    async def on_resume(self, event: GraphResumeEvent) -> None:
        await ahandle_event(self.handlers, "on_resume", None, event)


def get_sync_graph_callback_manager_for_config(
    config: RunnableConfig, *, run_id: UUID | None = None
) -> _GraphCallbackManager:
    """The graph handlers of ``config["callbacks"]``, bound to ``run_id``."""
    return _GraphCallbackManager.configure(config.get("callbacks"), run_id=run_id)


def get_async_graph_callback_manager_for_config(
    config: RunnableConfig, *, run_id: UUID | None = None
) -> _AsyncGraphCallbackManager:
    """Async twin of :func:`get_sync_graph_callback_manager_for_config`."""
    return _AsyncGraphCallbackManager.configure(config.get("callbacks"), run_id=run_id)
