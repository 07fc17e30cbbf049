"""The two runtimes under comparison, as namespaces of the names a ported graph imports.

A user ports a graph by swapping the import prefix (``langgraph`` → ``graphruntime``);
:func:`load_runtime` does exactly that, so a scenario written against ``rt.*`` runs
unchanged on both. The graphruntime side is imported only when asked for, so a missing
module fails that runtime's test instead of breaking collection.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

__all__ = ("RUNTIME_NAMES", "Runtime", "load_runtime")

RUNTIME_NAMES = ("langgraph", "graphruntime")


@dataclass(frozen=True)
class Runtime:
    """Everything a scenario may import from one runtime."""

    name: str
    StateGraph: Any
    START: str
    END: str
    Command: Any
    Send: Any
    interrupt: Any
    Interrupt: Any
    RetryPolicy: Any
    Overwrite: Any
    StateSnapshot: Any
    InMemorySaver: Any
    MemorySaver: Any
    get_stream_writer: Any
    get_config: Any
    errors: ModuleType
    package: str = ""
    """The package the names come from (``name`` may label a runtime built on another's)."""
    entrypoint: Any = None
    task: Any = None


def load_runtime(prefix: str) -> Runtime:
    """Import the public names from ``<prefix>.graph``, ``.types``, ``.config`` …"""
    graph = importlib.import_module(f"{prefix}.graph")
    types = importlib.import_module(f"{prefix}.types")
    config = importlib.import_module(f"{prefix}.config")
    memory = importlib.import_module(f"{prefix}.checkpoint.memory")
    errors = importlib.import_module(f"{prefix}.errors")
    func = importlib.import_module(f"{prefix}.func")
    return Runtime(
        name=prefix,
        StateGraph=graph.StateGraph,
        START=graph.START,
        END=graph.END,
        Command=types.Command,
        Send=types.Send,
        interrupt=types.interrupt,
        Interrupt=types.Interrupt,
        RetryPolicy=types.RetryPolicy,
        Overwrite=types.Overwrite,
        StateSnapshot=types.StateSnapshot,
        InMemorySaver=memory.InMemorySaver,
        MemorySaver=memory.MemorySaver,
        get_stream_writer=config.get_stream_writer,
        get_config=config.get_config,
        errors=errors,
        package=prefix,
        entrypoint=func.entrypoint,
        task=func.task,
    )
