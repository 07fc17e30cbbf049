"""Run the vendored tests in a child pytest and read back each test's outcome."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.upstream.harness.paths import HERE, ROOT

__all__ = ("collect_all", "read_record", "run")

# The harness's own tests are no upstream tests: the measured runs leave them out.
_HARNESS = (HERE / "harness").relative_to(ROOT).as_posix()


def _env(target: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for key in ("UPSTREAM_LEND_MISSING", "UPSTREAM_KEEP_EXCLUDED", "UPSTREAM_RECORD"):
        env.pop(key, None)
    env.update(UPSTREAM_TARGET=target, UPSTREAM_NO_XFAIL="1", **extra)
    return env


def run(
    target: str, record: Path, *, lend: bool = False, workers: int = 2, args: tuple[str, ...] = ()
) -> float:
    """Run tests/upstream against ``target`` (real outcomes, no xfail); the wall time in s."""
    extra = {"UPSTREAM_RECORD": str(record)}
    if lend:
        extra["UPSTREAM_LEND_MISSING"] = "1"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(HERE.relative_to(ROOT)),
        f"--ignore={_HARNESS}",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "tests.upstream.harness.record",
        *(["-n", str(workers)] if workers > 1 else []),
        *args,
    ]
    label = f"{target}{' (missing names lent from LangGraph)' if lend else ''}"
    print(f"running the upstream tests against {label}: {' '.join(cmd[1:])}", flush=True)
    start = time.monotonic()
    # The exit status says only that some tests failed; the record has the outcomes.
    subprocess.run(cmd, cwd=ROOT, env=_env(target, **extra), check=False, stdout=subprocess.DEVNULL)
    return time.monotonic() - start


def read_record(path: Path) -> dict[str, dict[str, Any]]:
    """nodeid -> {"outcome", "message", "where", "duration", ...}"""
    entries = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {entry["nodeid"]: entry for entry in entries}


def collect_all() -> list[str]:
    """Every vendored test's node id, excluded ones included (collected on LangGraph)."""
    cmd = [sys.executable, "-m", "pytest", str(HERE.relative_to(ROOT)), f"--ignore={_HARNESS}"]
    cmd += ["--collect-only", "-q"]
    out = subprocess.run(
        [*cmd, "-p", "no:cacheprovider"],
        cwd=ROOT,
        env=_env("langgraph", UPSTREAM_KEEP_EXCLUDED="1"),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [line for line in out.splitlines() if "::" in line and not line.startswith(" ")]
