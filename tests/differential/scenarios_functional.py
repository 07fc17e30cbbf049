# mypy: disable-error-code="untyped-decorator"
"""Scenarios: the functional API (``@entrypoint`` and ``@task``).

Tasks count their runs (``rec.count``): on the workers each call is a job and the
entrypoint runs again after each round of calls, so a call that ran twice shows. The
entrypoints themselves count nothing, for that reason.
"""

from __future__ import annotations

import asyncio
from typing import Any

from .observe import Recorder
from .registry import scenario
from .runtimes import Runtime


@scenario
def scenario_functional_calls(rt: Runtime, rec: Recorder) -> None:
    """@task calls: a parallel round, a call on their results, a caught error, previous."""

    @rt.task
    def double(x: int) -> int:
        rec.count(f"double({x})")
        return 2 * x

    @rt.task
    def fails(x: int) -> int:
        rec.count("fails")
        raise ValueError(f"bad {x}")

    @rt.entrypoint(checkpointer=rt.InMemorySaver())
    def flow(xs: list[int], *, previous: Any = None) -> dict[str, Any]:
        doubled = [f.result() for f in [double(x) for x in xs]]
        total = double(sum(doubled)).result()
        try:
            fails(total).result()
            caught = None
        except ValueError as exc:
            caught = str(exc)
        return {"doubled": doubled, "total": total, "caught": caught, "previous": previous}

    cfg = rec.thread()
    rec.record("first", flow.invoke([1, 2, 3], cfg))
    rec.record("second", flow.invoke([4], cfg))
    rec.record_counts()
    rec.record("state", flow.get_state(cfg))
    rec.record("history", [(s.metadata, s.values, s.next) for s in flow.get_state_history(cfg)])
    rec.record_unordered("updates", flow.stream([5], rec.thread(), stream_mode="updates"))


@scenario
def scenario_functional_interrupt(rt: Runtime, rec: Recorder) -> None:
    """A @task interrupts: a resume answers it, finished calls stay done; entrypoint.final."""

    @rt.task
    def draft(topic: str) -> str:
        rec.count("draft")
        return f"draft about {topic}"

    @rt.task
    def review(text: str) -> str:
        rec.count("review")
        answer = rt.interrupt({"review": text})
        return f"{text}: {answer}"

    @rt.entrypoint(checkpointer=rt.InMemorySaver())
    def flow(topic: str, *, previous: Any = None) -> Any:
        reviewed = review(draft(topic).result()).result()
        return rt.entrypoint.final(value=reviewed, save={"last": reviewed, "before": previous})

    cfg = rec.thread()
    rec.record("paused", flow.invoke("cats", cfg))
    rec.record("paused state", flow.get_state(cfg))
    rec.record("resumed", flow.invoke(rt.Command(resume="ok"), cfg))
    rec.record("saved", flow.get_state(cfg).values)
    rec.record("paused again", flow.invoke("dogs", cfg))
    rec.record("resumed again", flow.invoke(rt.Command(resume="fine"), cfg))
    rec.record_counts()


@scenario
def scenario_functional_async(rt: Runtime, rec: Recorder) -> None:
    """An async entrypoint gathers async tasks; an uncaught task error fails the run."""

    @rt.task
    async def square(x: int) -> int:
        rec.count(f"square({x})")
        await asyncio.sleep(0)
        return x * x

    @rt.task
    async def broken(x: int) -> int:
        raise KeyError(f"k{x}")

    @rt.entrypoint(checkpointer=rt.InMemorySaver())
    async def flow(xs: list[int]) -> list[int]:
        squares = list(await asyncio.gather(*[square(x) for x in xs]))
        if len(xs) > 3:
            await broken(len(xs))
        return squares

    async def main() -> None:
        rec.record("gathered", await flow.ainvoke([1, 2, 3], rec.thread()))
        with rec.expect_error("uncaught task error"):
            await flow.ainvoke([1, 2, 3, 4], rec.thread())

    asyncio.run(main())
    rec.record_counts()
