"""Decoding for the typed serde: JSON text -> value (format in serde.py)."""

from __future__ import annotations

import base64
import dataclasses
import re
import uuid
import weakref
from collections.abc import Callable
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from graphruntime.checkpoint._serde_classes import ClassRegistry
from graphruntime.checkpoint._serde_encode import MAX_DEPTH, TAG
from graphruntime.checkpoint._serde_kinds import DATACLASS, ENUM, NAMEDTUPLE, PYDANTIC
from graphruntime.checkpoint._snapshot import DeltaSnapshot
from graphruntime.errors import CheckpointError, SerializationError
from graphruntime.types import Command, Interrupt, Overwrite, Send, TimeoutPolicy

__all__ = ("MAX_JSON_DEPTH", "check_depth", "make_object_hook")

_Clock = TypeVar("_Clock", datetime, time)

MAX_JSON_DEPTH = 3 * MAX_DEPTH + 1
"""Deepest JSON nesting loaded: what a value of MAX_DEPTH levels encodes to at most.

A tagged value adds up to three JSON levels (``{"__gr__": "dict", "items": [[k, v]]}``)
and a tagged nan one more.
"""


def make_object_hook(registry: ClassRegistry) -> Callable[[dict[str, Any]], Any]:
    """The ``json`` object hook that revives tagged objects, classes via ``registry``."""
    resolve = registry.resolve

    def revive(d: dict[str, Any]) -> Any:
        # json calls this bottom-up, so every nested value is already revived.
        if TAG not in d:
            return d
        kind = d[TAG]
        reviver = _REVIVERS.get(kind)
        if reviver is not None:
            return reviver(d)
        if kind in _BUILDERS:
            name = d["cls"]
            cls = resolve(name, kind)
            try:
                return _BUILDERS[kind](cls, d)
            except (TypeError, ValueError, AttributeError) as exc:
                raise CheckpointError(
                    f"Cannot rebuild a {name} from stored data ({exc}): the class has "
                    "changed since the value was stored, or the data is corrupt"
                ) from exc
        raise CheckpointError(f"Unknown tag {kind!r} in serialized checkpoint value")

    return revive


# -- classes -----------------------------------------------------------------

_dataclass_plans: weakref.WeakKeyDictionary[type, tuple[bool, list[str], list[str]]] = (
    weakref.WeakKeyDictionary()
)


def _build_dataclass(cls: type, d: dict[str, Any]) -> Any:
    values: dict[str, Any] = d["v"]
    plan = _dataclass_plans.get(cls)
    if plan is None:
        fields = dataclasses.fields(cls)
        use_init = cls.__init__ is not object.__init__  # type: ignore[misc]
        plan = (
            use_init,
            [f.name for f in fields if f.init and use_init],
            [f.name for f in fields if not (f.init and use_init)],
        )
        _dataclass_plans[cls] = plan
    use_init, init_names, other_names = plan
    if use_init:
        obj = cls(**{n: values[n] for n in init_names if n in values})
    else:
        obj = object.__new__(cls)
    for n in other_names:
        if n in values:
            # object.__setattr__ also works for frozen dataclasses.
            object.__setattr__(obj, n, values[n])
    return obj


def _build_pydantic(cls: type, d: dict[str, Any]) -> Any:
    obj = cls.model_construct(_fields_set=set(d["set"]), **d["v"])  # type: ignore[attr-defined]
    private = d.get("p")
    if private:
        current = getattr(obj, "__pydantic_private__", None)
        if current is None:
            object.__setattr__(obj, "__pydantic_private__", dict(private))
        else:
            current.update(private)
    return obj


_BUILDERS: dict[str, Callable[[type, dict[str, Any]], Any]] = {
    PYDANTIC: _build_pydantic,
    DATACLASS: _build_dataclass,
    ENUM: lambda cls, d: cls(d["v"]),
    NAMEDTUPLE: lambda cls, d: cls(*d["v"]),
}


# -- built-in kinds ------------------------------------------------------------


def _revive_datetime(d: dict[str, Any]) -> datetime:
    return _revive_clock(datetime.fromisoformat(d["v"]), d)


def _revive_send(d: dict[str, Any]) -> Send:
    if "timeout" not in d:
        return Send(d["node"], d["arg"])
    run, idle, refresh_on = d["timeout"]
    policy = TimeoutPolicy(run_timeout=run, idle_timeout=idle, refresh_on=refresh_on)
    return Send(d["node"], d["arg"], timeout=policy)


def _revive_time(d: dict[str, Any]) -> time:
    return _revive_clock(time.fromisoformat(d["v"]), d)


def _revive_clock(value: _Clock, d: dict[str, Any]) -> _Clock:
    if "tz" in d:
        value = value.replace(tzinfo=ZoneInfo(d["tz"]))
    elif "tzname" in d:
        value = value.replace(tzinfo=timezone(value.utcoffset(), d["tzname"]))  # type: ignore[arg-type]
    return value.replace(fold=1) if d.get("fold") else value


_REVIVERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "tuple": lambda d: tuple(d["v"]),
    "set": lambda d: set(d["v"]),
    "frozenset": lambda d: frozenset(d["v"]),
    "dict": lambda d: dict(d["items"]),
    "float": lambda d: float(d["v"]),
    "bytes": lambda d: base64.b64decode(d["v"]),
    "bytearray": lambda d: bytearray(base64.b64decode(d["v"])),
    "datetime": _revive_datetime,
    "date": lambda d: date.fromisoformat(d["v"]),
    "time": _revive_time,
    "timedelta": lambda d: timedelta(*d["v"]),
    "uuid": lambda d: uuid.UUID(hex=d["v"]),
    "decimal": lambda d: Decimal(d["v"]),
    "send": _revive_send,
    "interrupt": lambda d: Interrupt(
        d["value"],
        d["id"],
        response_schema=d["schema"],
        deadline=d.get("deadline"),
        default=d.get("default"),
    ),
    "command": lambda d: Command(
        graph=d["graph"], update=d["update"], resume=d["resume"], goto=d["goto"]
    ),
    "overwrite": lambda d: Overwrite(d["v"]),
    "delta": lambda d: DeltaSnapshot(d["v"]),
}


# -- nesting bound -----------------------------------------------------------------

_KEEP = b'"[]{}'
_DROP_ALL_BUT_QUOTES_AND_BRACKETS = bytes(b for b in range(256) if b not in _KEEP)
_SQUARE = bytes.maketrans(b"{}", b"[]")
_STRING = re.compile(rb'"[^"]*"')


def check_depth(payload: bytes) -> None:
    """Refuse JSON nested deeper than :data:`MAX_JSON_DEPTH`, before parsing it.

    Works on bytes with C-level passes: drop escapes and everything but quotes
    and brackets, drop strings, then peel one level of ``[]``/``{}`` per pass.
    """
    if len(payload) <= 2 * MAX_JSON_DEPTH:
        return  # every level takes two bytes
    if b"\\" in payload:
        # Escapes pair up left to right: drop escaped backslashes, then escaped quotes.
        payload = payload.replace(b"\\\\", b"").replace(b'\\"', b"")
    s = payload.translate(None, _DROP_ALL_BUT_QUOTES_AND_BRACKETS)
    quotes = s.count(b'"')
    if quotes != 2 * s.count(b'""'):
        # Some string holds brackets. Removing adjacent quote pairs keeps every
        # bracket's in/out-of-string parity and leaves only those strings to match.
        s = _STRING.sub(b"", s.replace(b'""', b""))
    # Otherwise every string is bracket-free: its quotes are adjacent, drop them.
    s = s.translate(_SQUARE, b'"')
    if len(s) <= 2 * MAX_JSON_DEPTH:
        return  # too few brackets to nest that deep
    for _ in range(MAX_JSON_DEPTH + 1):
        if not s:
            return
        shorter = s.replace(b"[]", b"")  # the innermost pairs: one level
        if len(shorter) == len(s):
            return  # unbalanced: the JSON parser reports the corruption
        s = shorter
    raise SerializationError(
        f"Refusing to load a stored value nested deeper than {MAX_JSON_DEPTH} JSON "
        f"levels: no value of at most {MAX_DEPTH} levels (the serializer's limit) "
        "encodes that deep, so the stored data is corrupt or forged"
    )
