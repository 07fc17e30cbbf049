"""The ``tools`` stream's writer for the tool call running in this context.

Set by the ``tools`` stream handler while a tool runs (it is a LangChain callback
handler: :mod:`graphruntime.pregel._lc_tools`); a tool streams partial output through
it (``ToolRuntime.emit_output_delta`` in the prebuilt tools). Kept here, free of
LangChain, so that readers need not import the handler.
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
