"""The mux: routes a run's protocol events through its transformers into the main log."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from graphruntime.errors import InvalidArgumentError, InvalidArgumentTypeError, UsageError
from graphruntime.stream._types import (
    ProtocolEvent,
    StreamTransformer,
    transformer_requires_async,
)
from graphruntime.stream.stream_channel import StreamChannel

TransformerFactory = Callable[[tuple[str, ...]], StreamTransformer]
"""Builds a transformer for a scope (a namespace): a transformer class is one."""


class StreamMux:
    """Owns a run's main event log and its transformers' projections.

    Every event goes through each transformer's ``process`` in registration order,
    then into the main log unless a transformer declined it; the root mux numbers
    the events it logs (``seq``). Named channels in a projection forward each push
    into the log as an event of their own. A mux built from ``factories`` can make
    child muxes for nested scopes (a subgraph's handle); ``transformers`` are
    registered on this mux only. ``before_builtins`` transformers come first.
    """

    def __init__(
        self,
        transformers: list[StreamTransformer] | None = None,
        *,
        is_async: bool = False,
        factories: list[TransformerFactory] | None = None,
        scope: tuple[str, ...] = (),
        _assign_seq: bool = True,
    ) -> None:
        self.is_async = is_async
        self.scope: tuple[str, ...] = scope
        self._assign_seq = _assign_seq
        self._events: StreamChannel[ProtocolEvent] = StreamChannel()
        self._events._bind(is_async=is_async)
        self._events._bind_mux(self)
        self._transformers: list[StreamTransformer] = []
        self._channels: list[StreamChannel[Any]] = []
        self._seq = 0
        self._push_seq = 0
        self.extensions: dict[str, Any] = {}
        self.native_keys: set[str] = set()
        self._projection_owners: dict[str, str] = {}
        self._transformer_by_key: dict[str, StreamTransformer] = {}
        self._factories = list(factories) if factories is not None else None
        self._pump_fn: Callable[[], bool] | None = None
        self._apump_fn: Callable[[], Awaitable[bool]] | None = None
        if factories is not None:
            self._register_all(factory(scope) for factory in factories)
        self._register_all(transformers or ())

    def _register_all(self, transformers: Iterable[StreamTransformer]) -> None:
        built = list(transformers)
        first = [t for t in built if getattr(t, "before_builtins", False)]
        for transformer in [*first, *(t for t in built if t not in first)]:
            self._register(transformer)

    def transformer_by_key(self, key: str) -> StreamTransformer | None:
        """The transformer that contributed projection ``key``."""
        return self._transformer_by_key.get(key)

    def _next_push_seq(self) -> int:
        self._push_seq += 1
        return self._push_seq

    # --- pumps and child muxes -----------------------------------------------------------

    def bind_pump(self, fn: Callable[[], bool]) -> None:
        """Let every reader of this mux pull the run forward with ``fn`` (sync lane)."""
        self._pump_fn = fn
        self._events._request_more = fn
        for channel in self._channels:
            channel._request_more = fn
        for transformer in self._transformers:
            bind = getattr(transformer, "_bind_pump", None)
            if bind is not None:
                bind(fn)

    def bind_apump(self, fn: Callable[[], Awaitable[bool]]) -> None:
        """Async twin of :meth:`bind_pump`."""
        self._apump_fn = fn
        self._events._arequest_more = fn
        for channel in self._channels:
            channel._arequest_more = fn
        for transformer in self._transformers:
            bind = getattr(transformer, "_bind_apump", None)
            if bind is not None:
                bind(fn)

    def _make_child(self, scope: tuple[str, ...]) -> StreamMux:
        """A mux for a nested scope with fresh transformers from the same factories."""
        if self._factories is None:
            raise UsageError(
                "StreamMux._make_child requires the mux to be constructed with "
                "`factories=`; pre-built transformers can't be cloned to a new scope."
            )
        child = StreamMux(
            factories=self._factories, is_async=self.is_async, scope=scope, _assign_seq=False
        )
        if self._pump_fn is not None:
            child.bind_pump(self._pump_fn)
        if self._apump_fn is not None:
            child.bind_apump(self._apump_fn)
        return child

    def _register(self, transformer: StreamTransformer) -> None:
        name = type(transformer).__name__
        if transformer_requires_async(transformer) and not self.is_async:
            raise UsageError(
                f"{name} requires an async run — it overrides aprocess/afinalize/afail or "
                "sets requires_async=True. Use astream_events(version='v3'), not "
                "stream_events(version='v3')."
            )
        projection = transformer.init()
        if not isinstance(projection, dict):
            raise InvalidArgumentTypeError(
                f"StreamTransformer.init() must return a dict, got {type(projection).__name__}"
            )
        clashes = sorted(set(projection) & set(self.extensions))
        if clashes:
            owners = ", ".join(f"{k!r} (owned by {self._projection_owners[k]})" for k in clashes)
            raise InvalidArgumentError(
                f"Transformer {name} returned projection keys that conflict with "
                f"already-registered keys: {owners}"
            )
        native = bool(getattr(transformer, "_native", False))
        self._transformers.append(transformer)
        for value in projection.values():
            if isinstance(value, StreamChannel):
                self._adopt(value, native=native)
        self.extensions.update(projection)
        for key in projection:
            self._projection_owners[key] = name
            self._transformer_by_key[key] = transformer
        if native:
            self.native_keys.update(projection)
        transformer._on_register(self)

    def _adopt(self, channel: StreamChannel[Any], *, native: bool) -> None:
        channel._bind(is_async=self.is_async)
        channel._bind_mux(self)
        self._channels.append(channel)
        if channel.name is not None:
            method = channel.name if native else f"custom:{channel.name}"
            channel._wire(lambda item: self._forward(method, item))

    # --- dispatch ------------------------------------------------------------------------

    def _log(self, event: ProtocolEvent) -> None:
        # numbered when it enters the log, so events a transformer forwarded while
        # processing it come first, in order
        if self._assign_seq:
            self._seq += 1
            event["seq"] = self._seq
        self._events.push(event)

    def push(self, event: ProtocolEvent) -> None:
        """Show ``event`` to every transformer, then log it unless one declined."""
        keep = True
        for transformer in self._transformers:
            if not transformer.process(event):
                keep = False
        if keep:
            self._log(event)

    async def apush(self, event: ProtocolEvent) -> None:
        """Async twin of :meth:`push`: each ``aprocess`` is awaited in turn."""
        keep = True
        for transformer in self._transformers:
            if not await transformer.aprocess(event):
                keep = False
        if keep:
            self._log(event)

    def _forward(self, method: str, item: Any) -> None:
        """A named channel's push, logged as an event (not shown to the transformers)."""
        self._log(
            {
                "type": "event",
                "method": method,
                "params": {
                    "namespace": [],
                    "timestamp": int(time.time() * 1000),
                    "data": item,
                },
            }
        )

    # --- the end of the run --------------------------------------------------------------

    def _close_channels(self) -> None:
        for channel in self._channels:
            if not channel._closed:
                channel.close()
        self._events.close()

    def close(self) -> None:
        """Finalize every transformer, then close the projections and the log.

        A failing ``finalize`` does not stop the others; the first error is raised last.
        """
        first: BaseException | None = None
        for transformer in self._transformers:
            try:
                transformer.finalize()
            except BaseException as exc:  # noqa: BLE001 - re-raised after the cleanup
                first = first or exc
        self._close_channels()
        if first is not None:
            raise first

    def fail(self, err: BaseException) -> None:
        """Fail every transformer, projection and the log with ``err``."""
        for transformer in self._transformers:
            with contextlib.suppress(BaseException):  # the run's own error wins
                transformer.fail(err)
        for channel in self._channels:
            if not channel._closed:
                channel.fail(err)
        self._events.fail(err)

    async def aclose(self) -> None:
        """Async twin of :meth:`close`; scheduled transformer tasks finish first."""
        pending = self._collect_scheduled_tasks()
        if pending:
            results = await asyncio.gather(*pending, return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException) and not isinstance(
                    result, asyncio.CancelledError
                ):
                    raise result
        first: BaseException | None = None
        for transformer in self._transformers:
            try:
                await transformer.afinalize()
            except BaseException as exc:  # noqa: BLE001 - re-raised after the cleanup
                first = first or exc
        self._close_channels()
        if first is not None:
            raise first

    async def afail(self, err: BaseException) -> None:
        """Async twin of :meth:`fail`; scheduled transformer tasks are cancelled first."""
        pending = self._collect_scheduled_tasks()
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        for transformer in self._transformers:
            with contextlib.suppress(BaseException):  # the run's own error wins
                await transformer.afail(err)
        for channel in self._channels:
            if not channel._closed:
                channel.fail(err)
        if not self._events._closed:
            self._events.fail(err)

    def _collect_scheduled_tasks(self) -> list[asyncio.Task[Any]]:
        return [
            task
            for transformer in self._transformers
            for task in getattr(transformer, "_stream_scheduled_tasks", ())
            if not task.done()
        ]
