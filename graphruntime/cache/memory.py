"""InMemoryCache: the cache contract in a dict, for one process."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence

from graphruntime.cache.base import BaseCache, FullKey, Namespace, ValueT, check_cache_ttl
from graphruntime.checkpoint.serde import SerializerProtocol

__all__ = ("InMemoryCache",)


class InMemoryCache(BaseCache[ValueT]):
    """A thread-safe cache in a dict; values are stored serialized, so every hit is a copy.

    Args:
        serde: how values are stored; defaults to :class:`JsonSerializer`.
        clock: seconds on a monotonic clock; tests pass a fake one to expire
            entries without waiting.
    """

    def __init__(
        self,
        *,
        serde: SerializerProtocol | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        super().__init__(serde=serde)
        self._clock = clock or time.monotonic
        self._data: dict[Namespace, dict[str, tuple[str, bytes, float | None]]] = {}
        self._lock = threading.Lock()

    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, ValueT]:
        found: list[tuple[FullKey, tuple[str, bytes]]] = []
        with self._lock:
            now = self._clock()
            for namespace, key in keys:
                entries = self._data.get(tuple(namespace))
                entry = entries.get(key) if entries is not None else None
                if entry is None:
                    continue
                kind, data, expires = entry
                if expires is not None and expires <= now:
                    del entries[key]  # type: ignore[union-attr]
                    continue
                found.append(((tuple(namespace), key), (kind, data)))
        # Decoding runs outside the lock: it may be slow and cannot touch the cache.
        return {full_key: self.serde.loads_typed(blob) for full_key, blob in found}

    async def aget(self, keys: Sequence[FullKey]) -> dict[FullKey, ValueT]:
        return self.get(keys)

    def set(self, pairs: Mapping[FullKey, tuple[ValueT, int | None]]) -> None:
        encoded = []
        for (namespace, key), (value, ttl) in pairs.items():
            check_cache_ttl(ttl)
            kind, data = self.serde.dumps_typed(value)
            encoded.append((tuple(namespace), key, kind, data, ttl))
        with self._lock:
            now = self._clock()
            for namespace, key, kind, data, ttl in encoded:
                expires = None if ttl is None else now + ttl
                self._data.setdefault(namespace, {})[key] = (kind, data, expires)

    async def aset(self, pairs: Mapping[FullKey, tuple[ValueT, int | None]]) -> None:
        self.set(pairs)

    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        with self._lock:
            if namespaces is None:
                self._data.clear()
                return
            for namespace in namespaces:
                self._data.pop(tuple(namespace), None)

    async def aclear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        self.clear(namespaces)
