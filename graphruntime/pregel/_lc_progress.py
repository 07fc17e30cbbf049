"""An idle timeout's progress from LangChain callbacks: a chat model's tokens, tool runs.

Needs langchain-core (see :mod:`graphruntime.pregel._lc_messages`); loaded by
:mod:`graphruntime.pregel._timeout` only when LangChain is already imported, since only
LangChain code under the node emits these events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables.config import merge_configs

from graphruntime._internal._config import RunnableConfig

__all__ = ("with_progress",)


class _Progress(BaseCallbackHandler):
    """Any event of a run under the timed attempt counts as progress."""

    # inline: progress is seen in the order events happen, not when a pool gets to it
    run_inline = True

    def __init__(self, touch: Callable[[], None]) -> None:
        self._touch = touch

    def _event(self, *args: Any, **kwargs: Any) -> None:
        self._touch()

    on_llm_start = on_chat_model_start = on_llm_new_token = on_llm_end = on_llm_error = _event
    on_chain_start = on_chain_end = on_chain_error = _event
    on_tool_start = on_tool_end = on_tool_error = _event
    on_retriever_start = on_retriever_end = on_retriever_error = _event
    on_agent_action = on_agent_finish = on_text = on_retry = on_custom_event = _event


def with_progress(config: RunnableConfig, touch: Callable[[], None]) -> RunnableConfig:
    """``config`` with a handler (inherited by child runs) that calls ``touch``."""
    merged: RunnableConfig = merge_configs(config, {"callbacks": [_Progress(touch)]})
    return merged
