"""Caching node results: LangGraph's cache API.

``graphruntime.cache.base`` is the contract (:class:`BaseCache`),
``graphruntime.cache.memory`` the in-process cache; :class:`CachePolicy` says
which nodes are cached, under which key, for how long.
"""

from __future__ import annotations

from graphruntime.cache._policy import CachePolicy, default_cache_key
from graphruntime.cache.base import (
    BaseCache,
    CacheError,
    FullKey,
    InvalidCacheRequestError,
    Namespace,
)
from graphruntime.cache.memory import InMemoryCache

__all__ = (
    "BaseCache",
    "CacheError",
    "CachePolicy",
    "FullKey",
    "InMemoryCache",
    "InvalidCacheRequestError",
    "Namespace",
    "default_cache_key",
)
