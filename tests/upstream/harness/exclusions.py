"""Which vendored tests use LangGraph-private API, found by reading the test files.

A test is excluded when its body, its decorators, its fixtures or a module-level helper it
reaches (transitively) refers to a name bound by an import of a private module (a path
component starting with ``_``: ``langgraph._internal``, ``langgraph.pregel._loop``, ...), an
underscore name imported from a public module (``_messages_delta_reducer``), a
``CONFIG_KEY_*`` constant, or names a private module in a string (``mocker.patch`` targets).
Private constants that are plain data are not counted (see :func:`_is_data`).
The analysis reads names, so it errs towards excluding (a helper that mentions a private name
on a path the test never takes still excludes the test); it never misses a direct use.
"""

from __future__ import annotations

import ast
import csv
import importlib
import re
from collections.abc import Iterable
from pathlib import Path

from tests.upstream.harness.paths import EXCLUDED, ROOT

__all__ = ("analyse", "base_id", "reach", "read_tsv", "write_tsv")

_DOTTED_LANGGRAPH = re.compile(r"\blanggraph(?:\.\w+)+")


def _private_module(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


def _is_data(module: str, name: str) -> bool:
    """True for a private constant that is plain data (``PULL == "__pregel_pull"``).

    Such a value shows up verbatim in public output (task paths, error channels), and in the
    graphruntime run the import still resolves to LangGraph's own value, so a test that
    compares public output against it stays sound. ``CONFIG_KEY_*`` keys are never data:
    they reach into the runtime's internals through the config.
    """
    if name.startswith("CONFIG_KEY_"):
        return False
    try:
        value = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return False
    return _plain(value)


def _plain(value: object) -> bool:
    if isinstance(value, tuple | frozenset):
        return all(_plain(item) for item in value)
    return value is None or isinstance(value, str | int | float | bool)


def _private_bindings(tree: ast.Module) -> dict[str, str]:
    """Name bound at module level -> what private thing it is."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            module = node.module
            for alias in node.names:
                bound = alias.asname or alias.name
                if module.startswith("langgraph") and _private_module(module):
                    if not _is_data(module, alias.name):
                        found[bound] = f"{module}.{alias.name}"
                elif module.startswith("graphruntime") and (
                    alias.name.startswith("_") or alias.name.startswith("CONFIG_KEY_")
                ):
                    found[bound] = "langgraph" + module[len("graphruntime") :] + f".{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("langgraph") and _private_module(alias.name):
                    found[alias.asname or alias.name.split(".")[0]] = alias.name
    return found


def _stored(node: ast.AST) -> set[str]:
    names: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store | ast.Del):
            names.add(sub.id)
        elif isinstance(sub, ast.arg):
            names.add(sub.arg)
        elif (
            isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and sub is not node
        ):
            names.add(sub.name)
        elif isinstance(sub, ast.alias):
            names.add((sub.asname or sub.name).split(".")[0])
    return names


def _refs(node: ast.AST, *, local_scope: bool) -> set[str]:
    """Names ``node`` reads (minus its own locals when it is a function), plus string marks."""
    loads = {
        sub.id
        for sub in ast.walk(node)
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)
    }
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            for match in _DOTTED_LANGGRAPH.finditer(sub.value):
                if _private_module(match.group(0)):
                    loads.add(f"<string {match.group(0)}>")
    if local_scope:
        loads -= _stored(node)
    return loads


def _defined(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {stmt.name}
    if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _is_test(node: ast.stmt) -> bool:
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")


def _function_refs(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    args = {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)}
    # Parameters name fixtures: keep them as references so a tainted fixture taints the test.
    return _refs(node, local_scope=True) | args


def reach(path: Path, bindings: dict[str, str]) -> dict[str, str]:
    """Test id (without parameters) -> the label of the first binding it reaches.

    ``bindings`` maps module-level names (or fixture names) to labels; a test reaches a name
    through its body, decorators, fixture parameters, or module-level helpers, transitively.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    # What each module-level name refers to.
    graph: dict[str, set[str]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            continue
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            refs = _function_refs(stmt)
        else:
            refs = _refs(stmt, local_scope=False)
        for name in _defined(stmt):
            graph.setdefault(name, set()).update(refs - {name})
    # Fixed point: which names reach a binding, and which one.
    reason: dict[str, str] = dict(bindings)

    def why(refs: Iterable[str]) -> str | None:
        for ref in sorted(refs):
            if ref.startswith("<string "):
                return ref[len("<string ") : -1]
            if ref in reason:
                return reason[ref]
        return None

    changed = True
    while changed:
        changed = False
        for name, refs in graph.items():
            if name not in reason and (hit := why(refs)) is not None:
                reason[name] = hit
                changed = True
    rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    found: dict[str, str] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and _is_test(stmt):
            hit = why(_function_refs(stmt))
            if hit is not None:
                found[f"{rel}::{stmt.name}"] = hit
        elif isinstance(stmt, ast.ClassDef) and stmt.name.startswith("Test"):
            shared: set[str] = set()
            for item in stmt.body:
                if not _is_test(item):
                    shared |= _refs(item, local_scope=False)
            for dec in stmt.decorator_list:
                shared |= _refs(dec, local_scope=False)
            for item in stmt.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and _is_test(item):
                    hit = why(_function_refs(item) | shared)
                    if hit is not None:
                        found[f"{rel}::{stmt.name}::{item.name}"] = hit
    return found


def _file_exclusions(path: Path) -> list[tuple[str, str]]:
    bindings = _private_bindings(ast.parse(path.read_text(), filename=str(path)))
    return [(test, f"private: uses {label}") for test, label in reach(path, bindings).items()]


def analyse(paths: Iterable[Path]) -> list[tuple[str, str]]:
    """(node id without parameters, reason) for every test that uses LangGraph-private API."""
    rows: list[tuple[str, str]] = []
    for path in paths:
        rows.extend(_file_exclusions(path))
    return rows


def write_tsv(rows: Iterable[tuple[str, str]], path: Path = EXCLUDED) -> None:
    with path.open("w", newline="") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(("test", "reason"))
        writer.writerows(rows)


def read_tsv(path: Path = EXCLUDED) -> dict[str, str]:
    """test -> reason; ``test`` is a node id without parameters, or a file path."""
    if not path.exists():
        return {}
    with path.open(newline="") as f:
        return {row["test"]: row["reason"] for row in csv.DictReader(f, delimiter="\t")}


def base_id(nodeid: str) -> str:
    """``file.py::test_x[memory-sync]`` -> ``file.py::test_x``."""
    return nodeid.split("[", 1)[0]
