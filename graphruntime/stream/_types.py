"""The protocol event envelope and the transformer contract (as ``langgraph.stream._types``)."""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Coroutine
from typing import Any, ClassVar, Literal, NotRequired

from typing_extensions import TypedDict

from graphruntime.errors import UsageError

_logger = logging.getLogger(__name__)

__all__ = ("ProtocolEvent", "StreamTransformer", "transformer_requires_async")


class _ProtocolEventParams(TypedDict):
    namespace: list[str]
    timestamp: int
    """Wall-clock milliseconds: may go backwards; order by the event's ``seq``."""
    data: Any
    interrupts: NotRequired[tuple[Any, ...]]


class ProtocolEvent(TypedDict):
    """One raw stream chunk in the event envelope ``stream_events(version="v3")`` uses.

    ``seq`` numbers the events of the root log in order; ``method`` is the stream
    mode (``"values"``, ``"messages"``...) or a transformer channel's name.
    """

    type: Literal["event"]
    event_id: NotRequired[str]
    seq: NotRequired[int]
    method: str
    params: _ProtocolEventParams


class StreamTransformer(ABC):
    """A projection of a run's protocol events (``run.values``, ``run.messages``...).

    ``init`` returns the projections (a dict; its :class:`StreamChannel` values are
    wired by the mux); ``process`` sees every event and returns False to keep it out
    of the main log. ``finalize`` / ``fail`` run when the run ends. A transformer that
    needs an event loop overrides ``aprocess`` / ``afinalize`` / ``afail``, calls
    :meth:`schedule`, or sets ``requires_async``: it then runs only under
    ``astream_events``.

    Class attributes: ``required_stream_modes`` (the stream modes the run must emit
    for it), ``before_builtins`` (register before the built-in transformers, e.g. to
    redact content they copy), ``supports_sync`` (async hooks that also work sync),
    and ``_native`` (its projections become attributes of the run stream).
    """

    requires_async: ClassVar[bool] = False
    supports_sync: ClassVar[bool] = False
    required_stream_modes: ClassVar[tuple[str, ...]] = ()
    before_builtins: ClassVar[bool] = False

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        self.scope: tuple[str, ...] = scope

    @abstractmethod
    def init(self) -> dict[str, Any]:
        """The projections this transformer contributes, by name."""

    def _on_register(self, mux: Any) -> None:  # noqa: B027 - an optional hook
        """Called once the mux registered this transformer (a hook for nested muxes)."""

    def process(self, event: ProtocolEvent) -> bool:
        """See one event (sync lane); False keeps it out of the main log."""
        raise NotImplementedError(f"{type(self).__name__} must override process() or aprocess()")

    async def aprocess(self, event: ProtocolEvent) -> bool:
        """See one event (async lane); the mux awaits it before the next transformer."""
        return self.process(event)

    def finalize(self) -> None:  # noqa: B027 - an optional hook
        """The run ended normally (sync lane)."""

    async def afinalize(self) -> None:
        """The run ended normally (async lane), after every scheduled task finished."""
        self.finalize()

    def fail(self, err: BaseException) -> None:  # noqa: B027 - an optional hook
        """The run ended with ``err`` (sync lane)."""

    async def afail(self, err: BaseException) -> None:
        """The run ended with ``err`` (async lane), after scheduled tasks were cancelled."""
        self.fail(err)

    def schedule(
        self,
        coro: Coroutine[Any, Any, Any],
        *,
        on_error: Literal["log", "raise"] = "log",
    ) -> asyncio.Task[Any]:
        """Run ``coro`` alongside the run; the mux awaits it before finalizing.

        ``on_error="log"`` logs a failure; ``"raise"`` fails the run with it. Needs a
        running event loop (``astream_events``).
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise UsageError(
                f"{type(self).__name__}.schedule() needs a running event loop: use "
                "astream_events(version='v3'), and set requires_async = True on the class "
                "so a sync run refuses it when it registers."
            ) from None
        task = asyncio.create_task(_logged(coro) if on_error == "log" else coro)
        tasks = self._scheduled_task_set()
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        return task

    def _scheduled_task_set(self) -> set[asyncio.Task[Any]]:
        # created lazily: subclasses need not call super().__init__()
        tasks: set[asyncio.Task[Any]] | None = getattr(self, "_stream_scheduled_tasks", None)
        if tasks is None:
            tasks = set()
            self._stream_scheduled_tasks = tasks
        return tasks


async def _logged(coro: Coroutine[Any, Any, Any]) -> Any:
    try:
        return await coro
    except asyncio.CancelledError:
        raise
    except BaseException:
        _logger.exception("A task scheduled by a StreamTransformer failed")
        return None


def transformer_requires_async(transformer: StreamTransformer) -> bool:
    """Whether ``transformer`` can only run with an event loop (``astream_events``)."""
    if transformer.requires_async:
        return True
    if transformer.supports_sync:
        return False
    cls = type(transformer)
    return any(
        getattr(cls, name) is not getattr(StreamTransformer, name)
        for name in ("aprocess", "afinalize", "afail")
    )


SubgraphStatus = Literal["started", "completed", "failed", "interrupted", "drained"]


class LifecycleCause(TypedDict):
    """Why a subagent started: the tool call that spawned it."""

    type: Literal["toolCall"]
    tool_call_id: str


class LifecyclePayload(TypedDict, total=False):
    """One ``lifecycle`` event: a subgraph started or reached a terminal status."""

    event: SubgraphStatus
    namespace: list[str]
    graph_name: NotRequired[str]
    trigger_call_id: NotRequired[str]
    cause: NotRequired[LifecycleCause]
    error: NotRequired[str]
