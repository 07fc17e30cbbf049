"""Fixtures and collection rules for langgraph-checkpoint-postgres' vendored tests (README.md).

Hand-written after LangGraph's tests/conftest.py, which points at a Postgres on a fixed TCP
port: here ``DEFAULT_POSTGRES_URI`` and ``DEFAULT_URI`` come from server.py (the embedded
server and a scratch database of this process). The tests make and drop their own databases
on that server, as upstream.

``UPSTREAM_TARGET=langgraph`` runs the same files on LangGraph's packages (targets.py).
Collection: tests in excluded.tsv (private API) are deselected on both targets; against
graphruntime, tests in unsound.tsv (they fail on LangGraph in this harness) are deselected
and tests in expected_failures.tsv are ``xfail`` (``UPSTREAM_NO_XFAIL=1`` records real
outcomes). A file that does not import is one failing item, ``file.py::module_import``.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.upstream_pg.targets import TARGET, alias_postgres

if TARGET == "langgraph":
    alias_postgres()

import psycopg
from psycopg import sql

from tests.upstream_pg.embed_test_utils import CharacterEmbeddings
from tests.upstream_pg.exclusions import EXPECTED_FAILURES, UNSOUND, read_tsv
from tests.upstream_pg.server import DEFAULT_POSTGRES_URI, DEFAULT_URI

VECTOR_TYPES = ["vector", "halfvec"]

HERE = Path(__file__).resolve().parent
IMPORT_FAILURE = "module_import"
# Seconds per test: the TTL tests sleep ~17 s on purpose.
TIMEOUT = float(os.environ.get("UPSTREAM_TIMEOUT", "90"))
NO_XFAIL = os.environ.get("UPSTREAM_NO_XFAIL") == "1"

__all__ = ("DEFAULT_POSTGRES_URI", "DEFAULT_URI", "VECTOR_TYPES", "CharacterEmbeddings")


@pytest.fixture
def conn() -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(DEFAULT_URI, autocommit=True, prepare_threshold=0) as conn:
        yield conn


@pytest.fixture(autouse=True)
def clear_test_db(conn: psycopg.Connection[Any]) -> None:
    """Empty the session database before each test, as upstream's fixture does.

    LangGraph's tables are emptied as upstream empties them (their migration records too:
    its migrations re-run). checkpoint_pg's keep their migration records: its migrations
    are numbered files applied once.
    """
    if TARGET == "langgraph":
        for group in (
            ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations"),
            ("store_migrations", "store"),
        ):
            try:
                for table in group:
                    conn.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(table)))
            except psycopg.errors.UndefinedTable:
                pass
        return
    rows = conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        " AND tablename NOT LIKE '%migrations'"
    ).fetchall()
    if rows:
        tables = sql.SQL(", ").join(sql.Identifier(row[0]) for row in rows)
        conn.execute(sql.SQL("TRUNCATE {} CASCADE").format(tables))


@pytest.fixture
def fake_embeddings() -> CharacterEmbeddings:
    return CharacterEmbeddings(dims=500)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- collection -------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    # Upstream runs async tests with pytest-asyncio's auto mode; here anyio runs them (every
    # vendored module is marked anyio). pytest-asyncio, when installed (LangChain's suite
    # needs it), is in strict mode: it takes the tests marked ``asyncio``, as upstream.
    config.addinivalue_line("markers", "asyncio: LangGraph's mark for async tests (run by anyio)")


class _ImportFailure(pytest.Item):
    """A vendored file that does not import: one failing item with the import error."""

    def __init__(self, *, message: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message

    def runtest(self) -> None:
        raise ImportError(self.message)

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        return self.message

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.path.name}: import of the test module"


class _VendoredModule(pytest.Module):
    def collect(self) -> Any:
        try:
            return super().collect()
        except Exception as exc:  # noqa: BLE001 - any import error becomes the failing item
            if isinstance(exc, self.CollectError):
                message = str(exc)
            else:
                where = traceback.extract_tb(exc.__traceback__)[-1]
                message = f"{type(exc).__name__}: {exc}\n  at {where.filename}:{where.lineno}"
            return [_ImportFailure.from_parent(self, name=IMPORT_FAILURE, message=message)]


def _is_vendored(path: Path) -> bool:
    return path.parent == HERE and path.name.startswith("test_") and path.suffix == ".py"


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> Any:
    if not _is_vendored(module_path):
        return None
    module = _VendoredModule.from_parent(parent, path=module_path)
    module.add_marker(pytest.mark.anyio)
    return module


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    excluded = {} if os.environ.get("UPSTREAM_KEEP_EXCLUDED") == "1" else read_tsv()
    unsound = read_tsv(UNSOUND) if TARGET == "graphruntime" else {}
    expected = read_tsv(EXPECTED_FAILURES) if TARGET == "graphruntime" and not NO_XFAIL else {}
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        if not _is_vendored(item.path):
            keep.append(item)
            continue
        nodeid = item.nodeid
        base = nodeid.split("[", 1)[0]
        if base in excluded or nodeid in unsound:
            dropped.append(item)
            continue
        item.add_marker(pytest.mark.timeout(TIMEOUT, method="signal"))
        if nodeid in expected:
            item.add_marker(pytest.mark.xfail(reason=expected[nodeid], strict=False))
        keep.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
