"""Vendor langgraph-prebuilt's tests into tests/upstream_prebuilt (or check that they are).

    python -m tests.upstream_prebuilt.port [--source DIR]   # copy, transform, excluded.tsv
    python -m tests.upstream_prebuilt.port --check          # fail if a vendored file drifted

The only change is the import prefix, as for LangGraph's own tests (tests/upstream/port.py):
``from langgraph.X import`` becomes ``from graphruntime.X import`` when ``X`` is public or one
of the private modules graphruntime provides at LangGraph's path for LangChain
(``graphruntime.compat.PRIVATE_MODULES``: ``stream._mux``, ``prebuilt._tool_call_stream``...);
imports of other LangGraph-private modules stay as they are (the tests that use them are
excluded); ``from tests.X import`` becomes ``from tests.upstream_prebuilt.X import``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.upstream.harness import exclusions
from tests.upstream.port import is_private
from tests.vendored.harness import Suite, port_main

__all__ = ("SUITE",)

HERE = Path(__file__).resolve().parent


def rename(module: str) -> str:
    # imported here: the conftest imports this module in a process where graphruntime.X is
    # LangGraph (UPSTREAM_TARGET=langgraph), which has no compat module
    from graphruntime.compat import PRIVATE_MODULES

    if (module == "langgraph" or module.startswith("langgraph.")) and (
        not is_private(module) or module in PRIVATE_MODULES
    ):
        return "graphruntime" + module[len("langgraph") :]
    if module.startswith("tests."):
        return "tests.upstream_prebuilt." + module[len("tests.") :]
    return module


SUITE = Suite(
    name="upstream_prebuilt",
    here=HERE,
    source=Path("/work/lcsrc/langgraph_prebuilt-1.1.3/tests"),
    sdist="pip download --no-deps --no-binary :all: langgraph-prebuilt==1.1.3, then unpack it",
    rename=rename,
    # The fixtures: hand-written after upstream's (see README.md).
    hand_adapted=frozenset(
        {"conftest.py", "conftest_checkpointer.py", "conftest_store.py", "memory_assert.py"}
    ),
    skipped={
        "compose-postgres.yml": "not a test: Docker Compose for upstream's Postgres fixtures",
        "compose-redis.yml": "not a test: Docker Compose for upstream's Redis fixtures",
    },
    license_file=(Path("LICENSE"), "LICENSE.langgraph-prebuilt"),
)


def _exclusions(suite: Suite) -> list[tuple[str, str]]:
    tests = sorted(suite.here.glob("test_*.py"))
    return exclusions.analyse(tests)


def main(argv: list[str] | None = None) -> int:
    return port_main(SUITE, argv, sdist_root=lambda source: source.parent, exclusions=_exclusions)


if __name__ == "__main__":
    sys.exit(main())
