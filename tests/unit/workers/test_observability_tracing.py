"""OpenTelemetry spans per run, step and task, read with the SDK's in-memory exporter."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from graphruntime.config import RunnableConfig
from tests.unit.workers.graphs import Calls, chain, fan
from workers.errors import ConfigurationError
from workers.observability import enable_tracing, start_worker
from workers.settings import load_settings
from workers.testing import InlineCluster


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    enable_tracing("otel", tracer_provider=provider)
    yield exporter
    enable_tracing("off")


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def thread() -> RunnableConfig:
    return {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}


def test_a_fan_out_has_run_step_and_task_spans_with_their_ids(
    spans: InMemorySpanExporter,
) -> None:
    config = thread()
    cluster = InlineCluster({"fan": fan(Calls())})
    handle = cluster.client.submit("fan", {"items": ["a", "bad"], "log": []}, config)
    cluster.deliver()
    with pytest.raises(ValueError, match="bad item"):
        handle.wait(timeout=0)
    thread_id = config["configurable"]["thread_id"]

    runs = named(spans, "graphruntime.run")
    assert runs, "no run span"
    for run in runs:
        assert attrs(run)["graphruntime.run_id"] == handle.run_id
        assert attrs(run)["graphruntime.thread_id"] == thread_id
        assert attrs(run)["graphruntime.graph"] == "fan"
    # the coordinator that settled the failed step ended the run
    assert [attrs(r).get("graphruntime.status") for r in runs][-1] == "error"

    tasks = named(spans, "graphruntime.task")
    work = {
        attrs(t)["graphruntime.task_id"]: t
        for t in tasks
        if attrs(t)["graphruntime.node"] == "work"
    }
    assert len(work) == 2
    failed = [t for t in work.values() if t.status.status_code is StatusCode.ERROR]
    assert len(failed) == 1
    assert "bad item" in (failed[0].status.description or "")
    assert any(e.name == "exception" for e in failed[0].events)
    for task in tasks:
        assert attrs(task)["graphruntime.run_id"] == handle.run_id

    steps = named(spans, "graphruntime.step")
    kinds = [attrs(s).get("graphruntime.kind") for s in steps]
    assert "inline" in kinds  # __start__, in the coordinator
    assert "distributed" in kinds  # the work step, settled from what the jobs saved
    suspended = [s for s in steps if attrs(s)["graphruntime.suspended"]]
    assert suspended, "the step that dispatched its tasks waits for them"
    assert all(s.status.status_code is not StatusCode.ERROR for s in suspended)
    # the __start__ task ran inside its step, inside the run
    (start,) = [t for t in tasks if attrs(t)["graphruntime.node"] == "__start__"]
    parent_step = next(s for s in steps if s.context.span_id == start.parent.span_id)  # type: ignore[union-attr]
    assert attrs(parent_step)["graphruntime.kind"] == "inline"
    assert any(r.context.span_id == parent_step.parent.span_id for r in runs)  # type: ignore[union-attr]


def test_a_chain_has_one_inline_step_span_per_node(spans: InMemorySpanExporter) -> None:
    InlineCluster({"chain": chain(Calls(), n=3)}).run("chain", {"log": []}, thread())
    steps = named(spans, "graphruntime.step")
    assert [attrs(s)["graphruntime.kind"] for s in steps] == ["inline"] * 4
    nodes = [attrs(t)["graphruntime.node"] for t in named(spans, "graphruntime.task")]
    assert nodes == ["__start__", "n0", "n1", "n2"]
    (run,) = named(spans, "graphruntime.run")
    assert attrs(run)["graphruntime.status"] == "success"


def test_without_tracing_no_span_is_made() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    enable_tracing("otel", tracer_provider=provider)
    enable_tracing("off")
    InlineCluster({"chain": chain(Calls(), n=2)}).run("chain", {"log": []}, thread())
    assert exporter.get_finished_spans() == ()


def test_tracing_without_opentelemetry_stops_the_worker_with_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # `import opentelemetry` fails
    settings = load_settings(tracing="otel")
    with pytest.raises(ConfigurationError, match=r"pip install 'graphruntime\[otel\]'"):
        start_worker(settings)
    enable_tracing("off")
