"""Reading a state object's fields: which keys a pydantic model or dataclass has set."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from graphruntime._internal._typing import MISSING

__all__ = ("annotated_keys", "object_as_updates", "update_as_tuples")


def annotated_keys(typ: type) -> tuple[str, ...] | None:
    """The fields of a pydantic model or dataclass type; None for any other type."""
    return _annotated_keys(typ)


@lru_cache(maxsize=256)
def _annotated_keys(typ: Any) -> tuple[str, ...] | None:
    if isinstance(typ, type) and issubclass(typ, BaseModel):
        return tuple(typ.model_fields)
    if dataclasses.is_dataclass(typ):
        return tuple(f.name for f in dataclasses.fields(typ))
    return None


def object_as_updates(value: Any, keys: Sequence[str]) -> list[tuple[str, Any]] | None:
    """A returned pydantic/dataclass state becomes writes for its set, non-None fields."""
    annotated = annotated_keys(type(value))
    if annotated is None:
        return None
    if isinstance(value, BaseModel):
        keep: set[str] | None = value.model_fields_set
        defaults = {k: f.default for k, f in type(value).model_fields.items()}
    else:
        keep = None
        defaults = {
            f.name: f.default
            for f in dataclasses.fields(value)
            if f.default is not dataclasses.MISSING
        }
    out = []
    for key in keys:
        v = getattr(value, key, MISSING)
        if v is MISSING:
            continue
        if v is not None or defaults.get(key, MISSING) is not None or (keep and key in keep):
            out.append((key, v))
    return out


def update_as_tuples(update: Any) -> Sequence[tuple[str, Any]]:
    """The writes a ``Command(update=...)`` stands for."""
    if update is None:
        return []
    if isinstance(update, dict):
        return list(update.items())
    if isinstance(update, (list, tuple)) and all(
        isinstance(t, tuple) and len(t) == 2 and isinstance(t[0], str) for t in update
    ):
        return list(update)
    if (annotated := annotated_keys(type(update))) is not None:
        return object_as_updates(update, annotated) or []
    return [("__root__", update)]
