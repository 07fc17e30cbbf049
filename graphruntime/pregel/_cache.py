"""Cached node results: the key a task's writes are cached under, and the namespaces."""

from __future__ import annotations

from typing import Any

from xxhash import xxh3_128_hexdigest

from graphruntime._internal._constants import CACHE_NS_WRITES, ERROR, INTERRUPT
from graphruntime.pregel._algo import PreparedTask
from graphruntime.pregel._node import NodeSpec

__all__ = ("CacheKey", "cache_key", "cacheable", "identifier", "namespace")

CacheKey = tuple[tuple[str, ...], str, Any]
"""``(namespace, key, ttl)``: where a task's writes are cached, and for how long."""


def identifier(func: Any) -> str | None:
    """``module.qualname`` of a node's function; None for anything else (a graph, an object)."""
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    module = getattr(func, "__module__", None)
    if not isinstance(name, str) or not isinstance(module, str):
        return None
    return f"{module}.{name}"


def namespace(node: NodeSpec) -> tuple[str, ...]:
    """The cache namespace of a node's results (``clear_cache`` deletes it)."""
    return (CACHE_NS_WRITES, identifier(node.func) or "__dynamic__", node.name)


def cache_key(task: PreparedTask, policy: Any) -> CacheKey:
    """Where ``task``'s writes are cached: its node's namespace, a hash of its input."""
    key = policy.key_func(task.input)
    digest = xxh3_128_hexdigest(key.encode() if isinstance(key, str) else key)
    return namespace(task.node), digest, policy.ttl


def cacheable(writes: Any) -> bool:
    """Only a task that finished is cached: a hit skips the node, so an error or an
    interrupt cached would be skipped without being raised."""
    return not any(c in (INTERRUPT, ERROR) for c, _ in writes)
