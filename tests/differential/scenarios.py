"""The differential corpus: which scenario covers which item of the issue.

Scenarios live in themed modules and register themselves with ``@scenario``
(:mod:`.registry`); :func:`load_all` imports them all.

Items (from the issue): 1 state schemas & reducers · 2 channels · 3 builder ·
4 execution · 5 interrupts · 6 state API · 7 stream modes · X extras (Overwrite,
unknown input keys, input/output schema, get_config).

TABLE
"""

from __future__ import annotations

import importlib

__all__ = ("THEMES", "load_all")

THEMES = (
    "scenarios_schemas",
    "scenarios_builder",
    "scenarios_execution",
    "scenarios_interrupts",
    "scenarios_subgraphs",
    "scenarios_state_api",
    "scenarios_streams",
)


def load_all() -> None:
    """Import every themed module so its scenarios are registered."""
    for theme in THEMES:
        importlib.import_module(f"{__package__}.{theme}")
