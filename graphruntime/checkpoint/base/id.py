"""Time-ordered checkpoint ids (LangGraph's ``langgraph.checkpoint.base.id``)."""

from __future__ import annotations

from graphruntime.checkpoint._id import uuid6

__all__ = ("uuid6",)
