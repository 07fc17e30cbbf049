"""``UPSTREAM_TARGET=langgraph``: run the vendored files on LangGraph's own packages.

The files import ``checkpoint_pg`` and ``graphruntime``. Against LangGraph, ``graphruntime.X``
becomes ``langgraph.X`` (tests/upstream's alias) and ``checkpoint_pg[.aio]`` a module holding
the names of ``langgraph.checkpoint.postgres[.aio]`` and ``langgraph.store.postgres[.aio]``, as
a user's imports were before the swap. That process must not import graphruntime or
checkpoint_pg first (run only tests/upstream_pg in it).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Sequence
from pathlib import Path

from tests.upstream.harness.targets import alias_langgraph

__all__ = ("TARGET", "alias_postgres", "embedded")

TARGET = os.environ.get("UPSTREAM_TARGET", "graphruntime")
if TARGET not in ("graphruntime", "langgraph"):
    raise RuntimeError(f"UPSTREAM_TARGET={TARGET!r}: use graphruntime or langgraph")

_SOURCES = {
    "checkpoint_pg": ("langgraph.checkpoint.postgres", "langgraph.store.postgres"),
    "checkpoint_pg.aio": ("langgraph.checkpoint.postgres.aio", "langgraph.store.postgres.aio"),
}
_ROOT = Path(__file__).resolve().parent.parent.parent


class _Postgres(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``checkpoint_pg[.aio]`` as the union of LangGraph's saver and store modules."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _SOURCES:
            return None
        return importlib.machinery.ModuleSpec(
            fullname, self, is_package=fullname == "checkpoint_pg"
        )

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = types.ModuleType(spec.name)
        if spec.name == "checkpoint_pg":
            module.__path__ = []
        for source in _SOURCES[spec.name]:
            theirs = importlib.import_module(source)
            for name, value in vars(theirs).items():
                if not name.startswith("__"):
                    setattr(module, name, value)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def alias_postgres() -> None:
    """Make ``graphruntime.X`` and ``checkpoint_pg[.aio]`` LangGraph's, for this process."""
    if any(isinstance(finder, _Postgres) for finder in sys.meta_path):
        return  # the test files import the conftest again, by name
    alias_langgraph()
    sys.meta_path.insert(0, _Postgres())


def embedded() -> types.ModuleType:
    """``checkpoint_pg.embedded``, loaded from its file against LangGraph (it imports nothing
    of the project, and the package name means LangGraph's modules in that run)."""
    if TARGET == "graphruntime":
        return importlib.import_module("checkpoint_pg.embedded")
    name = "_upstream_pg_embedded"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _ROOT / "checkpoint_pg" / "embedded.py")
        if spec is None or spec.loader is None:
            raise ImportError("cannot load checkpoint_pg/embedded.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
