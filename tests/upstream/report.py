"""Measure graphruntime's parity on LangGraph's vendored tests; write bench/RESULTS.md's section.

    python -m tests.upstream.report [--runs DIR] [--reuse] [--workers N]

Runs tests/upstream three times (2 xdist workers each): against LangGraph (which tests are
sound), against graphruntime (the figure), and against graphruntime with every missing module
and name lent from LangGraph (the diagnostic run: it shows how the tests of a file that does not
import would fare, and the report tells apart the tests that need what was lent). ``--reuse``
reads the records of an earlier run from ``DIR`` instead of running.

The denominator is every vendored, non-excluded test that passes on LangGraph. Tests that fail
on LangGraph in this harness are written to unsound.tsv and not counted.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import _report
from tests.upstream.harness.exclusions import base_id, reach, read_tsv
from tests.upstream.harness.missing import missing_bindings
from tests.upstream.harness.paths import ROOT, UNSOUND
from tests.upstream.harness.run import collect_all, read_record, run

RESULTS = ROOT / "bench" / "RESULTS.md"
HEADING = "## LangGraph parity (vendored upstream tests)"
MARK = "upstream_parity"
IMPORT_FAILURE = "module_import"
RUNS = ("langgraph", "graphruntime", "lent")


@dataclass
class FileRow:
    tests: int = 0
    excluded: int = 0
    langgraph: int = 0
    graphruntime: int = 0


@dataclass
class Cause:
    count: int = 0
    examples: list[str] = field(default_factory=list)


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


_ADDRESS = re.compile(r" at 0x[0-9a-f]+|0x[0-9a-f]{6,}")
_UUIDISH = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _normalise(entry: dict[str, Any]) -> str:
    """One failure as a groupable cause: the exception line, and where graphruntime raised it."""
    message = (entry.get("message") or "").strip().splitlines()
    first = message[0] if message else "(no message)"
    first = _UUIDISH.sub("<uuid>", _ADDRESS.sub("", first))
    if first.startswith(("AssertionError", "assert ")):
        first = "AssertionError: wrong output"
    elif first.startswith("Failed: Timeout"):
        first = "Timeout (the test hung)"
    if len(first) > 140:
        first = first[:137] + "..."
    where = entry.get("where") or ""
    for package in ("graphruntime/", "checkpoint_pg/"):
        at = where.find(package)
        if at >= 0 and not first.startswith("AssertionError"):
            return f"{first} [{where[at:]}]"
    return first


def _missing_by_test(files: set[str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Test base id -> the missing module/name it needs; file -> what its imports miss."""
    needs: dict[str, str] = {}
    blockers: dict[str, list[str]] = {}
    for file in sorted(files):
        path = ROOT / file
        bindings = missing_bindings(path)
        needs.update(reach(path, bindings))
        fixtures = {"cache", "sync_store", "async_store"}
        blockers[file] = sorted({gap for name, gap in bindings.items() if name not in fixtures})
    return needs, blockers


def _run_all(runs: Path, workers: int) -> dict[str, float]:
    runs.mkdir(parents=True, exist_ok=True)
    times: dict[str, float] = {}
    times["langgraph"] = run("langgraph", runs / "langgraph.jsonl", workers=workers)
    times["graphruntime"] = run("graphruntime", runs / "graphruntime.jsonl", workers=workers)
    times["lent"] = run("graphruntime", runs / "lent.jsonl", lend=True, workers=workers)
    (runs / "collected.txt").write_text("\n".join(collect_all()) + "\n")
    (runs / "times.json").write_text(json.dumps(times))
    return times


def _write_unsound(langgraph: dict[str, dict[str, Any]], kept: list[str]) -> list[str]:
    unsound = [n for n in kept if langgraph.get(n, {}).get("outcome") == "failed"]
    with UNSOUND.open("w", newline="") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(("test", "failure on LangGraph"))
        for nodeid in unsound:
            entry = langgraph[nodeid]
            writer.writerow((nodeid, f"{entry.get('message', '')} ({entry.get('where', '')})"))
    return unsound


def build(runs: Path, times: dict[str, float]) -> str:
    records = {name: read_record(runs / f"{name}.jsonl") for name in RUNS}
    collected = [line for line in (runs / "collected.txt").read_text().splitlines() if line]
    excluded_rules = read_tsv()

    def is_excluded(nodeid: str) -> bool:
        return base_id(nodeid) in excluded_rules or _file(nodeid) in excluded_rules

    kept = [n for n in collected if not is_excluded(n)]
    unsound = _write_unsound(records["langgraph"], kept)
    sound = [n for n in kept if records["langgraph"].get(n, {}).get("outcome") == "passed"]
    files = {_file(n) for n in collected}
    needs, blockers = _missing_by_test(files)
    gr, lent = records["graphruntime"], records["lent"]
    blocked_files = {
        _file(n): gr[n]
        for n in gr
        if n.endswith(f"::{IMPORT_FAILURE}") and gr[n]["outcome"] == "failed"
    }

    rows: dict[str, FileRow] = defaultdict(FileRow)
    for nodeid in collected:
        rows[_file(nodeid)].tests += 1
        if is_excluded(nodeid):
            rows[_file(nodeid)].excluded += 1
    causes: dict[str, Cause] = defaultdict(Cause)
    would_pass = 0
    for nodeid in sound:
        row = rows[_file(nodeid)]
        row.langgraph += 1
        entry = gr.get(nodeid)
        if entry is not None and entry["outcome"] == "passed":
            row.graphruntime += 1
            continue
        if base_id(nodeid) in needs:
            cause = f"missing: {needs[base_id(nodeid)]}"
        elif entry is None and _file(nodeid) in blocked_files:
            lent_entry = lent.get(nodeid)
            if lent_entry is None:
                cause = f"file does not import: {_normalise(blocked_files[_file(nodeid)])}"
            elif lent_entry["outcome"] == "passed":
                cause = "passes once its file imports (blocked only by other tests' imports)"
                would_pass += 1
            else:
                cause = _normalise(lent_entry)
        elif entry is None:
            cause = "not run against graphruntime (deselected as unsound?)"
        else:
            cause = _normalise(entry)
        causes[cause].count += 1
        if len(causes[cause].examples) < 2:
            causes[cause].examples.append(nodeid)

    return _render(rows, causes, blockers, blocked_files, times, len(unsound), would_pass)


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _render(
    rows: dict[str, FileRow],
    causes: dict[str, Cause],
    blockers: dict[str, list[str]],
    blocked_files: dict[str, dict[str, Any]],
    times: dict[str, float],
    unsound: int,
    would_pass: int,
) -> str:
    total = FileRow()
    for row in rows.values():
        total.tests += row.tests
        total.excluded += row.excluded
        total.langgraph += row.langgraph
        total.graphruntime += row.graphruntime
    reasons = Counter(reason.split(":", 1)[0] for reason in read_tsv().values())
    info = _report.machine()
    out = [
        HEADING,
        "",
        f"LangGraph 1.2.22's own tests (tests/upstream, {len(rows)} files), run unchanged but for "
        "the import prefix `langgraph.` -> `graphruntime.`, against LangGraph and against "
        "graphruntime. Denominator: the vendored, non-excluded tests that pass on LangGraph "
        "in this harness.",
        "",
        f"**{total.graphruntime} of {total.langgraph} pass on graphruntime "
        f"({_pct(total.graphruntime, total.langgraph)}).** "
        f"{total.tests} tests collected, {total.excluded} excluded "
        f"(excluded.tsv rules: {', '.join(f'{k} {v}' for k, v in sorted(reasons.items()))}), "
        f"{unsound} fail on LangGraph in this harness (unsound.tsv, not counted). "
        f"{len(blocked_files)} of {len(rows)} files do not import against graphruntime; "
        f"{would_pass} of their tests pass when the missing names are lent from LangGraph.",
        "",
        f"- Command: `python -m tests.upstream.report` "
        f"({_report.git_revision('graphruntime', 'checkpoint_pg')}, {time.strftime('%Y-%m-%d')})",
        f"- Machine: {info['nproc']} cores, {info['CPU']}, {info['RAM']}, {info['Python']}; "
        f"load average {_report.loadavg()}",
        "- Wall time, 2 xdist workers, Postgres parameters included: "
        + ", ".join(f"{name} {times.get(name, 0):.0f} s" for name in RUNS),
        "",
        "| file | tests | excluded | pass on LangGraph | pass on graphruntime | % |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for file in sorted(rows):
        row = rows[file]
        out.append(
            f"| {Path(file).name} | {row.tests} | {row.excluded} | {row.langgraph} | "
            f"{row.graphruntime} | {_pct(row.graphruntime, row.langgraph)} |"
        )
    out.append(
        f"| **total** | {total.tests} | {total.excluded} | {total.langgraph} | "
        f"{total.graphruntime} | {_pct(total.graphruntime, total.langgraph)} |"
    )
    gaps: Counter[str] = Counter()
    for file, missing in blockers.items():
        if file in blocked_files:
            gaps.update(missing)
    out += [
        "",
        "What the files that do not import miss (module or name: files):",
        "",
        ", ".join(f"`{gap}` {n}" for gap, n in gaps.most_common()) or "nothing",
        "",
        "Failures on graphruntime by cause (tests that pass on LangGraph; a `missing:` test "
        "reaches that name through its body, fixtures or helpers):",
        "",
        "| tests | cause | example |",
        "|---:|---|---|",
    ]
    ranked = sorted(causes.items(), key=lambda item: (-item[1].count, item[0]))
    for cause, found in ranked[:40]:
        text = cause.replace("|", "\\|")
        out.append(f"| {found.count} | {text} | `{found.examples[0]}` |")
    if len(ranked) > 40:
        rest = sum(found.count for _, found in ranked[40:])
        out.append(f"| {rest} | {len(ranked) - 40} other causes | |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=ROOT / ".data" / "upstream-runs")
    parser.add_argument("--reuse", action="store_true", help="read the records in --runs")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-write", action="store_true", help="print, leave RESULTS.md")
    args = parser.parse_args(argv)
    if args.reuse:
        times = json.loads((args.runs / "times.json").read_text())
    else:
        times = _run_all(args.runs, args.workers)
    section = build(args.runs, times)
    print(section)
    if not args.no_write:
        _report.write_section(RESULTS, section, HEADING, MARK)
    return 0


if __name__ == "__main__":
    sys.exit(main())
