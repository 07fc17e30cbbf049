"""Run the vendored tests on LangGraph and on graphruntime; rewrite the lists.

    python -m tests.upstream_langchain.compare [--workers N]

Writes unsound.tsv (fail on LangGraph: deselected against graphruntime) and
expected_failures.txt (pass on LangGraph, not on graphruntime: xfail), and prints both counts.
"""

from __future__ import annotations

import sys

from tests.upstream_langchain.port import SUITE
from tests.vendored.harness import compare_main

if __name__ == "__main__":
    sys.exit(compare_main(SUITE, sys.argv[1:]))
