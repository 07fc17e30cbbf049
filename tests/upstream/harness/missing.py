"""What of LangGraph's public API a vendored test file imports that graphruntime lacks.

Used two ways: to lend the missing names from LangGraph in the diagnostic run
(``UPSTREAM_LEND_MISSING=1``, so the rest of a file can run), and by the report to tell which
tests need which missing module or name (those are not counted as graphruntime failures of
their own). The fixtures count too: ``cache`` needs ``graphruntime.cache.memory`` and the
stores ``graphruntime.store.memory``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Sequence
from pathlib import Path

__all__ = ("FIXTURE_NEEDS", "lend_missing", "missing_bindings", "provides")

_OURS = "graphruntime"
_THEIRS = "langgraph"

# Fixture name -> what it imports from the target.
FIXTURE_NEEDS = {
    "cache": ("graphruntime.cache.memory", "InMemoryCache"),
    "sync_store": ("graphruntime.store.memory", "InMemoryStore"),
    "async_store": ("graphruntime.store.memory", "InMemoryStore"),
}


def _module(name: str) -> types.ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _first_missing_module(name: str) -> str:
    parts = name.split(".")
    for i in range(2, len(parts) + 1):
        if _module(".".join(parts[:i])) is None:
            return ".".join(parts[:i])
    return name


def provides(module: str, name: str | None = None) -> str | None:
    """None if graphruntime has ``module`` (and ``name`` in it), else what is missing."""
    found = _module(module)
    if found is None:
        return _first_missing_module(module)
    if name is not None and name not in vars(found) and not hasattr(found, name):
        return f"{module}.{name}"
    return None


def _public(name: str) -> bool:
    return not name.startswith("_") and not name.startswith("CONFIG_KEY_")


def missing_bindings(path: Path) -> dict[str, str]:
    """Names bound by ``path``'s imports (and fixtures) that graphruntime lacks -> the gap."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != _OURS:
                continue
            for alias in node.names:
                if _public(alias.name) and (gap := provides(node.module, alias.name)):
                    found[alias.asname or alias.name] = gap
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == _OURS and (gap := provides(alias.name)):
                    found[alias.asname or alias.name.split(".")[0]] = gap
    for fixture, (module, name) in FIXTURE_NEEDS.items():
        if gap := provides(module, name):
            found[fixture] = gap
    return found


class _LendFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``graphruntime.X`` that graphruntime does not have -> the module ``langgraph.X``."""

    def __init__(self) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(_OURS + "."):
            return None
        parent_name = fullname.rpartition(".")[0]
        parent = sys.modules.get(parent_name)
        lent_parent = parent is not None and parent.__name__.split(".")[0] == _THEIRS
        if not lent_parent and importlib.machinery.PathFinder.find_spec(fullname, path):
            return None  # graphruntime has it
        theirs = _THEIRS + fullname[len(_OURS) :]
        if importlib.util.find_spec(theirs) is None:
            return None
        module = importlib.import_module(theirs)
        return importlib.machinery.ModuleSpec(
            fullname, self, is_package=hasattr(module, "__path__")
        )

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = sys.modules[_THEIRS + spec.name[len(_OURS) :]]
        self._specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        module.__spec__ = self._specs.pop(module.__name__, module.__spec__)


def _open_parents(name: str) -> None:
    """graphruntime has ``checkpoint.serde`` as a module where LangGraph has a package
    (``serde.types``): give such a module an empty ``__path__`` so the submodule can be lent."""
    parts = name.split(".")
    for i in range(2, len(parts)):
        parent = _module(".".join(parts[:i]))
        if parent is not None and not hasattr(parent, "__path__"):
            parent.__path__ = []


def lend_missing(path: Path) -> None:
    """Let every graphruntime import of ``path`` succeed, missing parts taken from LangGraph."""
    from tests.upstream.harness.targets import lend  # a cycle-free late import

    if not any(isinstance(finder, _LendFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _LendFinder())
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != _OURS:
                continue
            _open_parents(node.module)
            module = _module(node.module)
            if module is None or module.__name__.split(".")[0] == _THEIRS:
                continue
            names = {a.name for a in node.names if a.name != "*" and not hasattr(module, a.name)}
            if names:
                lend(module, _THEIRS + node.module[len(_OURS) :], names)
