"""Deprecated: the types moved to :mod:`graphruntime.types` (as ``langgraph.pregel.types``)."""

from __future__ import annotations

import warnings

from graphruntime import warnings as deprecation
from graphruntime.types import (
    All,
    CachePolicy,
    PregelTask,
    RetryPolicy,
    StateSnapshot,
    StreamMode,
    StreamWriter,
    default_retry_on,
)

__all__ = (
    "All",
    "CachePolicy",
    "PregelTask",
    "RetryPolicy",
    "StateSnapshot",
    "StreamMode",
    "StreamWriter",
    "default_retry_on",
)

warnings.warn(
    "Importing from langgraph.pregel.types is deprecated. "
    "Please use 'from langgraph.types import ...' instead.",
    deprecation.LangGraphDeprecatedSinceV10,
    stacklevel=2,
)
