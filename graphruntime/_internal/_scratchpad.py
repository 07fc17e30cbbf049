"""Per-task-execution scratchpad: what ``interrupt()`` needs to find its answer."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)  # one per task execution: slots make it cheaper to build
class Scratchpad:
    """Built fresh for every execution (and retry) of a task.

    ``resume`` holds the answers this task already consumed, in interrupt-call
    order, plus the resume-map entry for its next interrupt. ``null_resume``
    yields the single unaddressed ``Command(resume=v)`` value, if any, and
    consumes it so only one interrupt in the whole step receives it.
    """

    step: int
    stop: int
    resume: list[Any] = field(default_factory=list)
    null_resume: Callable[[bool], Any] = lambda consume: None
    call_counter: int = 0
    interrupt_count: int = 0
    subgraph_count: int = 0
    previous_interrupts: dict[str, Any] = field(default_factory=dict)
    """The interrupts this task raised before in this step, by id (their deadlines hold)."""
    calls: Iterator[int] = field(default_factory=itertools.count, repr=False)
    """Numbers a task's ``@task`` calls in call order (atomic: calls may come from threads)."""

    def next_call(self) -> int:
        return next(self.calls)

    def interrupt_counter(self) -> int:
        idx = self.interrupt_count
        self.interrupt_count += 1
        return idx

    def subgraph_counter(self) -> int:
        idx = self.subgraph_count
        self.subgraph_count += 1
        return idx

    def get_null_resume(self, consume: bool = False) -> Any:
        return self.null_resume(consume)
