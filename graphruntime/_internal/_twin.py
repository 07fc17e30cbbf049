"""Sync/async twins written once: a core that yields requests, two thin shells around it.

A *core* is a generator. What it needs from the outside that is sync in one twin and
async in the other (a hook, a saver read, the next result of a step) it yields as a
:class:`Request` and takes back the result (or gets the error thrown in); another core it
runs as a part of itself it yields as :class:`Nested`; anything else it yields is an item
for the caller. A sync shell performs each request at once
(:func:`perform`, :func:`iterate`), an async one awaits it (:func:`aperform`,
:func:`aiterate`): the semantics live in the core, written once, as psycopg keeps its
protocol apart from its I/O and ``pregel/_saves.py`` hands the saver's I/O to the driver.
"""

from __future__ import annotations

from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Iterator,
)
from functools import partial
from typing import Any, TypeVar

__all__ = (
    "END",
    "Call",
    "Close",
    "Fold",
    "Nested",
    "Next",
    "Request",
    "aiterate",
    "aperform",
    "either",
    "iterate",
    "perform",
)

R = TypeVar("R")


class Request:
    """Something a core needs done: at once in a sync run, awaited in an async one."""

    __slots__ = ()

    def now(self) -> Any:
        raise NotImplementedError

    async def later(self) -> Any:
        raise NotImplementedError


class Call(Request):
    """Request: ``sync(*args)`` in a sync run, ``await async_(*args)`` in an async one.

    ``sync`` None: nothing to do in a sync run (e.g. a read a sync run made already).
    """

    __slots__ = ("args", "async_", "sync")

    def __init__(
        self,
        sync: Callable[..., Any] | None,
        async_: Callable[..., Awaitable[Any]],
        *args: Any,
    ) -> None:
        self.sync = sync
        self.async_ = async_
        self.args = args

    def now(self) -> Any:
        return None if self.sync is None else self.sync(*self.args)

    async def later(self) -> Any:
        return await self.async_(*self.args)


def either(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Call:
    """Request: ``fn(*args, **kwargs)``, a sync function in a sync run and an async one in
    an async run (e.g. a method of a sync or an async callback manager)."""
    bound = partial(fn, *args, **kwargs)
    return Call(bound, bound)


END = object()
"""What :class:`Next` returns for an iterator that has no more items."""


class Next(Request):
    """Request: the next item of ``items`` (an iterator in a sync run, an async iterator
    in an async one), or :data:`END`."""

    __slots__ = ("items",)

    def __init__(self, items: Any) -> None:
        self.items = items

    def now(self) -> Any:
        return next(self.items, END)

    async def later(self) -> Any:
        return await anext(self.items, END)


class Close(Request):
    """Request: close ``items`` (``close()``, or ``aclose()`` awaited), if it can be."""

    __slots__ = ("items",)

    def __init__(self, items: Any) -> None:
        self.items = items

    def now(self) -> None:
        close = getattr(self.items, "close", None)
        if close is not None:
            close()

    async def later(self) -> None:
        aclose = getattr(self.items, "aclose", None)
        if aclose is not None:
            await aclose()


class Fold(Request):
    """Request: ``fold`` over the items of ``sync()`` in a sync run, of ``async_()`` (all
    of them, gathered first) in an async one."""

    __slots__ = ("async_", "fold", "sync")

    def __init__(
        self,
        sync: Callable[[], Iterable[Any]],
        async_: Callable[[], AsyncIterable[Any]],
        fold: Callable[[Iterator[Any]], Any],
    ) -> None:
        self.sync = sync
        self.async_ = async_
        self.fold = fold

    def now(self) -> Any:
        return self.fold(iter(self.sync()))

    async def later(self) -> Any:
        return self.fold(iter([item async for item in self.async_()]))


class Nested:
    """Yielded by a core: run ``core`` here (its items through ``shown``, if given) and
    send back what it returns. Not ``yield from``: that closes the inner core when the
    caller closes the shell, where a core must be thrown GeneratorExit to clean up (its
    cleanup may make requests).

    ``requests=False``: ``core`` yields items only (e.g. the sync twin of a core that
    performs its own requests); a sync shell then delegates to it with ``yield from``,
    and its items reach the caller without crossing a Python loop.
    """

    __slots__ = ("core", "requests", "shown")

    def __init__(
        self,
        core: Generator[Any, Any, Any],
        shown: Callable[[Any], Any] | None = None,
        *,
        requests: bool = True,
    ) -> None:
        self.core = core
        self.shown = shown
        self.requests = requests


class _Cores:
    """What a shell runs: its core and the cores it nested, innermost last.

    :meth:`next` resumes the innermost with what the shell put in :attr:`value` (or
    throws :attr:`error` in) and returns its next request or item; a nested core that
    returns or raises resumes the one that nested it. When the outermost one returns,
    :meth:`next` returns :data:`_FINISHED` and :attr:`result` is what it returned.
    """

    __slots__ = ("cores", "error", "result", "shows", "value")

    def __init__(self, core: Generator[Any, Any, Any]) -> None:
        self.cores = [core]
        self.shows: list[tuple[int, Callable[[Any], Any]]] = []  # (depth, shown)
        self.value: Any = None
        self.error: BaseException | None = None
        self.result: Any = None

    def next(self) -> Any:
        value, error = self.value, self.error
        self.value = self.error = None
        cores = self.cores
        while True:
            core = cores[-1]
            try:
                item = core.send(value) if error is None else core.throw(error)
            except StopIteration as stop:
                value, error = stop.value, None
                if not self._pop():
                    self.result = value
                    return _FINISHED
                continue
            except BaseException as exc:
                if len(cores) == 1:
                    raise
                self._pop()
                value, error = None, exc
                continue
            if not isinstance(item, Nested):
                return item
            cores.append(item.core)
            if item.shown is not None:
                self.shows.append((len(cores), item.shown))
            value, error = None, None

    def _pop(self) -> bool:
        """Drop the innermost core; False if it was the outermost."""
        cores = self.cores
        if len(cores) == 1:
            return False
        if self.shows and self.shows[-1][0] == len(cores):
            self.shows.pop()
        cores.pop()
        return True

    def show(self, item: Any) -> Any:
        """An item as the cores that nested its core show it."""
        for _, shown in reversed(self.shows):
            item = shown(item)
        return item


_FINISHED = object()


def perform(core: Generator[Any, Any, R]) -> R:
    """Run a core that yields only requests, performing each at once; its return value."""
    cores = _Cores(core)
    while (request := cores.next()) is not _FINISHED:
        try:
            cores.value = request.now()
        except BaseException as exc:  # noqa: BLE001 - thrown into the core, at its yield
            cores.error = exc
    return cores.result  # type: ignore[no-any-return]


async def aperform(core: Generator[Any, Any, R]) -> R:
    """Async twin of :func:`perform`: each request awaited."""
    cores = _Cores(core)
    while (request := cores.next()) is not _FINISHED:
        try:
            cores.value = await request.later()
        except BaseException as exc:  # noqa: BLE001 - thrown into the core, at its yield
            cores.error = exc
    return cores.result  # type: ignore[no-any-return]


def iterate(
    core: Generator[Any, Any, R], shown: Callable[[Any], Any] | None = None
) -> Generator[Any, None, R]:
    """A core's items (through ``shown``, if given), its requests performed at once; it
    returns what the core returns.

    What interrupts the caller at an item (``close()``: GeneratorExit) is thrown into the
    core at the same point, so its ``finally``/``except`` run, and may still make requests.
    A nested core runs in a shell of its own, delegated to with ``yield from``: an item
    crosses one Python loop however deep it was nested, and closing this shell closes
    that one first, which throws GeneratorExit into its core.
    """
    send, throw = core.send, core.throw
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            item = send(value) if error is None else throw(error)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        value = error = None
        try:
            if not isinstance(item, _NOT_ITEMS):
                yield item if shown is None else shown(item)
            elif isinstance(item, Nested):
                inner = _then(item.shown, shown)
                if item.requests or inner is not None:
                    value = yield from iterate(item.core, inner)
                else:
                    value = yield from item.core
            else:
                value = item.now()
        except BaseException as exc:  # noqa: BLE001 - thrown into the core, at its yield
            error = exc


_NOT_ITEMS = (Request, Nested)


def _then(
    inner: Callable[[Any], Any] | None, outer: Callable[[Any], Any] | None
) -> Callable[[Any], Any] | None:
    """``inner`` then ``outer``: how a nested core's items are shown."""
    if inner is None or outer is None:
        return inner or outer
    return lambda item: outer(inner(item))


async def aiterate(core: Generator[Any, Any, None]) -> AsyncGenerator[Any, None]:
    """Async twin of :func:`iterate`: each request awaited (a cancellation while one is
    awaited, or ``aclose()``, is thrown into the core there)."""
    cores = _Cores(core)
    while (item := cores.next()) is not _FINISHED:
        try:
            if isinstance(item, Request):
                cores.value = await item.later()
            else:
                yield cores.show(item) if cores.shows else item
        except BaseException as exc:  # noqa: BLE001 - thrown into the core, at its yield
            cores.error = exc
