"""Vendor LangChain's agent tests into tests/upstream_langchain (or check that they are).

    python -m tests.upstream_langchain.port [--source DIR]   # copy, transform, excluded.tsv
    python -m tests.upstream_langchain.port --check          # fail if a vendored file drifted

The tests run through the import alias (``graphruntime.compat.alias_langgraph``): their own
``langgraph`` imports, like LangChain's, stay as they are. The only change is the package of
their support modules: ``from tests.unit_tests.agents.X import`` becomes
``from tests.upstream_langchain.X import``. The cassettes the VCR tests replay (the sdist's
``tests/cassettes``) are copied to ``cassettes/``.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

from tests.upstream.harness import exclusions
from tests.vendored.harness import Suite, port_main

__all__ = ("SUITE",)

HERE = Path(__file__).resolve().parent
_THEIRS = "tests.unit_tests.agents"


def rename(module: str) -> str:
    if module == _THEIRS or module.startswith(_THEIRS + "."):
        return "tests.upstream_langchain" + module[len(_THEIRS) :]
    return module


SUITE = Suite(
    name="upstream_langchain",
    here=HERE,
    source=Path("/work/lcsrc/langchain-1.5.2/tests/unit_tests/agents"),
    sdist="pip download --no-deps --no-binary :all: langchain==1.5.2, then unpack it",
    rename=rename,
    # The fixtures: hand-written after upstream's (see README.md).
    hand_adapted=frozenset({"conftest.py", "memory_assert.py"}),
    skipped={
        "compose-postgres.yml": "not a test: Docker Compose for upstream's Postgres fixtures",
        "compose-redis.yml": "not a test: Docker Compose for upstream's Redis fixtures",
    },
    copied_trees=(("tests/cassettes", "cassettes"),),
    license_file=(Path("LICENSE"), "LICENSE.langchain"),
)


def _missing_private_bindings(path: Path) -> dict[str, str]:
    """Names a test file imports from LangGraph-private modules (or underscore names) that
    graphruntime does not provide at the same path: through the alias they cannot import."""
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
            continue
        if node.module.split(".")[0] != "langgraph":
            continue
        ours_name = "graphruntime" + node.module[len("langgraph") :]
        for alias in node.names:
            private = exclusions._private_module(node.module) or alias.name.startswith("_")
            if not private:
                continue
            try:
                present = hasattr(importlib.import_module(ours_name), alias.name)
            except ImportError:
                present = False
            if not present:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return found


def _exclusions(suite: Suite) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for path in sorted(suite.here.rglob("test_*.py")):
        bindings = _missing_private_bindings(path)
        if bindings:
            rows += [
                (test, f"private: uses {label}")
                for test, label in exclusions.reach(path, bindings).items()
            ]
    return rows


def main(argv: list[str] | None = None) -> int:
    return port_main(
        SUITE, argv, sdist_root=lambda source: source.parents[2], exclusions=_exclusions
    )


if __name__ == "__main__":
    sys.exit(main())
