"""The cache contract: LangGraph's ``BaseCache``, for node results.

Entries are addressed by a :data:`FullKey`, ``(namespace, key)``; values go
through a serializer (by default graphruntime's typed JSON, nothing else), so a
cache may live outside the process.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Generic, TypeAlias, TypeVar

from graphruntime.checkpoint.serde import JsonSerializer, SerializerProtocol
from graphruntime.errors import GraphRuntimeError

__all__ = (
    "BaseCache",
    "CacheError",
    "FullKey",
    "InvalidCacheRequestError",
    "Namespace",
    "ValueT",
    "check_cache_ttl",
)

ValueT = TypeVar("ValueT")
Namespace: TypeAlias = tuple[str, ...]
FullKey: TypeAlias = tuple[Namespace, str]


class CacheError(GraphRuntimeError):
    """A cache failed or refused an operation."""


class InvalidCacheRequestError(CacheError, ValueError):
    """An argument the cache cannot honour (a bad TTL)."""


def check_cache_ttl(ttl: float | None) -> None:
    """Refuse a TTL that is not ``None`` or a positive, finite number of seconds."""
    if ttl is None:
        return
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl):
        raise InvalidCacheRequestError(f"A cache TTL is a number of seconds or None, got {ttl!r}")
    if ttl <= 0:
        raise InvalidCacheRequestError(
            f"A cache TTL must be positive (None: never expires), got {ttl!r}"
        )


class BaseCache(ABC, Generic[ValueT]):
    """A key-value cache with per-entry TTLs (in seconds).

    Args:
        serde: how values are stored; defaults to :class:`JsonSerializer`.
    """

    serde: SerializerProtocol

    def __init__(self, *, serde: SerializerProtocol | None = None) -> None:
        self.serde = serde if serde is not None else JsonSerializer()

    @abstractmethod
    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, ValueT]:
        """The cached values of those ``keys`` that hold one (expired entries are absent)."""

    @abstractmethod
    async def aget(self, keys: Sequence[FullKey]) -> dict[FullKey, ValueT]:
        """Async :meth:`get`."""

    @abstractmethod
    def set(self, pairs: Mapping[FullKey, tuple[ValueT, int | None]]) -> None:
        """Store ``{key: (value, ttl_seconds)}``; a ``None`` TTL never expires."""

    @abstractmethod
    async def aset(self, pairs: Mapping[FullKey, tuple[ValueT, int | None]]) -> None:
        """Async :meth:`set`."""

    @abstractmethod
    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Delete the entries of these namespaces (exact matches), or all with ``None``."""

    @abstractmethod
    async def aclear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Async :meth:`clear`."""
