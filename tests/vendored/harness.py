"""What the vendored third-party suites share: porting, the lists, collection, the comparison.

Each suite (tests/upstream_prebuilt: langgraph-prebuilt's tests; tests/upstream_langchain:
LangChain's agent tests) is a folder with a ``port.py`` that describes it as a :class:`Suite`,
a hand-written ``conftest.py`` that calls :func:`apply_lists`, and three lists:

- ``excluded.tsv``: tests deselected on both targets, with the reason (written by port.py);
- ``unsound.tsv``: tests that fail on LangGraph in this harness (written by the comparison),
  deselected against graphruntime: they measure nothing;
- ``expected_failures.txt``: tests that pass on LangGraph and fail on graphruntime (written by
  the comparison), marked ``xfail(strict=False)`` so ``make test`` is green while a gap is open.

``python -m tests.upstream_<suite>.port [--check]`` re-vendors or checks the files;
``python -m tests.upstream_<suite>.compare`` runs the suite on both targets and rewrites the
last two lists.
"""

from __future__ import annotations

import argparse
import csv
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

__all__ = (
    "ROOT",
    "TARGET",
    "AsyncioModule",
    "Suite",
    "apply_lists",
    "compare_main",
    "port_main",
    "rewrite_imports",
)

ROOT = Path(__file__).resolve().parents[2]
TARGETS = ("graphruntime", "langgraph")
TARGET = os.environ.get("UPSTREAM_TARGET", "graphruntime")
if TARGET not in TARGETS:
    raise RuntimeError(f"UPSTREAM_TARGET={TARGET!r}: use one of {', '.join(TARGETS)}")
NO_XFAIL = os.environ.get("UPSTREAM_NO_XFAIL") == "1"

_IMPORT = re.compile(r"^(?P<indent>[ \t]*)(?P<kw>from|import)[ \t]+(?P<module>[A-Za-z_][\w.]*)")


def rewrite_imports(source: str, rename: Callable[[str], str]) -> str:
    """``source`` with the module of every import line renamed; nothing else changes."""
    out: list[str] = []
    for line in source.splitlines(keepends=True):
        match = _IMPORT.match(line)
        if match is not None:
            module = match["module"]
            new = rename(module)
            if new != module:
                start, end = match.span("module")
                line = line[:start] + new + line[end:]
        out.append(line)
    return "".join(out)


@dataclass(frozen=True)
class Suite:
    """A vendored suite: where its files come from and how their imports change."""

    name: str
    here: Path
    """The suite's folder in this repository."""
    source: Path
    """The default folder of the upstream tests (in the unpacked sdist)."""
    sdist: str
    """How to get the sdist (said when ``source`` is missing)."""
    rename: Callable[[str], str]
    """An import line's module -> the vendored file's module (the only change made)."""
    hand_adapted: frozenset[str] = frozenset()
    """Files of ``source`` (relative paths) written by hand here, not generated."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Files of ``source`` not vendored -> why."""
    copied_trees: tuple[tuple[str, str], ...] = ()
    """(folder outside ``source``, folder here) copied as is: data the tests read."""
    license_file: tuple[Path, str] | None = None

    @property
    def excluded_tsv(self) -> Path:
        return self.here / "excluded.tsv"

    @property
    def unsound_tsv(self) -> Path:
        return self.here / "unsound.tsv"

    @property
    def expected_failures(self) -> Path:
        return self.here / "expected_failures.txt"

    @property
    def rel(self) -> str:
        return self.here.relative_to(ROOT).as_posix()

    def files(self, source: Path) -> list[str]:
        """The relative paths vendored from ``source``: every file but the hand-adapted and
        skipped ones and caches."""
        found = []
        for path in sorted(source.rglob("*")):
            rel = path.relative_to(source).as_posix()
            if (
                path.is_file()
                and "__pycache__" not in path.parts
                and rel not in self.hand_adapted
                and rel not in self.skipped
            ):
                found.append(rel)
        return found

    def transformed(self, source: Path, rel: str) -> bytes:
        data = (source / rel).read_bytes()
        if rel.endswith(".py"):
            return rewrite_imports(data.decode(), self.rename).encode()
        return data


# -- porting ----------------------------------------------------------------------------------


def _vendor(suite: Suite, source: Path, extra_root: Path) -> None:
    for rel in suite.files(source):
        target = suite.here / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(suite.transformed(source, rel))
    for outside, inside in suite.copied_trees:
        shutil.copytree(extra_root / outside, suite.here / inside, dirs_exist_ok=True)
    if suite.license_file is not None:
        path, name = suite.license_file
        shutil.copyfile(extra_root / path, suite.here / name)


def _check(suite: Suite, source: Path, extra_root: Path) -> list[str]:
    drift = []
    for rel in suite.files(source):
        target = suite.here / rel
        if not target.exists() or target.read_bytes() != suite.transformed(source, rel):
            drift.append(rel)
    for outside, inside in suite.copied_trees:
        for path in sorted((extra_root / outside).rglob("*")):
            if path.is_file():
                relative = path.relative_to(extra_root / outside)
                mine = suite.here / inside / relative
                if not mine.exists() or mine.read_bytes() != path.read_bytes():
                    drift.append(f"{inside}/{relative.as_posix()}")
    return drift


def port_main(
    suite: Suite,
    argv: list[str] | None,
    *,
    sdist_root: Callable[[Path], Path],
    exclusions: Callable[[Suite], list[tuple[str, str]]],
) -> int:
    """``port.py``'s command line: vendor (and rewrite excluded.tsv) or ``--check``."""
    parser = argparse.ArgumentParser(description=f"Vendor {suite.name}'s tests, or check them")
    parser.add_argument("--source", type=Path, default=suite.source, help="the tests' folder")
    parser.add_argument("--check", action="store_true", help="only check, change nothing")
    args = parser.parse_args(argv)
    source: Path = args.source
    if not source.is_dir():
        print(f"{source} is missing: {suite.sdist}", file=sys.stderr)
        return 2
    root = sdist_root(source)
    if args.check:
        drift = _check(suite, source, root)
        for rel in drift:
            print(f"drifted from the transformed upstream file: {suite.rel}/{rel}")
        return 1 if drift else 0
    _vendor(suite, source, root)
    rows = exclusions(suite)
    rows += sorted(suite.skipped.items())
    write_tsv(suite.excluded_tsv, ("test", "reason"), rows)
    print(f"vendored {len(suite.files(source))} files; {len(rows)} exclusion rows")
    return 0


# -- lists ------------------------------------------------------------------------------------


def write_tsv(path: Path, header: tuple[str, str], rows: Iterable[tuple[str, str]]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def read_tsv(path: Path) -> dict[str, str]:
    """First column -> second; the first column is a node id (parameters optional) or a file."""
    if not path.exists():
        return {}
    with path.open(newline="") as f:
        reader = csv.reader(f, delimiter="\t")
        next(reader, None)
        return {row[0]: row[1] for row in reader if row}


def _read_lines(path: Path) -> set[str]:
    if not path.exists():
        return set()
    return {line.strip() for line in path.read_text().splitlines() if line.strip()}


def _matches(nodeid: str, listed: dict[str, str] | set[str]) -> bool:
    file = nodeid.split("::", 1)[0]
    return nodeid in listed or nodeid.split("[", 1)[0] in listed or file in listed


def apply_lists(
    suite: Suite, config: pytest.Config, items: list[pytest.Item], *, timeout: float
) -> None:
    """Deselect excluded (and, against graphruntime, unsound) tests, mark the expected
    failures xfail (non-strict), and give every test of the suite a timeout."""
    excluded = read_tsv(suite.excluded_tsv)
    unsound = read_tsv(suite.unsound_tsv) if TARGET == "graphruntime" else {}
    expected = _read_lines(suite.expected_failures) if TARGET == "graphruntime" else set()
    if NO_XFAIL:
        expected = set()
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        if not item.path.is_relative_to(suite.here):
            keep.append(item)
            continue
        if _matches(item.nodeid, excluded) or _matches(item.nodeid, unsound):
            dropped.append(item)
            continue
        item.add_marker(pytest.mark.timeout(timeout, method="signal"))
        if item.nodeid in expected:
            item.add_marker(
                pytest.mark.xfail(reason=f"parity gap ({suite.expected_failures.name})")
            )
        keep.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


# -- the comparison ---------------------------------------------------------------------------


def _run(suite: Suite, target: str, record: Path, workers: int) -> float:
    env = dict(os.environ)
    env.update(UPSTREAM_TARGET=target, UPSTREAM_NO_XFAIL="1", UPSTREAM_RECORD=str(record))
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        suite.rel,
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "tests.upstream.harness.record",
        *(["-n", str(workers)] if workers > 1 else []),
    ]
    print(f"running {suite.name} against {target}: {' '.join(cmd[1:])}", flush=True)
    start = time.monotonic()
    subprocess.run(cmd, cwd=ROOT, env=env, check=False, stdout=subprocess.DEVNULL)
    return time.monotonic() - start


def _read_record(path: Path) -> dict[str, dict[str, str]]:
    entries = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {entry["nodeid"]: entry for entry in entries}


def _count(record: dict[str, dict[str, str]]) -> str:
    outcomes = [entry["outcome"] for entry in record.values()]
    return ", ".join(f"{outcomes.count(kind)} {kind}" for kind in ("passed", "failed", "skipped"))


def compare_main(suite: Suite, argv: list[str] | None) -> int:
    """Run the suite on LangGraph and on graphruntime; rewrite unsound.tsv and
    expected_failures.txt from the outcomes and print both counts."""
    parser = argparse.ArgumentParser(description=f"{suite.name}: LangGraph vs graphruntime")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--records", type=Path, help="keep the runs' records in this folder")
    args = parser.parse_args(argv)
    folder: Path = args.records or ROOT / ".data" / f"{suite.name}-runs"
    folder.mkdir(parents=True, exist_ok=True)
    records: dict[str, dict[str, dict[str, str]]] = {}
    seconds: dict[str, float] = {}
    for target in TARGETS[::-1]:  # LangGraph first: it says which tests are sound
        path = folder / f"{target}.jsonl"
        seconds[target] = _run(suite, target, path, args.workers)
        records[target] = _read_record(path)
    theirs, ours = records["langgraph"], records["graphruntime"]
    unsound = sorted(
        (nodeid, (entry.get("message") or "").splitlines()[0][:200] if entry.get("message") else "")
        for nodeid, entry in theirs.items()
        if entry["outcome"] == "failed"
    )
    write_tsv(suite.unsound_tsv, ("test", "failure on LangGraph"), unsound)
    sound = {nodeid for nodeid, entry in theirs.items() if entry["outcome"] == "passed"}
    gaps = sorted(
        nodeid
        for nodeid in sound
        if ours.get(nodeid, {"outcome": "missing"})["outcome"] != "passed"
    )
    suite.expected_failures.write_text("".join(f"{nodeid}\n" for nodeid in gaps))
    print(f"LangGraph:    {_count(theirs)} in {seconds['langgraph']:.0f} s")
    print(f"graphruntime: {_count(ours)} in {seconds['graphruntime']:.0f} s")
    print(
        f"{len(sound) - len(gaps)} of the {len(sound)} tests that pass on LangGraph pass on "
        f"graphruntime; wrote {suite.unsound_tsv.name} ({len(unsound)}) and "
        f"{suite.expected_failures.name} ({len(gaps)})"
    )
    return 0


# -- collection -------------------------------------------------------------------------------


class AsyncioModule(pytest.Module):
    """A vendored test module whose coroutine tests run on asyncio, as upstream's
    ``asyncio_mode = "auto"`` runs them (this repository keeps pytest-asyncio's strict mode):
    each ``async def`` test, or test method, is marked ``asyncio`` before it is collected."""

    def collect(self) -> Any:
        for value in list(vars(self.obj).values()):
            members = vars(value).values() if isinstance(value, type) else (value,)
            for member in members:
                if inspect.iscoroutinefunction(member):
                    pytest.mark.asyncio(member)
        return super().collect()
