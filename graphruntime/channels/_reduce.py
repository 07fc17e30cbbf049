"""What the reducer channels share: their starting value and the ``Overwrite`` write."""

from __future__ import annotations

import collections.abc
import functools
from typing import Annotated, Any, NotRequired, Required, get_args, get_origin

from graphruntime._internal._typing import MISSING
from graphruntime.types import Overwrite

__all__ = ("concrete_type", "initial_value", "overwrite_value")

_ABSTRACT_TO_CONCRETE: dict[Any, type] = {
    collections.abc.Sequence: list,
    collections.abc.MutableSequence: list,
    collections.abc.Set: set,
    collections.abc.MutableSet: set,
    collections.abc.Mapping: dict,
    collections.abc.MutableMapping: dict,
}


def concrete_type(typ: Any) -> Any:
    """``NotRequired[Annotated[Sequence[int], op]]`` → ``list``: the type whose ``()`` is empty."""
    try:
        return _cached_concrete_type(typ)
    except TypeError:  # an unhashable annotation
        return _concrete_type(typ)


@functools.lru_cache(maxsize=512)
def _cached_concrete_type(typ: Any) -> Any:
    # every run starts its reducer channels from this: unwrapping typing forms costs more
    return _concrete_type(typ)


def _concrete_type(typ: Any) -> Any:
    while get_origin(typ) in (Annotated, NotRequired, Required):
        typ = get_args(typ)[0]
    typ = get_origin(typ) or typ
    return _ABSTRACT_TO_CONCRETE.get(typ, typ)


def initial_value(typ: Any) -> Any:
    """``typ()`` of the concrete type, or MISSING for a type without a no-arg constructor."""
    try:
        return concrete_type(typ)()
    except Exception:  # noqa: BLE001 - a type without a no-arg constructor starts empty
        return MISSING


def overwrite_value(value: Any) -> tuple[bool, Any]:
    """``(True, v)`` for ``Overwrite(v)`` (or its JSON forms), else ``(False, None)``."""
    if isinstance(value, Overwrite):
        return True, value.value
    if isinstance(value, dict):
        if set(value) == {"__overwrite__"}:
            return True, value["__overwrite__"]
        if value.get("type") == "__overwrite__" and set(value) == {"type", "value"}:
            return True, value["value"]  # an Overwrite that went through JSON
    return False, None
