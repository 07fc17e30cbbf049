"""Run streams: what ``stream_events(version="v3")`` returns, driven by their readers.

A run stream holds the graph's own stream (``stream(..., version="v2")``, the same
chunks every other stream API shows) and a :class:`StreamMux`. There is no
background thread or task: whichever projection a caller reads pulls the next
chunk when its queue is empty (the *pump*), converts it to a protocol event and
pushes it through the mux, which fills every projection on the way.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from types import MappingProxyType, TracebackType
from typing import Any, NoReturn

from graphruntime.errors import InvalidArgumentTypeError, UsageError
from graphruntime.stream._convert import convert_to_protocol_event
from graphruntime.stream._mux import StreamMux
from graphruntime.stream._types import LifecyclePayload, ProtocolEvent, SubgraphStatus
from graphruntime.stream.stream_channel import StreamChannel

__all__ = (
    "AsyncGraphRunStream",
    "AsyncSubgraphRunStream",
    "GraphRunStream",
    "SubgraphRunStream",
)


def _missing_projection(run: object, name: str) -> NoReturn:
    # read _mux from __dict__: during __init__ it may not exist yet, and getattr
    # would come back here
    mux = run.__dict__.get("_mux")
    known = ", ".join(sorted(mux.native_keys)) if mux is not None else ""
    raise AttributeError(
        f"{type(run).__name__!r} object has no attribute {name!r} "
        f"(registered projections: {known or 'none'})"
    )


class _RunState:
    """The run's own outcome, kept whatever transformers are registered."""

    _scope_list: list[str]
    _latest: dict[str, Any] | None
    _interrupted: bool
    _interrupts: list[Any]
    _mux: StreamMux

    def _init_state(self, mux: StreamMux) -> None:
        self._mux = mux
        self.extensions: Mapping[str, Any] = MappingProxyType(mux.extensions)
        self._exhausted = False
        self._latest = None
        self._interrupted = False
        self._interrupts = []
        self._scope_list = list(mux.scope)
        for key in mux.native_keys:
            setattr(self, key, mux.extensions[key])

    def _observe_event(self, event: ProtocolEvent) -> None:
        if event["method"] != "values":
            return
        params = event["params"]
        if params["namespace"] != self._scope_list:
            return
        self._latest = params["data"]
        interrupts = params.get("interrupts", ())
        if interrupts:
            self._interrupted = True
            self._interrupts.extend(interrupts)

    def _raise_if_failed(self) -> None:
        if (err := self._mux._events._error) is not None:
            raise err


class GraphRunStream(_RunState):
    """A synchronous run, advanced by iterating any of its projections.

    ``run.values``, ``run.messages``, ``run.lifecycle``, ``run.subgraphs`` (and the
    projections of other native transformers) are attributes; every projection is in
    ``run.extensions``. Iterating ``run`` gives the main log of protocol events.
    ``output``, ``interrupted`` and ``interrupts`` run it to the end. Each projection
    has one reader (``tee`` for more); use the run as a context manager, or call
    :meth:`abort`, to stop it early.
    """

    values: StreamChannel[dict[str, Any]]
    messages: StreamChannel[Any]
    lifecycle: StreamChannel[LifecyclePayload]
    subgraphs: StreamChannel[SubgraphRunStream]
    updates: StreamChannel[dict[str, Any]]
    custom: StreamChannel[Any]
    checkpoints: StreamChannel[dict[str, Any]]
    debug: StreamChannel[dict[str, Any]]
    tasks: StreamChannel[dict[str, Any]]

    def __getattr__(self, name: str) -> StreamChannel[Any]:
        _missing_projection(self, name)

    def __init__(
        self, graph_iter: Iterator[Any] | None, mux: StreamMux, *, wire_pump: bool = True
    ) -> None:
        self._graph_iter = graph_iter
        self._init_state(mux)
        if wire_pump:
            mux.bind_pump(self._pump_next)

    def _pump_next(self) -> bool:
        """Pull one chunk of the graph's stream through the mux; False once it ended."""
        if self._exhausted or self._graph_iter is None:
            return False
        try:
            event = convert_to_protocol_event(next(self._graph_iter))
            self._observe_event(event)
            self._mux.push(event)
        except StopIteration:
            self._exhausted = True
            self._mux.close()
            return False
        except Exception as exc:  # noqa: BLE001 - the run's failure, shown by every projection
            self._exhausted = True
            self._mux.fail(exc)
            return False
        return True

    def _drain(self) -> None:
        while self._pump_next():
            pass
        self._raise_if_failed()

    def abort(self) -> None:
        """Stop the run: close the graph's stream (its running nodes stop) and the mux."""
        if self._exhausted:
            return
        self._exhausted = True
        graph_iter, self._graph_iter = self._graph_iter, None
        # stopping on request: errors from closing (a node's, a finalize's) are moot
        close = getattr(graph_iter, "close", None)
        if close is not None:
            with contextlib.suppress(Exception):
                close()
        with contextlib.suppress(Exception):
            self._mux.close()

    def __enter__(self) -> GraphRunStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.abort()

    @property
    def output(self) -> dict[str, Any] | None:
        """Run to the end; the final state (raises the run's error)."""
        self._drain()
        return self._latest

    @property
    def interrupted(self) -> bool:
        """Run to the end; whether it stopped at an interrupt."""
        self._drain()
        return self._interrupted

    @property
    def interrupts(self) -> list[Any]:
        """Run to the end; the interrupts it stopped at."""
        self._drain()
        return self._interrupts

    def __iter__(self) -> Iterator[ProtocolEvent]:
        return iter(self._mux._events)

    def interleave(self, *names: str) -> Iterator[tuple[str, Any]]:
        """Read several projections in the order their items arrived: ``(name, item)``.

        The named projections are subscribed while the generator runs.
        """
        channels: dict[str, StreamChannel[Any]] = {}
        try:
            for name in names:
                channel = self.extensions[name]
                _check_interleavable(name, channel)
                channel._subscribed = True
                channels[name] = channel
            yield from self._interleave(channels)
        finally:
            for channel in channels.values():
                channel._subscribed = False

    def _interleave(self, channels: dict[str, StreamChannel[Any]]) -> Iterator[tuple[str, Any]]:
        done: set[str] = set()
        while len(done) < len(channels):
            earliest: tuple[int, str] | None = None
            for name, channel in channels.items():
                if name in done:
                    continue
                if channel._items:
                    stamp = channel._items[0][0]
                    if earliest is None or stamp < earliest[0]:
                        earliest = (stamp, name)
                elif channel._closed:
                    if channel._error is not None:
                        raise channel._error
                    done.add(name)
            if earliest is not None:
                yield earliest[1], channels[earliest[1]]._items.popleft()[1]
                continue
            pump = self._mux._pump_fn
            if pump is not None and pump():
                continue
            finished = {n for n, c in channels.items() if not c._items and c._closed}
            for name in finished - done:
                if channels[name]._error is not None:
                    raise channels[name]._error  # type: ignore[misc]
            if finished <= done:
                return  # nothing more will come: the pump is gone
            done |= finished


def _check_interleavable(name: str, channel: Any) -> None:
    if not isinstance(channel, StreamChannel):
        raise InvalidArgumentTypeError(
            f"interleave() requires StreamChannel projections, got {type(channel).__name__} "
            f"for {name!r}"
        )
    if channel._is_async is None:
        raise InvalidArgumentTypeError(
            f"StreamChannel {name!r} has not been bound yet. "
            "Register the transformer with a StreamMux first."
        )
    if channel._is_async:
        raise InvalidArgumentTypeError(
            f"StreamChannel {name!r} is bound to async mode — "
            "sync interleave() cannot consume async channels."
        )
    if channel._subscribed:
        raise UsageError(
            f"StreamChannel {name!r} already has a subscriber; use .tee(n) for fan-out."
        )


class AsyncGraphRunStream(_RunState):
    """An asynchronous run, advanced by reading any of its projections.

    As :class:`GraphRunStream`, with ``output()``, ``interrupted()`` and
    ``interrupts()`` as coroutines. Several tasks may read at once: one of them
    pulls the next chunk while the others wait for it to land.
    """

    values: StreamChannel[dict[str, Any]]
    messages: StreamChannel[Any]
    lifecycle: StreamChannel[LifecyclePayload]
    subgraphs: StreamChannel[AsyncSubgraphRunStream]
    updates: StreamChannel[dict[str, Any]]
    custom: StreamChannel[Any]
    checkpoints: StreamChannel[dict[str, Any]]
    debug: StreamChannel[dict[str, Any]]
    tasks: StreamChannel[dict[str, Any]]

    def __getattr__(self, name: str) -> StreamChannel[Any]:
        _missing_projection(self, name)

    def __init__(
        self,
        graph_aiter: AsyncIterator[Any] | None,
        mux: StreamMux,
        *,
        wire_pump: bool = True,
    ) -> None:
        self._graph_aiter = graph_aiter
        self._init_state(mux)
        self._pump_cond = asyncio.Condition()
        self._pumping = False
        self._anext_task: asyncio.Future[Any] | None = None
        self._aborting = False
        if wire_pump:
            mux.bind_apump(self._apump_next)

    async def _apump_next(self) -> bool:
        """Pull one chunk through the mux, or wait for the task that is pulling one.

        True when a chunk landed (by this task or another), False once the run ended.
        """
        async with self._pump_cond:
            if self._exhausted or self._graph_aiter is None:
                return False
            if self._pumping:
                await self._pump_cond.wait()
                return not self._exhausted
            self._pumping = True
            graph_aiter = self._graph_aiter
        try:
            return await self._pull(graph_aiter)
        finally:
            async with self._pump_cond:
                self._pumping = False
                self._pump_cond.notify_all()

    async def _pull(self, graph_aiter: AsyncIterator[Any]) -> bool:
        try:
            # a task of its own, so abort() can cancel a pull that is waiting on a node
            self._anext_task = asyncio.ensure_future(anext(graph_aiter))
            try:
                part = await self._anext_task
            except asyncio.CancelledError:
                if self._aborting:
                    self._exhausted = True
                    return False
                self._anext_task.cancel()
                raise
            finally:
                self._anext_task = None
            event = convert_to_protocol_event(part)
            self._observe_event(event)
            await self._mux.apush(event)
        except StopAsyncIteration:
            self._exhausted = True
            await self._mux.aclose()
            return False
        except Exception as exc:  # noqa: BLE001 - the run's failure, shown by every projection
            self._exhausted = True
            await self._mux.afail(exc)
            return False
        return True

    async def _drain(self) -> None:
        while await self._apump_next():
            pass
        self._raise_if_failed()

    async def abort(self) -> None:
        """Stop the run: cancel a pull in flight, close the graph's stream and the mux."""
        async with self._pump_cond:
            if self._exhausted:
                return
            self._exhausted = True
            self._aborting = True
            graph_aiter, self._graph_aiter = self._graph_aiter, None
            in_flight = self._anext_task
            self._pump_cond.notify_all()
        # stopping on request: errors from closing (a node's, a finalize's) are moot
        if in_flight is not None and not in_flight.done():
            in_flight.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await in_flight
        aclose = getattr(graph_aiter, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()
        with contextlib.suppress(Exception):
            await self._mux.aclose()

    async def __aenter__(self) -> AsyncGraphRunStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.abort()

    async def output(self) -> dict[str, Any] | None:
        """Run to the end; the final state (raises the run's error)."""
        await self._drain()
        return self._latest

    async def interrupted(self) -> bool:
        """Run to the end; whether it stopped at an interrupt."""
        await self._drain()
        return self._interrupted

    async def interrupts(self) -> list[Any]:
        """Run to the end; the interrupts it stopped at."""
        await self._drain()
        return self._interrupts

    def __aiter__(self) -> AsyncIterator[ProtocolEvent]:
        return aiter(self._mux._events)


class _SubgraphHandle:
    """What a subgraph's handle knows about it; ``SubgraphTransformer`` updates it."""

    path: tuple[str, ...]
    graph_name: str | None
    trigger_call_id: str | None
    status: SubgraphStatus
    error: str | None
    _seen_terminal: bool

    def _init_handle(
        self, path: tuple[str, ...], graph_name: str | None, trigger_call_id: str | None
    ) -> None:
        self.path = path
        self.graph_name = graph_name
        self.trigger_call_id = trigger_call_id
        self.status = "started"
        self.error = None
        self._seen_terminal = False


class SubgraphRunStream(GraphRunStream, _SubgraphHandle):
    """A subgraph of a sync run; reading its projections advances the whole run."""

    def __init__(
        self,
        mux: StreamMux,
        *,
        path: tuple[str, ...],
        graph_name: str | None = None,
        trigger_call_id: str | None = None,
    ) -> None:
        self._parent_pump_fn: Callable[[], bool] | None = mux._pump_fn
        super().__init__(None, mux, wire_pump=False)
        self._init_handle(path, graph_name, trigger_call_id)

    def _pump_next(self) -> bool:
        if (
            self._exhausted
            or self._seen_terminal
            or self._mux._events._closed
            or self._parent_pump_fn is None
        ):
            return False
        return self._parent_pump_fn()


class AsyncSubgraphRunStream(AsyncGraphRunStream, _SubgraphHandle):
    """A subgraph of an async run; reading its projections advances the whole run."""

    def __init__(
        self,
        mux: StreamMux,
        *,
        path: tuple[str, ...],
        graph_name: str | None = None,
        trigger_call_id: str | None = None,
    ) -> None:
        self._parent_apump_fn: Callable[[], Awaitable[bool]] | None = mux._apump_fn
        super().__init__(None, mux, wire_pump=False)
        self._init_handle(path, graph_name, trigger_call_id)

    async def _apump_next(self) -> bool:
        if (
            self._exhausted
            or self._seen_terminal
            or self._mux._events._closed
            or self._parent_apump_fn is None
        ):
            return False
        return await self._parent_apump_fn()
