"""Encoding for the typed serde: value -> JSON-compatible tree (format in serde.py).

Plain JSON passes through without copying; everything else becomes a tagged
object. A value that could not be read back raises :class:`Refusal`, whose path
each container extends on the way out, so the error names where the value is.
"""

from __future__ import annotations

import base64
import dataclasses
import math
import uuid
from collections.abc import Callable
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from graphruntime.checkpoint._serde_classes import STR_STAND_INS, ClassRegistry
from graphruntime.checkpoint._serde_kinds import DATACLASS, ENUM, NAMEDTUPLE, PYDANTIC, Refusal
from graphruntime.checkpoint._snapshot import DeltaSnapshot
from graphruntime.types import Command, Interrupt, Overwrite, Send

__all__ = ("MAX_DEPTH", "TAG", "Encoder", "format_path", "tag_non_finite")

TAG = "__gr__"

MAX_DEPTH = 100
"""Most levels of nesting a value may have; every non-scalar value counts as one.

Kept well inside Python's default recursion limit (the encoder uses up to four
frames per level), so a value is refused with a clear error, never a RecursionError.
"""

# Floats count as plain: non-finite ones make the JSON encoder raise, and only
# then does tag_non_finite walk the tree (see JsonSerializer.dumps_typed).
_SCALARS = frozenset({str, int, float, bool, type(None)})
_STR = frozenset({str})
_MISSING = object()


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def format_path(path: list[str]) -> str:
    """``value['doc'].meta[2]`` from segments collected innermost first."""
    parts = path[::-1]
    if len(parts) > 12:
        parts = [*parts[:8], f"...({len(parts) - 11} more)...", *parts[-3:]]
    return "value" + "".join(parts)


def _too_deep() -> Refusal:
    return Refusal(
        f"it is nested more than {MAX_DEPTH} levels deep (or contains itself): "
        "store a flatter structure"
    )


class Encoder:
    """Encodes values for one serializer, whose registry admits their classes."""

    __slots__ = ("_admit", "_names")

    def __init__(self, registry: ClassRegistry) -> None:
        self._names = registry.names
        self._admit = registry.admit

    def encode(self, obj: Any, depth: int) -> Any:
        """The tree for ``obj`` (``obj`` itself if plain JSON); raises :class:`Refusal`.

        ``depth``: how many containers enclose ``obj`` (0 for a whole value).
        """
        t = type(obj)
        if t in _SCALARS:
            return obj
        if depth >= MAX_DEPTH:
            raise _too_deep()
        if t is dict:
            return self._dict(obj, depth + 1)
        if t is list:
            return self._list(obj, depth + 1)
        return self._other(obj, t, depth + 1)

    def _list(self, items: list[Any], depth: int) -> list[Any]:
        # Hot path: decide "all plain scalars" with C-level set operations.
        if _SCALARS.issuperset(map(type, items)):
            return items
        # Copy on first change: the caller gets ``items`` back if nothing changed.
        out: list[Any] | None = None
        encode = self.encode
        i = 0
        try:
            for i, v in enumerate(items):
                t = type(v)
                if t in _SCALARS:
                    continue
                # Inline for the common list of dicts: one call less per item.
                e = (
                    self._dict(v, depth + 1)
                    if t is dict and depth < MAX_DEPTH
                    else encode(v, depth)
                )
                if e is not v:
                    if out is None:
                        out = list(items)
                    out[i] = e
        except Refusal as exc:
            exc.path.append(f"[{i}]")
            raise
        return items if out is None else out

    def _dict(self, d: dict[Any, Any], depth: int, attrs: bool = False) -> Any:
        if TAG in d or not _STR.issuperset(map(type, d)):
            return self._dict_items(d, depth)
        if _SCALARS.issuperset(map(type, d.values())):
            return d
        out: dict[str, Any] | None = None
        encode = self.encode
        k = ""
        try:
            for k, v in d.items():
                t = type(v)
                if t in _SCALARS:
                    continue
                # Inline for nested dicts (versions, metadata): one call less each.
                e = (
                    self._dict(v, depth + 1)
                    if t is dict and depth < MAX_DEPTH
                    else encode(v, depth)
                )
                if e is not v:
                    if out is None:
                        out = dict(d)
                    out[k] = e
        except Refusal as exc:
            exc.path.append(f".{k}" if attrs else f"[{k!r}]")
            raise
        return d if out is None else out

    def _dict_items(self, d: dict[Any, Any], depth: int) -> dict[str, Any]:
        # Non-str keys, or a key that would read as our tag: a list of pairs.
        items = []
        for k, v in d.items():
            try:
                ek = self.encode(k, depth)
            except Refusal as exc:
                exc.path.append(f"<key {_short(k)}>")
                raise
            try:
                items.append([ek, self.encode(v, depth)])
            except Refusal as exc:
                exc.path.append(f"[{_short(k)}]")
                raise
        return {TAG: "dict", "items": items}

    def _at(self, value: Any, depth: int, segment: str) -> Any:
        try:
            return self.encode(value, depth)
        except Refusal as exc:
            exc.path.append(segment)
            raise

    def _other(self, obj: Any, t: type, depth: int) -> Any:
        builtin = _BUILTINS.get(t)
        if builtin is not None:
            return builtin(self, obj, depth)
        entry = self._names.get(t)
        if entry is None:
            if isinstance(obj, BaseException):
                # As LangGraph: a task error read back from a checkpoint is its repr.
                return repr(obj)
            if isinstance(obj, str) and f"{t.__module__}:{t.__qualname__}" in STR_STAND_INS:
                return str(obj)
            entry = self._admit(t)
        name, kind = entry
        if kind == PYDANTIC:
            return self._pydantic(obj, t, name, depth)
        if kind == DATACLASS:
            return self._dataclass(obj, t, name, depth)
        if kind == ENUM:
            return {TAG: "enum", "cls": name, "v": self._at(obj.value, depth, ".value")}
        assert kind == NAMEDTUPLE
        return {TAG: "namedtuple", "cls": name, "v": self._list(list(obj), depth)}

    def _pydantic(self, obj: Any, t: type, name: str, depth: int) -> dict[str, Any]:
        # Field values from getattr, encoded recursively, so nested models and
        # datetimes keep their types (model_dump would flatten them to dicts).
        values: dict[str, Any] = {}
        for field in t.__pydantic_fields__:  # type: ignore[attr-defined]
            value = getattr(obj, field, _MISSING)
            if value is not _MISSING:
                values[field] = value
        extra = getattr(obj, "__pydantic_extra__", None)
        if extra:
            values.update(extra)
        out = {
            TAG: "pydantic",
            "cls": name,
            "v": self._dict(values, depth, attrs=True),
            "set": sorted(obj.model_fields_set),
        }
        private = getattr(obj, "__pydantic_private__", None)
        if private:
            out["p"] = self._dict(dict(private), depth, attrs=True)
        return out

    def _dataclass(self, obj: Any, t: type, name: str, depth: int) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for field in dataclasses.fields(obj):
            value = getattr(obj, field.name, _MISSING)
            if value is not _MISSING:
                values[field.name] = value
        return {TAG: "dataclass", "cls": name, "v": self._dict(values, depth, attrs=True)}

    # -- built-in kinds ------------------------------------------------------

    def _seq(self, kind: str, obj: Any, depth: int) -> dict[str, Any]:
        try:
            return {TAG: kind, "v": self._list(list(obj), depth)}
        except Refusal as exc:
            if kind != "tuple":
                exc.path[-1] = f" (an element of a {kind})"
            raise

    def _send(self, obj: Send, depth: int) -> dict[str, Any]:
        try:  # inline: fan-outs send thousands
            arg = self.encode(obj.arg, depth)
        except Refusal as exc:
            exc.path.append(".arg")
            raise
        if obj.timeout is None:
            return {TAG: "send", "node": obj.node, "arg": arg}
        t = obj.timeout  # coerced: seconds as floats, or None
        limits = [t.run_timeout, t.idle_timeout, t.refresh_on]
        return {TAG: "send", "node": obj.node, "arg": arg, "timeout": limits}

    def _interrupt(self, obj: Interrupt, depth: int) -> dict[str, Any]:
        out = {
            TAG: "interrupt",
            "value": self._at(obj.value, depth, ".value"),
            "id": obj.id,
            "schema": self._at(obj.response_schema, depth, ".response_schema"),
        }
        if obj.deadline is not None:
            out["deadline"] = self._at(obj.deadline, depth, ".deadline")
            out["default"] = self._at(obj.default, depth, ".default")
        return out

    def _command(self, obj: Command[Any], depth: int) -> dict[str, Any]:
        return {
            TAG: "command",
            "graph": obj.graph,
            "update": self._at(obj.update, depth, ".update"),
            "resume": self._at(obj.resume, depth, ".resume"),
            "goto": self._at(obj.goto, depth, ".goto"),
        }

    def _overwrite(self, obj: Overwrite, depth: int) -> dict[str, Any]:
        return {TAG: "overwrite", "v": self._at(obj.value, depth, ".value")}

    def _delta_snapshot(self, obj: DeltaSnapshot, depth: int) -> dict[str, Any]:
        return {TAG: "delta", "v": self._at(obj.value, depth, ".value")}


def _enc_datetime(obj: datetime) -> dict[str, Any]:
    return _enc_clock("datetime", obj)


def _enc_time(obj: time) -> dict[str, Any]:
    return _enc_clock("time", obj)


def _enc_clock(kind: str, obj: datetime | time) -> dict[str, Any]:
    tz = obj.tzinfo
    out: dict[str, Any]
    if tz is None:
        out = {TAG: kind, "v": obj.isoformat()}
    elif type(tz) is ZoneInfo and tz.key is not None:
        # Keep the zone, not just today's offset, so arithmetic stays DST-aware.
        out = {TAG: kind, "v": obj.replace(tzinfo=None).isoformat(), "tz": tz.key}
    elif type(tz) is timezone:
        out = {TAG: kind, "v": obj.isoformat()}
        name = tz.tzname(None)
        if name != timezone(tz.utcoffset(None)).tzname(None):
            out["tzname"] = name  # timezone(offset, name): isoformat drops the name
    else:
        raise Refusal(
            f"a {kind} whose tzinfo is a {type(tz).__module__}.{type(tz).__qualname__} "
            "would come back with a fixed offset: use zoneinfo.ZoneInfo(key) or "
            "datetime.timezone"
        )
    if obj.fold:
        out["fold"] = 1
    return out


def _b64(obj: bytes | bytearray) -> str:
    return base64.b64encode(obj).decode("ascii")


def _leaf(encode: Callable[[Any], Any]) -> Callable[[Encoder, Any, int], Any]:
    return lambda _encoder, obj, _depth: encode(obj)


_BUILTINS: dict[type, Callable[[Encoder, Any, int], Any]] = {
    tuple: lambda e, o, d: e._seq("tuple", o, d),
    set: lambda e, o, d: e._seq("set", o, d),
    frozenset: lambda e, o, d: e._seq("frozenset", o, d),
    bytes: _leaf(lambda o: {TAG: "bytes", "v": _b64(o)}),
    bytearray: _leaf(lambda o: {TAG: "bytearray", "v": _b64(o)}),
    datetime: _leaf(_enc_datetime),
    date: _leaf(lambda o: {TAG: "date", "v": o.isoformat()}),
    time: _leaf(_enc_time),
    timedelta: _leaf(lambda o: {TAG: "timedelta", "v": [o.days, o.seconds, o.microseconds]}),
    uuid.UUID: _leaf(lambda o: {TAG: "uuid", "v": o.hex}),
    Decimal: _leaf(lambda o: {TAG: "decimal", "v": str(o)}),
    Send: Encoder._send,
    Interrupt: Encoder._interrupt,
    Command: Encoder._command,
    Overwrite: Encoder._overwrite,
    DeltaSnapshot: Encoder._delta_snapshot,
}


def tag_non_finite(tree: Any) -> Any:
    """Tag nan/inf floats in an encoded (pure JSON) tree, copying what changes."""
    t = type(tree)
    if t is float:
        return tree if math.isfinite(tree) else {TAG: "float", "v": repr(tree)}
    if t is list:
        new = [tag_non_finite(v) for v in tree]
        return tree if all(a is b for a, b in zip(new, tree, strict=True)) else new
    if t is dict:
        new_d = {k: tag_non_finite(v) for k, v in tree.items()}
        return tree if all(new_d[k] is v for k, v in tree.items()) else new_d
    return tree
