"""LangGraph's module name for ``AnyValue`` (``langgraph.channels.any_value``)."""

from __future__ import annotations

from graphruntime.channels.last_value import AnyValue

__all__ = ("AnyValue",)
