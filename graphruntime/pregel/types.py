"""Deprecated home of some of :mod:`graphruntime.types` (as ``langgraph.pregel.types``)."""

from __future__ import annotations

from warnings import warn

from graphruntime.cache import CachePolicy
from graphruntime.types import (
    All,
    PregelTask,
    RetryPolicy,
    StateSnapshot,
    StreamMode,
    default_retry_on,
)
from graphruntime.warnings import LangGraphDeprecatedSinceV10

__all__ = [
    "All",
    "CachePolicy",
    "PregelTask",
    "RetryPolicy",
    "StateSnapshot",
    "StreamMode",
    "default_retry_on",
]

warn(
    "Importing from graphruntime.pregel.types is deprecated. "
    "Please use 'from graphruntime.types import ...' instead.",
    LangGraphDeprecatedSinceV10,
    stacklevel=2,
)
