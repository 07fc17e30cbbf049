"""Compatibility with code written for LangGraph that cannot change its imports.

``alias_langgraph()`` makes ``import langgraph.X`` give ``graphruntime.X`` for the whole
process, so LangChain's ``create_agent`` (which imports LangGraph itself) builds and runs
graphruntime graphs. ``GRAPHRUNTIME_ALIAS_LANGGRAPH=1`` asks the workers for it at start.
"""

from __future__ import annotations

from graphruntime.compat._alias import (
    ALIAS_SETTING,
    POSTGRES_MODULES,
    PRIVATE_MODULES,
    LangGraphAliasError,
    LangGraphModuleNotFoundError,
    alias_from_env,
    alias_langgraph,
    is_aliased,
)

__all__ = (
    "ALIAS_SETTING",
    "POSTGRES_MODULES",
    "PRIVATE_MODULES",
    "LangGraphAliasError",
    "LangGraphModuleNotFoundError",
    "alias_from_env",
    "alias_langgraph",
    "is_aliased",
)
