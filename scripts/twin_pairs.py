"""List graphruntime's sync/async twins kept by hand (issue #20).

    python scripts/twin_pairs.py [--all] [ROOT]

A twin pair is a function `name` and a function `aname` (async, or returning an async
iterator; `_x` and `_ax`, `__x__` and `__ax__`) defined in the same scope: a module, a
class or a function. The async body is normalised (no `await`; `async for`/`async with`
as `for`/`with`; every twin's async name, anywhere under ROOT, read as its sync one; a
`for x in it: yield x` as `yield from it`). Both bodies are flattened into statements (a
compound statement counts its header once, then its bodies) and matched in order. A pair
is *kept by hand* when each side has more than one statement the other lacks: a change of
semantics would have to be written twice. A side of one statement delegates (to its twin
or to a core shared by both) and does not count, nor do docstrings and abstract bodies
(`...`, `pass`, `raise NotImplementedError`). Prints those pairs (every pair with --all,
with how many statements differ) and the counts.
"""

from __future__ import annotations

import ast
import copy
import difflib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pair:
    path: str
    scope: str
    name: str
    line: int
    differing: int


def _async_name(name: str) -> str:
    if name.startswith("__") and name.endswith("__"):
        return "__a" + name[2:]
    if name.startswith("_"):
        return "_a" + name[1:]
    return "a" + name


class _Normalise(ast.NodeTransformer):
    """Read an async body as its sync twin would be written."""

    def __init__(self, renames: dict[str, str]) -> None:
        self.renames = renames

    def visit_Await(self, node: ast.Await) -> ast.AST:
        return self.visit(node.value)  # type: ignore[no-any-return]

    def visit_AsyncFor(self, node: ast.AsyncFor) -> ast.AST:
        new = ast.For(node.target, node.iter, node.body, node.orelse, node.type_comment)
        return self.generic_visit(ast.copy_location(new, node))

    def visit_AsyncWith(self, node: ast.AsyncWith) -> ast.AST:
        new = ast.With(node.items, node.body, node.type_comment)
        return self.generic_visit(ast.copy_location(new, node))

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self.renames.get(node.id, node.id)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        node.attr = self.renames.get(node.attr, node.attr)
        return node


def _body(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    body = list(fn.body)
    first = body[0] if body else None
    is_docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    if is_docstring and isinstance(first.value.value, str):  # type: ignore[union-attr]
        body = body[1:]
    return body


def _is_abstract(body: list[ast.stmt]) -> bool:
    if len(body) != 1:
        return not body
    only = body[0]
    if isinstance(only, ast.Expr) and isinstance(only.value, ast.Constant):
        return only.value.value is Ellipsis
    if isinstance(only, ast.Raise) and only.exc is not None:
        exc = only.exc.func if isinstance(only.exc, ast.Call) else only.exc
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return isinstance(only, ast.Pass)


_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _forwards(stmt: ast.stmt) -> bool:
    """``for x in it: yield x``: as ``yield from it`` (the async twin cannot write that)."""
    if not isinstance(stmt, ast.For) or stmt.orelse or len(stmt.body) != 1:
        return False
    only = stmt.body[0]
    return (
        isinstance(only, ast.Expr)
        and isinstance(only.value, ast.Yield)
        and only.value.value is not None
        and ast.unparse(only.value.value) == ast.unparse(stmt.target)
    )


def _flatten(stmts: list[ast.stmt]) -> Iterator[str]:
    """One line per statement; a compound statement's header, then its bodies."""
    for stmt in stmts:
        if _forwards(stmt):
            assert isinstance(stmt, ast.For)
            yield f"yield from {ast.unparse(stmt.iter)}"
            continue
        nested = [(f, getattr(stmt, f)) for f in _BODIES if getattr(stmt, f, None)]
        if not nested:
            yield ast.unparse(stmt)
            continue
        header = type(stmt).__name__
        for field in ("test", "target", "iter", "items", "subject", "type", "name"):
            value = getattr(stmt, field, None)
            if isinstance(value, ast.AST):
                header += " " + ast.unparse(value)
            elif isinstance(value, list) and value and isinstance(value[0], ast.AST):
                header += " " + ", ".join(ast.unparse(v) for v in value)
        yield header
        for field, body in nested:
            yield f"<{field}>"
            if field in ("handlers", "cases"):
                for clause in body:
                    yield from _flatten([clause])
            else:
                yield from _flatten(body)


def _differing(sync: list[str], async_: list[str]) -> int:
    matcher = difflib.SequenceMatcher(a=sync, b=async_, autojunk=False)
    matched = sum(block.size for block in matcher.get_matching_blocks())
    return min(len(sync) - matched, len(async_) - matched)


def _scopes(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, list[ast.stmt]]]:
    body: list[ast.stmt] = getattr(tree, "body", [])
    yield prefix or "<module>", body
    for node in ast.walk(tree):
        if node is tree:
            continue
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            yield f"{node.name}@{node.lineno}", node.body


def _twins(
    tree: ast.AST,
) -> Iterator[tuple[str, ast.FunctionDef, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for scope, body in _scopes(tree):
        defs = {n.name: n for n in body if isinstance(n, ast.FunctionDef)}
        # the async twin may be a plain function returning an async iterator or awaitable
        adefs = {n.name: n for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        for name, fn in defs.items():
            afn = adefs.get(_async_name(name))
            if afn is not None:
                yield scope, fn, afn


def pairs(root: Path) -> Iterator[Pair]:
    trees = {
        path: ast.parse(path.read_text(encoding="utf-8"), str(path))
        for path in sorted(root.rglob("*.py"))
    }
    found = {path: list(_twins(tree)) for path, tree in trees.items()}
    # a twin calls its twin's helpers by their async names (`adrive` for `drive`) anywhere
    renames = {_async_name(fn.name): fn.name for ts in found.values() for _, fn, _ in ts}
    for path, twins in found.items():
        for scope, fn, afn in twins:
            sync_body, async_body = _body(fn), _body(afn)
            if _is_abstract(sync_body) and _is_abstract(async_body):
                differing = 0
            else:
                copied = copy.deepcopy(async_body)
                async_body = [_Normalise(renames).visit(s) for s in copied]
                differing = _differing(list(_flatten(sync_body)), list(_flatten(async_body)))
            yield Pair(str(path), scope, fn.name, fn.lineno, differing)


def main(argv: list[str]) -> int:
    show_all = "--all" in argv
    args = [a for a in argv if a != "--all"]
    root = Path(args[0] if args else "graphruntime")
    found = list(pairs(root))
    by_hand = [p for p in found if p.differing > 1]
    for pair in found if show_all else by_hand:
        sys.stdout.write(
            f"{pair.differing:3d}  {pair.path}:{pair.line}  {pair.scope}  {pair.name}\n"
        )
    sys.stdout.write(
        f"pairs: {len(found)}; kept by hand (bodies differ in >1 statement): {len(by_hand)}\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
