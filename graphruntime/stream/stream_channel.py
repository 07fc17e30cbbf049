"""A single-consumer queue of projected items, pulled by its reader (as LangGraph's)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import Any, Generic, Protocol, TypeVar

from graphruntime._internal._twin import END, Call, Next, aiterate, either, iterate
from graphruntime.errors import InvalidArgumentError, InvalidArgumentTypeError, UsageError

T = TypeVar("T")


class _Mux(Protocol):
    """What a channel asks of the mux it is bound to (``_mux.StreamMux``)."""

    def _next_push_seq(self) -> int: ...


__all__ = ("StreamChannel",)


class StreamChannel(Generic[T]):
    """One projection of a run: a queue with exactly one reader.

    Nothing runs in the background: when the reader finds the queue empty it calls the
    run's pump (``_request_more`` / ``_arequest_more``), which pulls the next chunk of
    the graph's stream through the mux. Items pushed before anyone subscribed are not
    kept (a projection nobody reads costs nothing), but a *named* channel always
    forwards each push to the mux's main event log (as ``custom:<name>``, or
    ``<name>`` for a native transformer's channel). The mux binds the channel to the
    sync or async lane, closes it when the run ends and fails it when the run fails.
    Use :meth:`tee` / :meth:`atee` for several readers.
    """

    def __init__(self, name: str | None = None, *, maxlen: int | None = None) -> None:
        if maxlen is not None and maxlen <= 0:
            raise InvalidArgumentError("StreamChannel maxlen must be a positive int or None")
        self.name = name
        self._maxlen = maxlen  # accepted for LangGraph parity; the pull pump bounds memory
        self._items: deque[tuple[int, T]] = deque()
        self._closed = False
        self._error: BaseException | None = None
        self._is_async: bool | None = None
        self._subscribed = False
        self._request_more: Callable[[], bool] | None = None
        self._arequest_more: Callable[[], Awaitable[bool]] | None = None
        self._wire_fn: Callable[[T], None] | None = None
        self._mux: _Mux | None = None

    # --- set up by the mux ---------------------------------------------------------------

    def _bind_mux(self, mux: _Mux) -> None:
        self._mux = mux

    def _bind(self, *, is_async: bool) -> None:
        if self._is_async is not None:
            raise UsageError("StreamChannel is already bound")
        self._is_async = is_async

    def _wire(self, fn: Callable[[T], None]) -> None:
        self._wire_fn = fn

    # --- producing -----------------------------------------------------------------------

    def push(self, item: T) -> None:
        """Queue ``item`` for the reader (if any) and forward it (if wired)."""
        if self._subscribed:
            if self._closed:
                raise UsageError("Cannot push to a closed StreamChannel")
            stamp = self._mux._next_push_seq() if self._mux is not None else 0
            self._items.append((stamp, item))
        if self._wire_fn is not None:
            self._wire_fn(item)

    def close(self) -> None:
        self._closed = True

    def fail(self, err: BaseException) -> None:
        """End the channel with ``err``: the reader gets the queued items, then ``err``."""
        self._error = err
        self._closed = True

    # --- reading -------------------------------------------------------------------------

    def _subscribe(self, *, is_async: bool) -> None:
        if self._is_async is None:
            raise InvalidArgumentTypeError(
                "StreamChannel has not been bound yet. "
                "Register the transformer with a StreamMux first."
            )
        if self._is_async and not is_async:
            raise InvalidArgumentTypeError(
                "This StreamChannel is bound to async mode — use 'async for' instead."
            )
        if not self._is_async and is_async:
            raise InvalidArgumentTypeError(
                "This StreamChannel is bound to sync mode — use 'for' instead."
            )
        if self._subscribed:
            fan_out = ".atee(n)" if is_async else ".tee(n)"
            raise UsageError(f"StreamChannel already has a subscriber; use {fan_out} for fan-out.")
        self._subscribed = True

    def _pulled(self, progressed: bool) -> bool:
        """After a pump call: is there more to read (or an end to report)?"""
        return progressed or bool(self._items) or self._closed

    def __iter__(self) -> Iterator[T]:
        return iterate(self._reader(is_async=False))

    def __aiter__(self) -> AsyncIterator[T]:
        return aiterate(self._reader(is_async=True))

    def _reader(self, *, is_async: bool) -> Generator[Any, Any, None]:
        self._subscribe(is_async=is_async)  # now: a second reader is refused at once
        return self._cursor(is_async=is_async)

    def _cursor(self, *, is_async: bool) -> Generator[Any, Any, None]:
        """The reader's items, written once (``_twin.py``): an empty queue pumps the run,
        with its sync pump or its async one."""
        pump = self._arequest_more if is_async else self._request_more
        while True:
            if self._items:
                yield self._items.popleft()[1]
            elif self._closed:
                if self._error is not None:
                    raise self._error
                return
            elif pump is None or not self._pulled((yield either(pump))):
                return

    # --- fan-out -------------------------------------------------------------------------

    def tee(self, n: int = 2) -> tuple[Iterator[T], ...]:
        """``n`` readers of this channel, each seeing every item (sync lane)."""
        return tuple(iterate(branch) for branch in self._branches(n, is_async=False))

    def atee(self, n: int = 2) -> tuple[AsyncIterator[T], ...]:
        """``n`` readers of this channel, each seeing every item (async lane)."""
        return tuple(aiterate(branch) for branch in self._branches(n, is_async=True))

    def _branches(self, n: int, *, is_async: bool) -> list[Generator[Any, Any, None]]:
        """The readers of :meth:`tee` and :meth:`atee`, written once (``_twin.py``).

        Whichever branch finds its buffer empty pulls the next item for all. Async
        branches pull one at a time (the others wait for it) and a failure of the channel
        reaches every branch; a sync branch that pulls a failure raises it alone, and the
        others end, as LangGraph's do.
        """
        if n < 1:
            raise InvalidArgumentError(f"{'atee' if is_async else 'tee'}() requires n >= 1")
        source = aiter(self) if is_async else iter(self)
        buffers: list[deque[T]] = [deque() for _ in range(n)]
        done = False
        error: BaseException | None = None
        lock = asyncio.Lock() if is_async else None

        def branch(buffer: deque[T]) -> Generator[Any, Any, None]:
            nonlocal done, error
            while True:
                if buffer:
                    yield buffer.popleft()
                    continue
                if done:
                    if error is not None:
                        raise error
                    return
                if lock is not None:
                    yield Call(None, lock.acquire)
                try:
                    if buffer or done:
                        continue
                    try:
                        item = yield Next(source)
                    except Exception as exc:
                        if lock is None:
                            raise
                        error, done = exc, True  # every branch re-raises it
                        continue
                    if item is END:
                        done = True
                        continue
                    for other in buffers:
                        other.append(item)
                finally:
                    if lock is not None:
                        lock.release()

        return [branch(b) for b in buffers]
