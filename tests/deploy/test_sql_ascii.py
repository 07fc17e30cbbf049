"""Every .sql file is plain ASCII, so migrations apply on a database of any encoding.

A server whose database encoding is SQL_ASCII rejected a migration that had one non-ASCII
character (in a comment). Comments count: the whole file is sent to the server.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Directories that are not the project's source: virtualenvs, embedded server data, caches.
SKIP_PARTS = {"build", "dist", "node_modules", "__pycache__"}

# Known offenders, to be fixed in the runtime packages. strict xfail: once a file is fixed
# its entry fails as XPASS, and must be removed from here.
KNOWN_NON_ASCII: dict[str, str] = {}


def sql_files() -> list[Path]:
    return sorted(
        path
        for path in ROOT.rglob("*.sql")
        if not any(
            part.startswith(".") or part in SKIP_PARTS for part in path.relative_to(ROOT).parts
        )
    )


def non_ascii_lines(path: Path) -> list[str]:
    """``"LINE:COLUMN: 'character'"`` for every non-ASCII character in ``path``."""
    found: list[str] = []
    text = path.read_bytes().decode("utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), start=1):
        found.extend(f"{number}:{col}: {ch!r}" for col, ch in enumerate(line, 1) if ord(ch) > 127)
    return found


def _params() -> list[object]:
    params: list[object] = []
    for path in sql_files():
        name = path.relative_to(ROOT).as_posix()
        marks = []
        if name in KNOWN_NON_ASCII:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_NON_ASCII[name]))
        params.append(pytest.param(path, id=name, marks=marks))
    return params


def test_the_migrations_are_found() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in sql_files()}
    assert "checkpoint_pg/sql/migrations/0001_initial.sql" in names
    assert "workers/sql/migrations/0001_initial.sql" in names
    assert set(KNOWN_NON_ASCII) <= names, "a KNOWN_NON_ASCII entry names a file that is gone"


def test_the_check_sees_non_ascii(tmp_path: Path) -> None:
    sample = tmp_path / "sample.sql"
    sample.write_text("SELECT 1;\n-- takes 5 µs\n", encoding="utf-8")
    assert non_ascii_lines(sample) == ["2:12: 'µ'"]


@pytest.mark.parametrize("path", _params())
def test_sql_file_is_ascii(path: Path) -> None:
    bad = non_ascii_lines(path)
    assert not bad, f"{path.relative_to(ROOT)} has non-ASCII characters at {bad}"
