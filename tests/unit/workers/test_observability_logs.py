"""JSON log lines: stdlib records (ours and Celery's) become JSON with the bound ids."""

from __future__ import annotations

import io
import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from graphruntime.config import RunnableConfig
from tests.unit.workers.graphs import Calls, fan
from workers.observability import bound, json_formatter, use_json_logs, use_text_logs
from workers.testing import InlineCluster


@pytest.fixture
def json_logs() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """A logger of the test's own with one handler, formatted as a worker in JSON mode."""
    out = io.StringIO()
    logger = logging.getLogger(f"test.json.{uuid.uuid4().hex}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(logging.StreamHandler(out))
    use_json_logs([logger])
    yield logger, out
    use_text_logs()


def lines(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_record_becomes_one_json_line_with_the_bound_ids_and_extras(
    json_logs: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, out = json_logs
    with bound(run_id="r1", thread_id="t1", job_id=None):
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("node %s failed", "n1", extra={"node": "n1", "task_id": "k1"})
    logger.warning("after")
    failed, after = lines(out)
    assert failed["event"] == "node n1 failed"
    assert failed["level"] == "error"
    assert failed["logger"] == logger.name
    assert (failed["run_id"], failed["thread_id"], failed["node"]) == ("r1", "t1", "n1")
    assert failed["task_id"] == "k1"
    assert "job_id" not in failed  # None is not bound
    assert "ValueError: boom" in failed["exception"]
    assert "Traceback" in failed["exception"]
    assert isinstance(failed["process"], int)
    assert "timestamp" in failed
    assert "run_id" not in after  # unbound when the block ends


def test_nested_blocks_restore_the_outer_ids(
    json_logs: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, out = json_logs
    with bound(run_id="outer"):
        with bound(run_id="inner", node="n"):
            logger.info("in")
        logger.info("out")
    inner, outer = lines(out)
    assert (inner["run_id"], inner["node"]) == ("inner", "n")
    assert outer["run_id"] == "outer"
    assert "node" not in outer


def test_text_mode_binds_nothing_and_keeps_the_formatter() -> None:
    use_text_logs()
    handler = logging.StreamHandler(io.StringIO())
    before = handler.formatter
    with bound(run_id="r") as context:
        assert context is None
    assert handler.formatter is before


def test_the_node_failure_line_carries_the_run_and_node_ids(
    json_logs: tuple[logging.Logger, io.StringIO],
) -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(json_formatter())
    executor_log = logging.getLogger("workers.executor")
    executor_log.addHandler(handler)
    calls = Calls()
    graph = fan(calls)
    config: RunnableConfig = {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}
    try:
        with pytest.raises(ValueError, match="bad item"):
            InlineCluster({"fan": graph}).run("fan", {"items": ["a", "bad"], "log": []}, config)
    finally:
        executor_log.removeHandler(handler)
    records = lines(out)
    (failure,) = [r for r in records if "failed in run" in r["event"]]
    assert failure["node"] == "work"
    assert failure["graph"] == "fan"
    assert failure["thread_id"] == config["configurable"]["thread_id"]
    assert failure["run_id"]
    assert failure["task_id"]
