"""The superstep engine: pure algorithm (``_algo``), loop and drivers."""

from __future__ import annotations

from graphruntime.pregel.main import Pregel

__all__ = ("Pregel",)
