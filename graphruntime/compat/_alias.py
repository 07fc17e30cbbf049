"""The ``langgraph`` -> ``graphruntime`` import alias (see :func:`alias_langgraph`)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import threading
import types
from collections.abc import Mapping, Sequence

from graphruntime.errors import GraphRuntimeError

__all__ = (
    "ALIAS_SETTING",
    "POSTGRES_MODULES",
    "PRIVATE_MODULES",
    "LangGraphAliasError",
    "LangGraphModuleNotFoundError",
    "alias_from_env",
    "alias_langgraph",
    "is_aliased",
)

ALIAS_SETTING = "GRAPHRUNTIME_ALIAS_LANGGRAPH"

_THEIRS = "langgraph"
_OURS = "graphruntime"

# LangGraph's Postgres distribution (langgraph-checkpoint-postgres) lives under langgraph's
# namespace; its counterpart is the checkpoint_pg package, which sits above graphruntime.
# graphruntime names it only here, as data: the mapping is used when checkpoint_pg is
# installed, and importing it is the importer's business (nothing here imports it).
POSTGRES_MODULES: Mapping[str, str] = {
    "langgraph.checkpoint.postgres": "checkpoint_pg",
    "langgraph.checkpoint.postgres.aio": "checkpoint_pg.aio",
    "langgraph.store.postgres": "checkpoint_pg",
    "langgraph.store.postgres.aio": "checkpoint_pg.aio",
}

# LangGraph-private modules that LangChain's agents (and langgraph-prebuilt's tests) import;
# graphruntime has them at the same paths, with the same names and behaviour, so they are part
# of what the alias promises.
PRIVATE_MODULES = (
    "langgraph._internal._runnable",
    "langgraph.prebuilt._tool_call_stream",
    "langgraph.stream._mux",
    "langgraph.stream._types",
)

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


class LangGraphAliasError(GraphRuntimeError, RuntimeError):
    """The alias cannot be installed: the real LangGraph is already imported."""


class LangGraphModuleNotFoundError(GraphRuntimeError, ModuleNotFoundError):
    """A ``langgraph.*`` module that graphruntime has no counterpart for.

    A ``ModuleNotFoundError``, so code that imports an optional LangGraph module in a
    ``try: ... except ImportError`` keeps working.
    """


def _counterpart(fullname: str) -> str:
    mapped = POSTGRES_MODULES.get(fullname)
    if mapped is not None:
        return mapped
    return _OURS + fullname[len(_THEIRS) :]


class _LangGraphAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``langgraph[.X]`` and hands back the module ``graphruntime[.X]`` itself."""

    def __init__(self) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}
        self._lock = threading.Lock()

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _THEIRS and not fullname.startswith(_THEIRS + "."):
            return None
        ours = _counterpart(fullname)
        try:
            module = importlib.import_module(ours)
        except ModuleNotFoundError as exc:
            if exc.name is None or not (ours == exc.name or ours.startswith(exc.name + ".")):
                raise  # the counterpart exists but failed to import something it needs
            raise LangGraphModuleNotFoundError(
                f"No module named {fullname!r}: the import alias of LangGraph "
                f"({ALIAS_SETTING} / graphruntime.compat.alias_langgraph) maps it to "
                f"{ours!r}, which does not exist",
                name=fullname,
            ) from exc
        return importlib.machinery.ModuleSpec(
            fullname, self, is_package=hasattr(module, "__path__")
        )

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = sys.modules[_counterpart(spec.name)]
        # The import system sets the module's __spec__ to the alias's spec when it takes
        # the module: exec_module puts the module's own back, so it stays what it was.
        with self._lock:
            self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        alias_spec = module.__spec__
        if alias_spec is not None:
            with self._lock:
                own = self._specs.pop(alias_spec.name, alias_spec)
            module.__spec__ = own


def is_aliased() -> bool:
    """True once :func:`alias_langgraph` ran in this process."""
    return any(isinstance(finder, _LangGraphAlias) for finder in sys.meta_path)


def _real_langgraph_modules() -> list[str]:
    return sorted(
        name
        for name, module in list(sys.modules.items())
        if (name == _THEIRS or name.startswith(_THEIRS + "."))
        and module is not None
        and not _is_ours(module)
    )


def _is_ours(module: types.ModuleType) -> bool:
    name = getattr(module, "__name__", "")
    return name == _OURS or name.startswith(_OURS + ".") or name in set(POSTGRES_MODULES.values())


def alias_langgraph() -> None:
    """Make ``import langgraph.X`` give the module ``graphruntime.X`` for this whole process.

    Code that imports LangGraph itself (``langchain.agents.create_agent``, langgraph-prebuilt
    users, a library's own imports) then builds and runs graphruntime graphs, unchanged:
    ``langgraph.types.Command is graphruntime.types.Command``. A module graphruntime lacks
    fails to import with :class:`LangGraphModuleNotFoundError` (a ``ModuleNotFoundError``).
    ``langgraph.checkpoint.postgres[.aio]`` and ``langgraph.store.postgres[.aio]`` are
    ``checkpoint_pg[.aio]``.

    Call it before anything imports LangGraph: a process that already holds real LangGraph
    modules cannot be switched (its classes would be mixed with graphruntime's), and the
    call raises :class:`LangGraphAliasError` naming them. A second call does nothing.
    """
    if is_aliased():
        return
    real = _real_langgraph_modules()
    if real:
        shown = ", ".join(real[:3]) + (f" and {len(real) - 3} more" if len(real) > 3 else "")
        raise LangGraphAliasError(
            "Cannot alias langgraph to graphruntime: this process already imported the real "
            f"LangGraph ({shown}). Call graphruntime.compat.alias_langgraph() (or set "
            f"{ALIAS_SETTING}=1 for the workers) before anything imports langgraph or "
            "langchain.agents."
        )
    sys.meta_path.insert(0, _LangGraphAlias())


def alias_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """Install the alias when ``GRAPHRUNTIME_ALIAS_LANGGRAPH`` says so; True if installed.

    The hook a process calls at start, before it imports graphs (the workers, a server).
    A value other than 1/true/yes/on or 0/false/no/off/empty is refused.
    """
    raw = (os.environ if environ is None else environ).get(ALIAS_SETTING, "")
    value = raw.strip().lower()
    if value in _FALSE:
        return False
    if value not in _TRUE:
        raise LangGraphAliasError(
            f"{ALIAS_SETTING}={raw!r}: use 1 (alias langgraph to graphruntime) or 0"
        )
    alias_langgraph()
    return True
