"""Scenarios the distributed corpus adds where a corpus scenario cannot run on workers.

Each is a variant of a ``tests/differential`` scenario without its in-process-only
part, so the behaviour it pins is still compared (in-process graphruntime vs the
workers) through the same harness.
"""

from __future__ import annotations

from typing import Any

from tests.differential.observe import Recorder
from tests.differential.registry import Scenario
from tests.differential.runtimes import Runtime
from tests.differential.scenarios_execution import ExecState, _node

EXTRA_SCENARIOS: dict[str, Scenario] = {}


def _extra(fn: Scenario) -> Scenario:
    EXTRA_SCENARIOS[fn.__name__.removeprefix("scenario_")] = fn
    return fn


@_extra
def scenario_e2e_failed_node_keeps_sibling_writes(rt: Runtime, rec: Recorder) -> None:
    """failed_node_keeps_sibling_writes without the saver hook: a step's failing task and
    its sibling in another worker; the sibling's writes persist as pending writes,
    invoke(None) re-runs only the failed node, new input discards the failed step.

    (graphruntime, in-process and distributed, waits for every task of a step, so the
    corpus scenario's wait for the sibling's saved writes is not needed here.)
    """
    broken = {"on": True}

    def flaky(state: ExecState) -> dict[str, Any]:
        rec.count("flaky")
        if broken["on"]:
            raise RuntimeError("flaky is broken\nsecond line is not compared")
        return {"items": ["flaky"]}

    g = rt.StateGraph(ExecState)
    g.add_node("ok", _node(rec, "ok"))
    g.add_node("flaky", flaky)
    g.add_node("after", _node(rec, "after"))
    g.add_edge(rt.START, "ok")
    g.add_edge(rt.START, "flaky")
    g.add_edge(["ok", "flaky"], "after")
    app = g.compile(checkpointer=rt.InMemorySaver())
    cfg = rec.thread()
    with rec.expect_error("invoke"):
        app.invoke({"items": []}, cfg)
    rec.record("state after failure", app.get_state(cfg))
    with rec.expect_error("invoke(None) while still broken"):
        app.invoke(None, cfg)
    rec.record_counts("counts while broken")
    broken["on"] = False
    rec.record("invoke(None) after fix", app.invoke(None, cfg))
    rec.record("history length", len(list(app.get_state_history(cfg))))
    broken["on"] = True
    cfg2 = rec.thread()
    with rec.expect_error("second thread fails"):
        app.invoke({"items": []}, cfg2)
    broken["on"] = False
    rec.record("new input discards failed tasks", app.invoke({"items": ["new"]}, cfg2))
