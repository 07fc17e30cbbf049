"""A pytest plugin that writes each test's outcome as one JSON line to ``$UPSTREAM_RECORD``.

    UPSTREAM_RECORD=out.jsonl python -m pytest -p tests.upstream.harness.record tests/upstream

Under xdist the controller receives every report, so only it writes. A test's outcome is
``failed`` if any phase failed, else ``skipped`` if one skipped, else ``passed``; ``message``
is the failure's one-line crash message and ``where`` its file:line.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

_state: dict[str, dict[str, Any]] = {}


def _crash(report: pytest.TestReport) -> tuple[str, str]:
    longrepr = report.longrepr
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return str(crash.message), f"{crash.path}:{crash.lineno}"
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # skip: (path, line, reason)
        return str(longrepr[2]), f"{longrepr[0]}:{longrepr[1]}"
    return str(longrepr).strip().splitlines()[-1] if longrepr else "", ""


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not os.environ.get("UPSTREAM_RECORD") or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    entry = _state.setdefault(
        report.nodeid, {"nodeid": report.nodeid, "outcome": "passed", "duration": 0.0}
    )
    entry["duration"] += report.duration
    if report.failed and entry["outcome"] != "failed":
        entry["outcome"] = "failed"
        entry["message"], entry["where"] = _crash(report)
        entry["when"] = report.when
    elif report.skipped and entry["outcome"] == "passed":
        entry["outcome"] = "skipped"
        entry["message"], entry["where"] = _crash(report)


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get("UPSTREAM_RECORD")
    if not path or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    with open(path, "w") as f:
        for entry in _state.values():
            f.write(json.dumps(entry) + "\n")
