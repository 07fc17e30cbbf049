"""How big the in-memory run store is against the Postgres one (issue #20), three ways.

    .venv/bin/python scripts/store_size.py

The in-memory double is ``workers/store/memory.py``. The Postgres store is its connector
(``workers/store/postgres.py``) and the named queries (``workers/sql/queries.sql``);
"with the schema" adds the migrations (``workers/sql/migrations``), whose tables, column
defaults, keys and functions (the server's epoch) the double mirrors too, as
procrastinate's ``InMemoryConnector`` mirrors the functions of its ``schema.sql``. Lines
count everything; code characters leave out blank space, comments and docstrings, so
neither side gains by how it is laid out or documented.

The modules above both sides (``workers/store/_store.py``, ``_barrier.py``,
``_refusals.py``, ``_connector.py``, ``_model.py``, ``_payload.py``: the store's rules,
the rows' shapes, the connector protocol) are counted for neither: each is used by both
the Postgres store and the double, and code only the double uses lives in
``memory.py``, so it is counted there (checked: every name the double imports from
them is used by another module of ``workers/`` too). Test helpers
(``workers.testing``) are not the store and are not counted.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEMORY = ROOT / "workers/store/memory.py"
POSTGRES = [ROOT / "workers/store/postgres.py", ROOT / "workers/sql/queries.sql"]
SCHEMA = sorted((ROOT / "workers/sql/migrations").glob("*.sql"))


def lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def code_chars(path: Path) -> int:
    """Characters of code: no whitespace, comments (``#``, ``--``) or docstrings."""
    text = path.read_text()
    if path.suffix == ".sql":
        return len(re.sub(r"\s+", "", re.sub(r"--[^\n]*", "", text)))
    docstrings = {
        n
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        for n in range(node.lineno, (node.end_lineno or node.lineno) + 1)
    }
    kept = [line for n, line in enumerate(text.splitlines(), 1) if n not in docstrings]
    return len(re.sub(r"\s+", "", re.sub(r"(?m)^\s*#.*$", "", "\n".join(kept))))


def only_the_double_uses() -> list[str]:
    """Names ``memory.py`` imports from the shared store modules that no other module of
    ``workers/`` uses (code the double alone needs, counted for neither side)."""
    shared = {
        alias.name
        for node in ast.walk(ast.parse(MEMORY.read_text()))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("workers.store._")
        for alias in node.names
    }
    used: set[str] = set()
    for path in (ROOT / "workers").rglob("*.py"):
        if path != MEMORY:
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Name):
                    used.add(node.id)
                elif isinstance(node, ast.Attribute):
                    used.add(node.attr)
    return sorted(shared - used)


def main() -> None:
    if unshared := only_the_double_uses():
        sys.exit(f"only the in-memory store uses {unshared}: move it into {MEMORY.name}")
    for unit, measure in (("lines", lines), ("code characters", code_chars)):
        memory = measure(MEMORY)
        postgres = sum(measure(p) for p in POSTGRES)
        schema = sum(measure(p) for p in SCHEMA)
        sys.stdout.write(
            f"{unit}: in memory {memory}; Postgres {postgres} ({memory / postgres:.0%}), "
            f"with the schema {postgres + schema} ({memory / (postgres + schema):.0%})\n"
        )


if __name__ == "__main__":
    main()
