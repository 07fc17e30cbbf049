"""LangGraph's module name for ``EphemeralValue`` (``langgraph.channels.ephemeral_value``)."""

from __future__ import annotations

from graphruntime.channels.ephemeral import EphemeralValue

__all__ = ("EphemeralValue",)
