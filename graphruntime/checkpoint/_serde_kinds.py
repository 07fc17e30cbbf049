"""What the typed serde can store of a class, and whether its instances round-trip."""

from __future__ import annotations

import dataclasses
import inspect
import sys
import uuid
import weakref
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from enum import Enum
from typing import Any

__all__ = (
    "DATACLASS",
    "ENUM",
    "KIND_NAMES",
    "NAMEDTUPLE",
    "PYDANTIC",
    "Refusal",
    "allowable_problem",
    "class_name",
    "kind_of",
    "unsupported_reason",
)

ENUM = "enum"
PYDANTIC = "pydantic"
DATACLASS = "dataclass"
NAMEDTUPLE = "namedtuple"
KIND_NAMES = {
    ENUM: "Enum",
    PYDANTIC: "pydantic model",
    DATACLASS: "dataclass",
    NAMEDTUPLE: "NamedTuple",
}


class Refusal(Exception):
    """A value the encoder cannot write; ``path`` grows (innermost first) as it unwinds."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str] = []


def pydantic_base() -> type | None:
    # Only look pydantic up if something imported it: no model instance can
    # exist otherwise, and importing it here would slow down every import.
    module = sys.modules.get("pydantic")
    base = getattr(module, "BaseModel", None)
    return base if isinstance(base, type) else None


def kind_of(cls: type) -> str | None:
    """How instances of ``cls`` are stored, or ``None`` if they cannot be."""
    if issubclass(cls, Enum):
        return ENUM
    base = pydantic_base()
    if base is not None and issubclass(cls, base):
        return PYDANTIC
    if dataclasses.is_dataclass(cls):
        return DATACLASS
    if issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple):
        return NAMEDTUPLE
    return None


def class_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


_SUPPORTED = (
    "None, bool, int, float, str, bytes, bytearray, list, tuple, set, frozenset, dict, "
    "datetime, date, time, timedelta, UUID, Decimal, Enum members, pydantic v2 models, "
    "dataclasses, NamedTuples, Send, Interrupt, Command, Overwrite and DeltaSnapshot"
)
_BUILTIN_BASES = (
    dict,
    list,
    tuple,
    set,
    frozenset,
    str,
    bytes,
    bytearray,
    int,
    float,
    datetime,  # before date, its base
    date,
    time,
    timedelta,
    uuid.UUID,
    Decimal,
)


def unsupported_reason(cls: type) -> str:
    """Why a value of ``cls`` (not a storable kind) cannot be written, and what to do."""
    what = f"a value of type {cls.__module__}.{cls.__qualname__}"
    if issubclass(cls, tuple) and hasattr(cls, "n_fields"):
        return (
            f"{what} is a C struct sequence (like os.stat_result or time.struct_time), "
            "which cannot be rebuilt from its fields: store tuple(value) or a dict of "
            "the fields you need"
        )
    for base in _BUILTIN_BASES:
        if issubclass(cls, base):
            return (
                f"{what} is a subclass of {base.__name__}, which would come back as a "
                f"plain {base.__name__}: store a {base.__name__}, or make it a dataclass "
                "or pydantic model"
            )
    return f"{what} cannot be stored: checkpoint values must be built from {_SUPPORTED}"


_problems: weakref.WeakKeyDictionary[type, str | None] = weakref.WeakKeyDictionary()


def allowable_problem(cls: type) -> str | None:
    """Why instances of ``cls`` cannot round-trip, or ``None`` if they can (cached)."""
    try:
        return _problems[cls]
    except KeyError:
        pass
    kind = kind_of(cls)
    problem = unsupported_reason(cls) if kind is None else _structural_problem(cls, kind)
    _problems[cls] = problem
    return problem


def _structural_problem(cls: type, kind: str) -> str | None:
    what = f"{class_name(cls)} (a {KIND_NAMES[kind]})"
    if kind == DATACLASS:
        return _dataclass_problem(cls, what)
    if kind == NAMEDTUPLE:
        return _namedtuple_problem(cls, what)
    return None


def _parameters(func: Any) -> list[inspect.Parameter] | None:
    try:
        return list(inspect.signature(func).parameters.values())[1:]
    except (TypeError, ValueError):
        return None


def _dataclass_problem(cls: type, what: str) -> str | None:
    # Loading calls cls(**init fields): every required __init__ parameter must
    # be such a field, and every init field a parameter.
    if cls.__init__ is object.__init__:  # type: ignore[misc]
        return None  # dataclass(init=False) without an __init__: rebuilt field by field
    params = _parameters(cls.__init__)  # type: ignore[misc]
    if params is None:
        return f"{what} has an __init__ without a signature, so it cannot be rebuilt"
    fields = {f.name for f in dataclasses.fields(cls) if f.init}
    names = {p.name for p in params}
    var_keyword = any(p.kind is p.VAR_KEYWORD for p in params)
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is p.empty and p.name not in fields:
            return (
                f"{what} cannot be rebuilt from its fields: __init__ requires "
                f"{p.name!r}, which is not a field (an InitVar or a custom __init__). "
                "Make it a field or give it a default"
            )
        if p.kind is p.POSITIONAL_ONLY and p.name in fields:
            return f"{what} takes field {p.name!r} positionally only, so it cannot be rebuilt"
    missing = sorted(fields - names) if not var_keyword else []
    if missing:
        return f"{what} cannot be rebuilt: its __init__ does not take the fields {missing}"
    return None


def _namedtuple_problem(cls: type, what: str) -> str | None:
    # Loading calls cls(*values): __new__ must take exactly one argument per field.
    fields: tuple[str, ...] = cls._fields  # type: ignore[attr-defined]
    params = _parameters(cls.__new__)
    if params is None:
        return f"{what} has a __new__ without a signature, so it cannot be rebuilt"
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if len(required) <= len(fields) <= len(positional):
        return None
    return (
        f"{what} has {len(fields)} fields {list(fields)} but its constructor takes "
        f"{[p.name for p in positional]}, so it cannot be rebuilt from its values: "
        "store tuple(value) or a dict of the fields you need"
    )
