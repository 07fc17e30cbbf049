"""The classes a state schema's values can hold, to allow them in the serializer."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import types
import typing
from enum import Enum
from typing import Any, get_args, get_origin, get_type_hints

from graphruntime.checkpoint._serde_kinds import (
    ENUM,
    PYDANTIC,
    allowable_problem,
    kind_of,
)

__all__ = ("schema_classes",)

# Wrappers whose first argument is the type: Annotated[T, ...], Required[T], ...
_WRAPPERS = frozenset(
    {
        typing.Annotated,
        typing.Required,
        typing.NotRequired,
        typing.ClassVar,
        typing.Final,
        getattr(typing, "ReadOnly", typing.Final),
    }
)


def schema_classes(*schemas: Any) -> frozenset[type]:
    """Every enum, pydantic model, dataclass and NamedTuple ``schemas`` can contain.

    Walks TypedDicts, dataclasses, pydantic models and NamedTuples field by field,
    through ``list[...]``, ``dict[...]``, ``Optional``/``Union``/``|``,
    ``Annotated``, ``Required``/``NotRequired``, ``Literal`` (of enum members) and
    nested models, including the schemas themselves when they are such classes.
    Classes whose instances cannot round-trip are left out (writing one is
    refused with the reason). Annotations that do not resolve are skipped.
    """
    found: set[type] = set()
    seen: set[Any] = set()
    for schema in schemas:
        _walk(schema, found, seen)
    return frozenset(found)


def _walk(tp: Any, found: set[type], seen: set[Any]) -> None:
    try:
        if tp in seen:
            return
        seen.add(tp)
    except TypeError:  # unhashable metadata, e.g. a list of argument types
        pass
    if isinstance(tp, (list, tuple)):  # Callable[[A, B], C] arguments
        for item in tp:
            _walk(item, found, seen)
        return
    origin = get_origin(tp)
    if origin is not None:
        args = get_args(tp)
        if origin in _WRAPPERS:
            if args:
                _walk(args[0], found, seen)
            return
        if origin is typing.Literal:
            for value in args:
                if isinstance(value, Enum):
                    _walk(type(value), found, seen)
            return
        if isinstance(origin, type) and origin is not types.UnionType:
            _walk(origin, found, seen)
        for arg in args:
            _walk(arg, found, seen)
        return
    if isinstance(tp, type):
        _walk_class(tp, found, seen)


def _walk_class(cls: type, found: set[type], seen: set[Any]) -> None:
    kind = kind_of(cls)
    if kind is not None and allowable_problem(cls) is None:
        found.add(cls)
    if kind == ENUM:
        return
    if kind == PYDANTIC:
        fields = getattr(cls, "__pydantic_fields__", {})
        for field in fields.values():
            _walk(field.annotation, found, seen)
        return
    if kind is not None or _is_typeddict(cls) or dataclasses.is_dataclass(cls):
        for hint in _hints(cls):
            _walk(hint, found, seen)


def _is_typeddict(cls: type) -> bool:
    # Structural: typing's and typing_extensions' TypedDicts are different classes.
    return issubclass(cls, dict) and hasattr(cls, "__required_keys__")


def _hints(cls: type) -> list[Any]:
    try:
        return list(get_type_hints(cls, include_extras=True).values())
    except Exception:  # noqa: BLE001 - some forward reference does not resolve
        pass
    # Resolve annotation by annotation, skipping the ones that do not.
    hints: list[Any] = []
    for klass in reversed(cls.__mro__):
        for name, annotation in inspect.get_annotations(klass).items():
            probe = type("_Probe", (), {"__annotations__": {name: annotation}})
            probe.__module__ = klass.__module__
            # An annotation that does not resolve has nothing to collect.
            with contextlib.suppress(Exception):
                hints.extend(get_type_hints(probe, include_extras=True).values())
    return hints
