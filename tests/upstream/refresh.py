"""Rewrite expected_failures.txt from a run of the vendored tests against graphruntime.

    python -m tests.upstream.refresh [--workers N]

Every test that does not pass (failure, error, timeout, a file that does not import) is
listed; conftest marks those ``xfail(strict=False)`` so ``make test`` stays green while
parity is incomplete. Run it after a change that makes upstream tests pass (or fail).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from tests.upstream.harness.paths import EXPECTED_FAILURES
from tests.upstream.harness.run import read_record, run


def write_expected(failed: list[str], path: Path = EXPECTED_FAILURES) -> None:
    path.write_text("".join(f"{nodeid}\n" for nodeid in sorted(failed)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--record", type=Path, help="reuse a run's record (the report's graphruntime.jsonl)"
    )
    args = parser.parse_args(argv)
    seconds = 0.0
    if args.record is not None:
        record = read_record(args.record)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            record_path = Path(tmp) / "graphruntime.jsonl"
            seconds = run("graphruntime", record_path, workers=args.workers)
            record = read_record(record_path)
    failed = [nodeid for nodeid, entry in record.items() if entry["outcome"] == "failed"]
    passed = sum(entry["outcome"] == "passed" for entry in record.values())
    write_expected(failed)
    print(
        f"{passed} passed, {len(failed)} failed against graphruntime in {seconds:.0f} s; "
        f"wrote {EXPECTED_FAILURES.name}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
