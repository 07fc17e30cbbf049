"""The serializer protocol at LangGraph's path (``langgraph.checkpoint.serde.base``)."""

from __future__ import annotations

from graphruntime.checkpoint.serde import SerializerProtocol

__all__ = ("SerializerProtocol",)
