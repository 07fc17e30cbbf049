"""Access to the running node's config and stream writer (as ``langgraph.config``)."""

from __future__ import annotations

from graphruntime._internal._config import (
    RunnableConfig,
    StreamWriter,
    get_config,
    get_stream_writer,
)

__all__ = ("RunnableConfig", "StreamWriter", "get_config", "get_stream_writer")
