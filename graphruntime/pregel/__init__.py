"""LangGraph's low-level graph API: :class:`Pregel` and :class:`NodeBuilder`.

``Pregel`` is a compiled graph (what ``StateGraph.compile()`` and ``@entrypoint`` make);
``NodeBuilder`` builds its nodes by hand. An executor that runs a graph's steps itself
(the workers) uses :mod:`graphruntime.pregel.driver`; everything else here is private.
"""

from __future__ import annotations

from graphruntime.pregel._builder import NodeBuilder
from graphruntime.pregel.main import Pregel

__all__ = ("NodeBuilder", "Pregel")
