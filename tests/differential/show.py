"""Print scenario transcripts of one runtime; ``--twice`` checks they are deterministic.

python -m tests.differential.show [-r langgraph|graphruntime] [-k SUBSTR] [--twice] [-q]
"""

from __future__ import annotations

import argparse
import pprint
import sys
import traceback

from .observe import same
from .registry import SCENARIOS, run_scenario
from .runtimes import RUNTIME_NAMES, load_runtime
from .scenarios import load_all


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-r", "--runtime", choices=RUNTIME_NAMES, default="langgraph")
    parser.add_argument("-k", "--filter", default="", help="substring of scenario names")
    parser.add_argument("--twice", action="store_true", help="run twice, report differences")
    parser.add_argument("-q", "--quiet", action="store_true", help="do not print transcripts")
    args = parser.parse_args(argv)
    load_all()
    rt = load_runtime(args.runtime)
    failures = 0
    for name, fn in SCENARIOS.items():
        if args.filter not in name:
            continue
        try:
            first = run_scenario(fn, rt)
            if args.twice and not same(first, second := run_scenario(fn, rt)):
                failures += 1
                print(f"!! {name}: NOT DETERMINISTIC")
                for a, b in zip(first, second, strict=False):
                    if not same(a, b):
                        print(f"   {pprint.pformat(a)}\n   {pprint.pformat(b)}")
                        break
        except Exception:  # noqa: BLE001 - report and go on with the next scenario
            failures += 1
            print(f"!! {name}: scenario crashed")
            traceback.print_exc()
            continue
        print(f"== {name} ({len(first)} entries)")
        if not args.quiet:
            for label, value in first:
                print(f"  [{label}] {pprint.pformat(value, width=100)}")
    print(f"{len(SCENARIOS)} scenarios registered, {failures} problem(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
