"""``_internal/_twin.py``: one core, a sync shell that performs its requests, an async
shell that awaits them; errors, closes and cancellations reach the core where it is."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

import pytest

from graphruntime._internal._twin import (
    Call,
    Nested,
    aiterate,
    aperform,
    iterate,
    perform,
)


class Log:
    def __init__(self) -> None:
        self.entries: list[str] = []

    def note(self, entry: str) -> str:
        self.entries.append(entry)
        return entry.upper()

    async def anote(self, entry: str) -> str:
        await asyncio.sleep(0)
        self.entries.append("async " + entry)
        return entry.upper()


def _inner(log: Log) -> Generator[Any, Any, str]:
    try:
        got = yield Call(log.note, log.anote, "inner")
        yield f"item {got}"
        yield "item 2"
        return "inner done"
    except GeneratorExit:
        yield Call(log.note, log.anote, "inner cleanup")  # a request while closing
        raise


def _outer(log: Log) -> Generator[Any, Any, None]:
    try:
        returned = yield Nested(_inner(log), lambda item: f"<{item}>")
        yield f"returned {returned}"
    except BaseException as exc:
        yield Call(log.note, log.anote, f"outer saw {type(exc).__name__}")
        raise


def test_the_sync_shell_performs_requests_and_shows_nested_items() -> None:
    log = Log()
    assert list(iterate(_outer(log))) == ["<item INNER>", "<item 2>", "returned inner done"]
    assert log.entries == ["inner"]


def test_the_async_shell_awaits_the_same_core() -> None:
    log = Log()

    async def read() -> list[Any]:
        return [item async for item in aiterate(_outer(log))]

    assert asyncio.run(read()) == ["<item INNER>", "<item 2>", "returned inner done"]
    assert log.entries == ["async inner"]


def test_closing_the_sync_shell_runs_each_cores_cleanup_with_its_requests() -> None:
    log = Log()
    items = iterate(_outer(log))
    assert next(items) == "<item INNER>"
    items.close()
    assert log.entries == ["inner", "inner cleanup", "outer saw GeneratorExit"]


def _items_only(log: Log) -> Generator[str, Any, str]:
    try:
        yield "a"
        yield "b"
        return "items done"
    finally:
        log.note("items cleanup")


def _delegating(log: Log) -> Generator[Any, Any, None]:
    try:
        returned = yield Nested(_items_only(log), requests=False)
        yield f"returned {returned}"
    except BaseException as exc:
        yield Call(log.note, log.anote, f"outer saw {type(exc).__name__}")
        raise


def test_a_nested_core_without_requests_is_delegated_to_and_closed_with_the_shell() -> None:
    log = Log()
    assert list(iterate(_delegating(log))) == ["a", "b", "returned items done"]
    assert log.entries == ["items cleanup"]
    log = Log()
    items = iterate(_delegating(log))
    assert next(items) == "a"
    items.close()
    assert log.entries == ["items cleanup", "outer saw GeneratorExit"]


def test_a_nested_core_without_requests_still_has_its_items_shown() -> None:
    log = Log()
    shown = iterate(_delegating(log), lambda item: f"<{item}>")
    assert list(shown) == ["<a>", "<b>", "<returned items done>"]


def test_closing_the_async_shell_runs_each_cores_cleanup_with_its_requests() -> None:
    log = Log()

    async def read_one() -> None:
        items = aiterate(_outer(log))
        assert await anext(items) == "<item INNER>"
        await items.aclose()

    asyncio.run(read_one())
    assert log.entries == ["async inner", "async inner cleanup", "async outer saw GeneratorExit"]


def _fails(log: Log) -> Generator[Any, Any, str]:
    try:
        yield Call(_boom, _aboom)
    except KeyError as exc:
        return f"caught {exc.args[0]}"
    return "not reached"


def _boom() -> None:
    raise KeyError("sync")


async def _aboom() -> None:
    raise KeyError("async")


def test_a_failed_request_is_raised_in_the_core_at_its_yield() -> None:
    assert perform(_fails(Log())) == "caught sync"
    assert asyncio.run(aperform(_fails(Log()))) == "caught async"


def test_an_error_the_core_does_not_catch_reaches_the_caller() -> None:
    def core() -> Generator[Any, Any, None]:
        yield Call(_boom, _aboom)

    with pytest.raises(KeyError, match="sync"):
        list(iterate(core()))


def test_a_cancelled_async_shell_throws_the_cancellation_into_the_core() -> None:
    log = Log()
    started = asyncio.Event()

    async def wait_forever() -> None:
        started.set()
        await asyncio.Event().wait()

    def core() -> Generator[Any, Any, None]:
        try:
            yield Call(None, wait_forever)
        except asyncio.CancelledError:
            yield Call(log.note, log.anote, "cancelled")
            raise
        yield "not reached"

    async def run() -> None:
        task = asyncio.ensure_future(aperform(core()))
        await asyncio.wait_for(started.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
    assert log.entries == ["async cancelled"]
