"""Vendor langgraph-checkpoint-postgres' own tests into tests/upstream_pg (or check them).

    python -m tests.upstream_pg.port [--source DIR]   # copy, transform, rewrite excluded.tsv
    python -m tests.upstream_pg.port --check          # fail if a vendored file drifted

The only change made to a vendored file is on its import lines (see :func:`transform`): the
Postgres packages become checkpoint_pg, the rest of LangGraph graphruntime, ``tests.X``
``tests.upstream_pg.X``. ``--source`` is the unpacked sdist
(``pip download --no-binary :all: --no-deps langgraph-checkpoint-postgres==3.2.0``).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

from tests.upstream_pg.exclusions import analyse, write_tsv

HERE = Path(__file__).resolve().parent
DEFAULT_SOURCE = Path("/work/lg/langgraph_checkpoint_postgres-3.2.0")

VENDORED_TESTS = (
    "test_async.py",
    "test_async_store.py",
    "test_conformance_delta.py",
    "test_delta_pagination.py",
    "test_delta_plain_value_seed.py",
    "test_prune.py",
    "test_store.py",
    "test_sync.py",
)
VENDORED_SUPPORT = ("embed_test_utils.py",)
HAND_ADAPTED = ("conftest.py",)
"""LangGraph's conftest.py points at a Postgres on a fixed TCP port; ours is written by hand."""

# The packages a user swaps for checkpoint_pg; their other modules (``.base``, ``.shallow``,
# ``_internal``) are LangGraph's internals and stay as they are.
_POSTGRES_MODULES = {
    "langgraph.checkpoint.postgres": "checkpoint_pg",
    "langgraph.checkpoint.postgres.aio": "checkpoint_pg.aio",
    "langgraph.store.postgres": "checkpoint_pg",
    "langgraph.store.postgres.aio": "checkpoint_pg.aio",
}
_POSTGRES_PREFIXES = ("langgraph.checkpoint.postgres", "langgraph.store.postgres")

_IMPORT = re.compile(
    r"^(?P<indent>[ \t]*)(?P<kw>from|import)[ \t]+(?P<module>[A-Za-z_][\w.]*)"
    r"(?:[ \t]+import[ \t]+(?P<names>\([^)]*\)|[^\n]*))?",
    re.M,
)


def _is_private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


def _names(text: str | None) -> list[str]:
    if not text:
        return []
    text = re.sub(r"#[^\n]*", "", text).strip("() \n")
    return [n.split(" as ")[0].strip() for n in text.split(",") if n.strip()]


def target_module(module: str, names: list[str]) -> str:
    """Where the vendored file imports ``names`` of LangGraph's ``module`` from."""
    if module.startswith(_POSTGRES_PREFIXES):
        if module in _POSTGRES_MODULES and not all(n.startswith("_") for n in names):
            return _POSTGRES_MODULES[module]
        return module  # LangGraph's internals (private modules or names): left as they are
    if (module == "langgraph" or module.startswith("langgraph.")) and not _is_private(module):
        return "graphruntime" + module[len("langgraph") :]
    if module.startswith("tests."):
        return "tests.upstream_pg." + module[len("tests.") :]
    return module


def transform(source: str) -> str:
    """Swap the module of every import line of ``source``; nothing else changes."""

    def swap(match: re.Match[str]) -> str:
        module = match["module"]
        new = target_module(module, _names(match["names"]))
        if new == module:
            return match[0]
        start, end = match.span("module")
        return match[0][: start - match.start()] + new + match[0][end - match.start() :]

    return _IMPORT.sub(swap, source)


def _vendor(source: Path) -> None:
    tests = source / "tests"
    for name in (*VENDORED_TESTS, *VENDORED_SUPPORT):
        (HERE / name).write_text(transform((tests / name).read_text()))
    shutil.copyfile(source / "LICENSE", HERE / "LICENSE.langgraph-checkpoint-postgres")


def _check(source: Path) -> list[str]:
    tests = source / "tests"
    drift = []
    for name in (*VENDORED_TESTS, *VENDORED_SUPPORT):
        vendored = HERE / name
        if not vendored.exists() or vendored.read_text() != transform((tests / name).read_text()):
            drift.append(name)
    return drift


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="unpacked sdist")
    parser.add_argument("--check", action="store_true", help="only check, change nothing")
    args = parser.parse_args(argv)
    if args.check:
        drift = _check(args.source)
        for name in drift:
            print(f"drifted from the transformed upstream file: tests/upstream_pg/{name}")
        return 1 if drift else 0
    _vendor(args.source)
    rows = analyse([HERE / name for name in VENDORED_TESTS])
    write_tsv(rows)
    print(f"vendored {len(VENDORED_TESTS)} test files; {len(rows)} exclusion rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
