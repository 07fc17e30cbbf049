"""Public constants, as in ``langgraph.constants``."""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import Any

from graphruntime import warnings as deprecation

__all__ = ("END", "START", "TAG_HIDDEN", "TAG_NOSTREAM")

START = sys.intern("__start__")
"""The first (virtual) node of a graph."""
END = sys.intern("__end__")
"""The last (virtual) node of a graph."""
TAG_NOSTREAM = sys.intern("nostream")
TAG_HIDDEN = sys.intern("langsmith:hidden")


def __getattr__(name: str) -> Any:
    # LangGraph's deprecated spellings: types once lived here, and private constants
    if name in ("Send", "Interrupt"):
        warnings.warn(
            f"Importing {name} from langgraph.constants is deprecated. "
            f"Please use 'from langgraph.types import {name}' instead.",
            deprecation.LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        # types sits a layer above this module: loaded on first use only
        return getattr(importlib.import_module("graphruntime.types"), name)
    private = importlib.import_module("graphruntime._internal._constants")
    if not name.startswith("_") and hasattr(private, name):
        warnings.warn(
            f"Importing {name} from langgraph.constants is deprecated. This constant is now "
            "private and should not be used directly. Please let the LangGraph team know if "
            "you need this value.",
            deprecation.LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        return getattr(private, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
