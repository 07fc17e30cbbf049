"""The scenario registry: ``@scenario`` adds a function to :data:`SCENARIOS`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from .observe import Recorder
from .runtimes import Runtime

__all__ = ("SCENARIOS", "Scenario", "run_scenario", "scenario")

Scenario: TypeAlias = Callable[[Runtime, Recorder], None]

SCENARIOS: dict[str, Scenario] = {}


def scenario(fn: Scenario) -> Scenario:
    """Register ``scenario_<name>``; its docstring says which LangGraph behaviour it pins."""
    name = fn.__name__.removeprefix("scenario_")
    if name in SCENARIOS:
        raise ValueError(f"duplicate scenario {name!r}")
    if not (fn.__doc__ or "").strip():
        raise ValueError(f"scenario {name!r} needs a docstring")
    SCENARIOS[name] = fn
    return fn


def run_scenario(fn: Scenario, rt: Runtime) -> list[tuple[str, object]]:
    """Run one scenario on one runtime and return its normalized transcript."""
    rec = Recorder()
    fn(rt, rec)
    return rec.finish()
