"""The writer of the running tool call's partial output (``ToolRuntime.emit_output_delta``).

Lives at the bottom layer so that whatever streams tool output (the ``"tools"`` stream
mode's handler, :mod:`graphruntime.pregel._lc_tools`) can set it without importing the
prebuilt nodes, which need langchain-core.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

ToolCallWriter = Callable[[Any], None]
"""Emits a ``tool-output-delta`` event for one tool call."""

tool_call_writer: ContextVar[ToolCallWriter | None] = ContextVar(
    "graphruntime_tool_call_writer", default=None
)
"""Set while a tool call runs and its output is being streamed; ``None`` otherwise."""
