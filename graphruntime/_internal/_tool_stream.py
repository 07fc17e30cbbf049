"""The writer of the running tool call's partial output (``ToolRuntime.emit_output_delta``).

Lives at the bottom layer so that whatever streams tool output (a ``"tools"`` stream
mode) can set it without importing the prebuilt nodes, which need langchain-core.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

tool_call_writer: ContextVar[Callable[[Any], None] | None] = ContextVar(
    "graphruntime_tool_call_writer", default=None
)
"""Set while a tool call runs and its output is being streamed; ``None`` otherwise."""
