"""The switch between the two targets: ``UPSTREAM_TARGET=graphruntime`` (default) or ``langgraph``.

The vendored tests import ``graphruntime.X``. Against LangGraph, :func:`alias_langgraph` makes
every ``graphruntime.X`` import load ``langgraph.X`` instead (the very module object), so the
same files prove that each ported test is sound on the real thing.

Against graphruntime, a test file may import an underscore name from a public module
(``from graphruntime.graph.message import _messages_delta_reducer``): LangGraph-private, so the
tests that use it are excluded, but the import itself must not fail the whole file.
:func:`lend_private_names` lets such a name resolve to LangGraph's object of the same path,
as the imports of private modules (left as ``langgraph._...`` in the files) do.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ("LEND_MISSING", "TARGET", "TARGETS", "alias_langgraph", "lend", "lend_private_names")

TARGETS = ("graphruntime", "langgraph")
TARGET = os.environ.get("UPSTREAM_TARGET", "graphruntime")
if TARGET not in TARGETS:
    raise RuntimeError(f"UPSTREAM_TARGET={TARGET!r}: use one of {', '.join(TARGETS)}")

# Diagnostic run against graphruntime: lend every missing module and name from LangGraph so
# the rest of each file runs (the report tells apart the tests that need what was lent).
LEND_MISSING = TARGET == "graphruntime" and os.environ.get("UPSTREAM_LEND_MISSING") == "1"

_OURS = "graphruntime"
_THEIRS = "langgraph"


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``graphruntime[.X]`` and hands back the already imported ``langgraph[.X]``."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _OURS and not fullname.startswith(_OURS + "."):
            return None
        theirs = _THEIRS + fullname[len(_OURS) :]
        module = importlib.import_module(theirs)  # ModuleNotFoundError names their module
        return importlib.machinery.ModuleSpec(
            fullname, self, is_package=hasattr(module, "__path__")
        )

    def __init__(self) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = sys.modules[_THEIRS + spec.name[len(_OURS) :]]
        # The import system keeps the module's __name__ and __file__ but overwrites
        # __spec__ with ours: exec_module puts LangGraph's back.
        self._specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        module.__spec__ = self._specs.pop(module.__name__, module.__spec__)


def alias_langgraph() -> None:
    """Make ``import graphruntime.X`` give ``langgraph.X`` for the rest of this process."""
    if any(isinstance(finder, _Alias) for finder in sys.meta_path):
        return  # another vendored suite's conftest in the same run installed it
    loaded = sorted(name for name in sys.modules if name.split(".")[0] == _OURS)
    if loaded:
        raise RuntimeError(
            "UPSTREAM_TARGET=langgraph needs a process that has not imported graphruntime yet "
            f"(already loaded: {', '.join(loaded[:3])}); run only tests/upstream in it"
        )
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Alias())


def lend_private_names(test_file: Path) -> None:
    """For each ``from graphruntime.X import _name`` in ``test_file`` that graphruntime lacks,
    let ``graphruntime.X._name`` resolve to ``langgraph.X._name``.

    Only underscore names and ``CONFIG_KEY_*`` are lent; a missing public name or module is
    left missing, since that is what the test run measures.
    """
    tree = ast.parse(test_file.read_text(), filename=str(test_file))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
            continue
        if node.module.split(".")[0] != _OURS:
            continue
        private = {
            alias.name
            for alias in node.names
            if alias.name.startswith("_") or alias.name.startswith("CONFIG_KEY_")
        }
        if not private:
            continue
        try:
            ours = importlib.import_module(node.module)
        except ImportError:
            continue  # the test file's own import reports the missing module
        missing = {name for name in private if name not in vars(ours)}
        if missing:
            lend(ours, _THEIRS + node.module[len(_OURS) :], missing)


def lend(module: types.ModuleType, theirs: str, names: set[str]) -> None:
    """Let ``module.<name>`` resolve to ``<theirs>.<name>`` for each of ``names`` it lacks."""
    previous: Callable[[str], Any] | None = vars(module).get("__getattr__")
    lent: set[str] = set(getattr(previous, "_upstream_lent", ())) | names

    def __getattr__(name: str) -> Any:
        if name in lent:
            return getattr(importlib.import_module(theirs), name)
        if previous is not None:
            return previous(name)
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")

    __getattr__._upstream_lent = lent  # type: ignore[attr-defined]
    module.__getattr__ = __getattr__  # type: ignore[method-assign]
