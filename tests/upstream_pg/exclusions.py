"""Which vendored tests use langgraph-checkpoint-postgres' private API, found by reading them.

A test is excluded when its body, its decorators, its fixtures or a module-level helper it
reaches (transitively) uses one of:

- a name imported from LangGraph's Postgres internals, which the port leaves as they are
  (``langgraph.checkpoint.postgres.base``, ``_ainternal``, ``_escape_like_literal``...);
- a private attribute (``saver._load_checkpoint_tuple``, ``BasePostgresSaver._ingest_...``),
  except ``_cursor``: checkpoint_pg has that helper too, a cursor on the saver's or store's
  connection, and what counts is the SQL run through it;
- SQL that reads or writes LangGraph's own tables (``store``, ``checkpoints``,
  ``checkpoint_writes``...: checkpoint_pg's tables are its own);
- a string naming a private LangGraph path (``monkeypatch.setattr("...aio._DELTA_PAGE_SIZE")``).

It reads names, so it errs towards excluding; it never misses a direct use.
"""

from __future__ import annotations

import ast
import csv
import re
from collections.abc import Iterable
from pathlib import Path

__all__ = ("EXCLUDED", "EXPECTED_FAILURES", "UNSOUND", "analyse", "read_tsv", "write_tsv")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
EXCLUDED = HERE / "excluded.tsv"
UNSOUND = HERE / "unsound.tsv"
"""Tests that do not pass on LangGraph in this harness (refresh.py writes it)."""
EXPECTED_FAILURES = HERE / "expected_failures.tsv"
"""Tests that pass on LangGraph but not on graphruntime, each with its reason."""

# NamedTuple's public methods have underscores too.
_ALLOWED_PRIVATE_ATTRIBUTES = {"_cursor", "_replace", "_asdict", "_fields", "_make"}
_LANGGRAPH_TABLES = re.compile(
    r"\b(?:FROM|UPDATE|INTO|JOIN)\s+(store|store_vectors|checkpoints|checkpoint_blobs|"
    r"checkpoint_writes|checkpoint_migrations|store_migrations)\b",
    re.I,
)
_POSTGRES = ("langgraph.checkpoint.postgres", "langgraph.store.postgres")
_PRIVATE_PATH = re.compile(r"\blanggraph(?:\.\w+)*\._\w+")


def _bindings(tree: ast.Module) -> dict[str, str]:
    """Names bound by imports of LangGraph's Postgres internals -> a label."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").startswith(_POSTGRES)
        ):
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return found


def _marks(node: ast.AST) -> set[str]:
    """Private uses inside ``node`` that are not names."""
    marks: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute):
            attr = sub.attr
            private = attr.startswith("_") and not attr.startswith("__")
            if private and attr not in _ALLOWED_PRIVATE_ATTRIBUTES:
                marks.add(f"private attribute .{attr}")
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            if (table := _LANGGRAPH_TABLES.search(sub.value)) is not None:
                marks.add(f"SQL on LangGraph's table {table.group(1)!r}")
            if (path := _PRIVATE_PATH.search(sub.value)) is not None:
                marks.add(f"private path {path.group(0)}")
    return marks


def _loads(node: ast.AST) -> set[str]:
    names = {s.id for s in ast.walk(node) if isinstance(s, ast.Name)}
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        args = node.args
        names |= {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    return names


def _defined(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {stmt.name}
    if isinstance(stmt, ast.Assign | ast.AnnAssign):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def reach(path: Path) -> dict[str, str]:
    """Test id (without parameters) -> the first private use it reaches."""
    tree = ast.parse(path.read_text(), filename=str(path))
    reason: dict[str, str] = dict(_bindings(tree))
    graph: dict[str, set[str]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            continue
        for name in _defined(stmt):
            graph.setdefault(name, set()).update(_loads(stmt) - {name})
            marks = sorted(_marks(stmt))
            if marks and name not in reason:
                reason[name] = marks[0]
    changed = True
    while changed:
        changed = False
        for name, refs in graph.items():
            if name in reason:
                continue
            hit = next((reason[r] for r in sorted(refs) if r in reason), None)
            if hit is not None:
                reason[name] = hit
                changed = True
    rel = path.relative_to(ROOT).as_posix()
    return {
        f"{rel}::{stmt.name}": reason[stmt.name]
        for stmt in tree.body
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef)
        and stmt.name.startswith("test")
        and stmt.name in reason
    }


def analyse(paths: Iterable[Path]) -> list[tuple[str, str]]:
    """(node id without parameters, reason) of every test using private API."""
    rows: list[tuple[str, str]] = []
    for path in paths:
        rows.extend((test, f"private: uses {why}") for test, why in reach(path).items())
    return rows


def write_tsv(rows: Iterable[tuple[str, str]], path: Path = EXCLUDED) -> None:
    with path.open("w", newline="") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(("test", "reason"))
        writer.writerows(rows)


def read_tsv(path: Path = EXCLUDED) -> dict[str, str]:
    """test -> reason (a node id without parameters)."""
    if not path.exists():
        return {}
    with path.open(newline="") as f:
        return {row["test"]: row["reason"] for row in csv.DictReader(f, delimiter="\t")}
