"""CachePolicy: which nodes' results are cached, under what key, for how long."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from xxhash import xxh3_128_hexdigest

from graphruntime.cache.base import check_cache_ttl
from graphruntime.checkpoint.serde import JsonSerializer
from graphruntime.errors import InvalidArgumentTypeError

__all__ = ("CachePolicy", "default_cache_key")

_serde = JsonSerializer()
_TAG = "__gr__"


def _canonical(tree: Any) -> Any:
    """The serde's JSON tree with every unordered collection put in a fixed order.

    Sets and the fields-set of a pydantic model come out in hash order, which
    changes between processes; dict keys in insertion order, which callers do not
    mean to matter (as LangGraph's key sorts them).
    """
    if isinstance(tree, list):
        return [_canonical(v) for v in tree]
    if not isinstance(tree, dict):
        return tree
    out = {k: _canonical(v) for k, v in tree.items()}
    kind = out.get(_TAG)
    if kind in ("set", "frozenset"):
        out["v"] = sorted(out["v"], key=_text)
    elif kind == "dict":
        out["items"] = sorted(out["items"], key=_text)
    elif kind == "pydantic" and isinstance(out.get("set"), list):
        out["set"] = sorted(out["set"], key=_text)
    return out


def _text(tree: Any) -> str:
    return json.dumps(tree, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def default_cache_key(*args: Any, **kwargs: Any) -> str:
    """A stable hash of a node's input: the same value gives the same key in every process.

    The input goes through graphruntime's typed JSON serde (JSON only); dict
    key order and set order do not change the key, types do (``1`` vs ``1.0``
    vs ``True``, a tuple vs a list).

    Raises:
        CheckpointError: the input holds a value the serde cannot encode.
    """
    kind, data = _serde.dumps_typed((args, kwargs))
    if kind != "json":  # pragma: no cover - a tuple always encodes as JSON
        raise AssertionError(kind)
    canonical = _text(_canonical(json.loads(data)))
    return xxh3_128_hexdigest(canonical.encode("utf-8", "surrogatepass"))


KeyFuncT = TypeVar("KeyFuncT", bound=Callable[..., str | bytes])


@dataclass(frozen=True, kw_only=True, slots=True)
class CachePolicy(Generic[KeyFuncT]):
    """How a node's results are cached (LangGraph's ``CachePolicy``).

    Args:
        key_func: the cache key of the node's input; by default a stable hash of
            the input through graphruntime's serde (:func:`default_cache_key`).
        ttl: seconds an entry lives; ``None`` never expires.
    """

    key_func: KeyFuncT = default_cache_key  # type: ignore[assignment]
    ttl: int | None = None

    def __post_init__(self) -> None:
        if not callable(self.key_func):
            raise InvalidArgumentTypeError(
                f"CachePolicy.key_func must be callable, got {self.key_func!r}"
            )
        check_cache_ttl(self.ttl)
