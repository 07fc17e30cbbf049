"""LangGraph's module name for the barrier channels (``langgraph.channels.named_barrier_value``)."""

from __future__ import annotations

from graphruntime.channels.barrier import NamedBarrierValue, NamedBarrierValueAfterFinish

__all__ = ("NamedBarrierValue", "NamedBarrierValueAfterFinish")
