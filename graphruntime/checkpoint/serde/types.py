"""Value types the saver contract stores with a meaning of their own (LangGraph's path)."""

from __future__ import annotations

from graphruntime._internal._constants import TASKS
from graphruntime.checkpoint._snapshot import DeltaSnapshot

__all__ = ("TASKS", "DeltaSnapshot")


_DeltaSnapshot = DeltaSnapshot
"""LangGraph's name (``langgraph.checkpoint.serde.types._DeltaSnapshot``)."""
