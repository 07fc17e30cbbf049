"""Every graph of the differential corpus, for the workers' ``GRAPHRUNTIME_GRAPHS``.

At import this module runs each scenario once, in-process on graphruntime, with a
capturing runtime: ``StateGraph.compile()`` also appends the compiled graph to the
scenario's list. Graph ``k`` of scenario ``s`` (the k-th successful ``compile()``) is
the attribute ``G_<s>_<k>`` and the registry entry ``corpus.<s>.<k>``. The test
process runs the same scenario with a runtime whose k-th ``compile()`` returns a proxy
for ``corpus.<s>.<k>``; graph construction is deterministic, so both sides agree
(``test_capture_is_deterministic`` checks it, and the proxy checks each signature).

After the capture, each scenario's recorder switches to the ledger (when
``E2E_LEDGER`` is set, as the e2e cluster does) and the dicts the nodes capture
become :class:`~tests.e2e.corpus_support.SharedDict` s.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from graphruntime.config import get_config
from tests.differential.registry import SCENARIOS, Scenario
from tests.differential.runtimes import Runtime, load_runtime
from tests.differential.scenarios import load_all
from tests.e2e.corpus_extra import EXTRA_SCENARIOS
from tests.e2e.corpus_support import (
    SERDE,
    GraphSession,
    TaggedRecorder,
    db,
    graph_signature,
    ledger_active,
    share_cells,
    tracking_functional,
    tracking_state_graph,
)

load_all()

MODULE = "tests.e2e.corpus_graphs"


def all_scenarios() -> dict[str, Scenario]:
    return {**SCENARIOS, **EXTRA_SCENARIOS}


class CaptureRecorder(TaggedRecorder):
    """The recorder bound into the captured nodes' closures.

    While capturing it records in memory (the transcript is discarded). Afterwards,
    with the ledger active, ``count``/``record`` from a node become ``e2e_ledger`` rows
    for the thread the node runs on.
    """

    def __init__(self, scenario: str) -> None:
        super().__init__()
        self.scenario = scenario
        self.capturing = True

    def count(self, name: str) -> None:
        if self.capturing or not ledger_active():
            super().count(name)
        else:
            self._ledger("count", name, None)

    def record(self, label: str, value: Any) -> None:
        if self.capturing or not ledger_active():
            super().record(label, value)
        else:
            self._ledger("record", label, value)

    def _ledger(self, kind: str, label: str, value: Any) -> None:
        try:
            config = get_config()
        except RuntimeError as exc:
            raise RuntimeError(
                f"{self.scenario}: rec.{kind}({label!r}) outside a graph run on a worker"
            ) from exc
        conf = config.get("configurable", {})
        meta = config.get("metadata", {})
        payload_type, payload = SERDE.dumps_typed(value) if kind == "record" else (None, None)
        with db() as d:
            d.execute(
                "INSERT INTO e2e_ledger (scenario, thread_id, kind, label, payload_type, payload,"
                " pid, node, step, checkpoint_ns) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    self.scenario,
                    str(conf.get("thread_id")),
                    kind,
                    label,
                    payload_type,
                    payload,
                    os.getpid(),
                    meta.get("langgraph_node"),
                    meta.get("langgraph_step"),
                    str(conf.get("checkpoint_ns", "")),
                ),
            )


def capture_runtime(base: Runtime, session: GraphSession) -> Runtime:
    def on_compile(compiled: Any, _kwargs: dict[str, Any]) -> Any:
        session.graphs.append(compiled)
        return compiled

    entrypoint, task = tracking_functional(base.entrypoint, base.task, session, on_compile)
    return dataclasses.replace(
        base,
        StateGraph=tracking_state_graph(base.StateGraph, session, on_compile),
        entrypoint=entrypoint,
        task=task,
    )


def capture(name: str, fn: Scenario) -> tuple[GraphSession, CaptureRecorder]:
    """Run one scenario in-process and return the graphs it compiled, in order."""
    session = GraphSession(name)
    rec = CaptureRecorder(name)
    fn(capture_runtime(load_runtime("graphruntime"), session), rec)
    rec.capturing = False
    return session, rec


def capture_all() -> dict[str, GraphSession]:
    return {name: capture(name, fn)[0] for name, fn in sorted(all_scenarios().items())}


def signatures(sessions: dict[str, GraphSession]) -> dict[str, list[tuple[Any, ...]]]:
    return {name: [graph_signature(g) for g in s.graphs] for name, s in sessions.items()}


def attribute(scenario: str, k: int) -> str:
    return f"G_{scenario}_{k}"


def graph_name(scenario: str, k: int) -> str:
    return f"corpus.{scenario}.{k}"


CAPTURED = capture_all()
for _name, _session in CAPTURED.items():
    share_cells(_session)
    for _k, _graph in enumerate(_session.graphs):
        globals()[attribute(_name, _k)] = _graph

SIGNATURES = signatures(CAPTURED)

GRAPHS = ",".join(
    f"{graph_name(name, k)}={MODULE}:{attribute(name, k)}"
    for name, session in CAPTURED.items()
    for k in range(len(session.graphs))
)
