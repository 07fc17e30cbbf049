"""Run the vendored suite on both targets and rewrite unsound.tsv and expected_failures.tsv.

    python -m tests.upstream_pg.refresh [-n 2]

unsound.tsv: the tests that do not pass on LangGraph in this harness (their reason is the
first line of the failure). expected_failures.tsv: the tests that pass on LangGraph but not
on graphruntime; a reason already written there is kept, a new test gets "TODO: ..." (write
why before committing). Prints both pass counts.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.upstream_pg.exclusions import EXPECTED_FAILURES, UNSOUND, read_tsv, write_tsv

ROOT = Path(__file__).resolve().parent.parent.parent


def outcomes(target: str, workers: str) -> dict[str, tuple[str, str]]:
    """node id -> (outcome, first line of the failure) for one target's run."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        env = {**os.environ, "UPSTREAM_TARGET": target, "UPSTREAM_NO_XFAIL": "1"}
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", workers,
             "tests/upstream_pg", f"--junitxml={report}"],
            cwd=ROOT, env=env, check=False,
        )  # fmt: skip
        found: dict[str, tuple[str, str]] = {}
        for case in ET.parse(report).getroot().iter("testcase"):
            path = case.get("classname", "").replace(".", "/")
            nodeid = f"{path}.py::{case.get('name')}"
            outcome, reason = "passed", ""
            for tag in ("failure", "error", "skipped"):
                child = case.find(tag)
                if child is not None:
                    outcome = tag
                    reason = (
                        (child.get("message") or "").splitlines()[0][:200]
                        if child.get("message")
                        else tag
                    )
            found[nodeid] = (outcome, reason)
        return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("-n", default="2", help="xdist workers")
    args = parser.parse_args(argv)
    theirs = outcomes("langgraph", args.n)
    ours = outcomes("graphruntime", args.n)
    known = read_tsv(EXPECTED_FAILURES)
    unsound = {t: r for t, (o, r) in theirs.items() if o != "passed"}
    expected = {
        t: known.get(t, f"TODO: {r}")
        for t, (o, r) in ours.items()
        if o != "passed" and theirs.get(t, ("passed", ""))[0] == "passed"
    }
    write_tsv(sorted(unsound.items()), UNSOUND)
    write_tsv(sorted(expected.items()), EXPECTED_FAILURES)
    passed = {name: sum(o == "passed" for o, _ in runs.values())
              for name, runs in (("langgraph", theirs), ("graphruntime", ours))}  # fmt: skip
    print(f"LangGraph: {passed['langgraph']} of {len(theirs)} pass")
    print(f"graphruntime: {passed['graphruntime']} of {len(ours)} pass")
    print(f"unsound (fail on LangGraph): {len(unsound)}; expected failures: {len(expected)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
