"""Public constants, as in ``langgraph.constants``."""

from __future__ import annotations

import sys

__all__ = ("END", "START", "TAG_HIDDEN", "TAG_NOSTREAM")

START = sys.intern("__start__")
"""The first (virtual) node of a graph."""
END = sys.intern("__end__")
"""The last (virtual) node of a graph."""
TAG_NOSTREAM = sys.intern("nostream")
TAG_HIDDEN = sys.intern("langsmith:hidden")
