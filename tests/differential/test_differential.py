"""Every scenario runs on langgraph (the oracle) and on graphruntime; transcripts must match."""

from __future__ import annotations

import pprint
import re
from functools import cache

import pytest

from .observe import same
from .registry import SCENARIOS, run_scenario
from .runtimes import Runtime, load_runtime
from .scenarios import load_all

load_all()

MIN_SCENARIOS = 40


@cache
def _runtime(name: str) -> Runtime:
    return load_runtime(name)


def _describe_mismatch(
    oracle: list[tuple[str, object]], candidate: list[tuple[str, object]]
) -> str | None:
    for i, (o, c) in enumerate(zip(oracle, candidate, strict=False)):
        if o[0] != c[0] or not same(o[1], c[1]):
            return (
                f"entry #{i} differs\n"
                f"  langgraph    [{o[0]}]:\n{pprint.pformat(o[1], width=96, indent=4)}\n"
                f"  graphruntime [{c[0]}]:\n{pprint.pformat(c[1], width=96, indent=4)}"
            )
    if len(oracle) != len(candidate):
        if len(oracle) > len(candidate):
            longer, who = oracle, "langgraph"
        else:
            longer, who = candidate, "graphruntime"
        extra = longer[min(len(oracle), len(candidate))]
        return (
            f"transcript lengths differ: langgraph {len(oracle)}, graphruntime "
            f"{len(candidate)}; first extra entry ({who}) [{extra[0]}]:\n"
            f"{pprint.pformat(extra[1], width=96, indent=4)}"
        )
    return None


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario(name: str) -> None:
    fn = SCENARIOS[name]
    oracle = run_scenario(fn, _runtime("langgraph"))
    candidate = run_scenario(fn, _runtime("graphruntime"))
    problem = _describe_mismatch(oracle, candidate)
    if problem:
        summary = (fn.__doc__ or "").strip().splitlines()[0]
        pytest.fail(f"{name}: {summary}\n{problem}", pytrace=False)


def test_corpus_size() -> None:
    assert len(SCENARIOS) >= MIN_SCENARIOS
    silent = [
        name
        for name, fn in SCENARIOS.items()
        # the appended "final counts" entry alone does not count as an observation
        if len(run_scenario(fn, _runtime("langgraph"))) < 2
    ]
    assert not silent, f"scenarios that recorded nothing on the oracle: {silent}"


def test_coverage_table_lists_every_scenario() -> None:
    """The table in scenarios.py's docstring names exactly the registered scenarios."""
    from . import scenarios

    row = re.compile(r"^([a-z_]+) +([1-7X](?: [1-7X])*) {2,}\S")
    rows = {m.group(1) for line in (scenarios.__doc__ or "").splitlines() if (m := row.match(line))}
    assert rows == set(SCENARIOS)
