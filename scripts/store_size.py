"""How big the in-memory run store is against the Postgres one (issue #20), three ways.

    .venv/bin/python scripts/store_size.py

The in-memory double is ``workers/store/memory.py``. The Postgres store is its connector
(``workers/store/postgres.py``) and the named queries (``workers/sql/queries.sql``);
"with the schema" adds the migrations (``workers/sql/migrations``), whose tables, column
defaults, keys and functions (the server's epoch) the double mirrors too, as
procrastinate's ``InMemoryConnector`` mirrors the functions of its ``schema.sql``. Lines
count everything; code characters leave out blank space, comments and docstrings, so
neither side gains by how it is laid out or documented.
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


def main() -> None:
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
