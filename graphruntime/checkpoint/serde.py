"""Typed JSON serialization of checkpoint values (JSON only; nothing that executes code on load).

Wire format: ``dumps_typed`` returns ``(type, data)``. ``"bytes"`` and
``"bytearray"`` carry a top-level binary value raw; everything else is
``"json"``: compact UTF-8 JSON in which plain JSON values (``None``, bool, int,
finite float, str, list, dict with str keys) stand for themselves and every
other value is a tagged object ``{"__gr__": "<kind>", ...}``, e.g.::

    ("a", 1)              -> {"__gr__":"tuple","v":["a",1]}
    {1: "x"}              -> {"__gr__":"dict","items":[[1,"x"]]}
    {"__gr__": 0}         -> {"__gr__":"dict","items":[["__gr__",0]]}   (escaped)
    Point(x=1) (a model)  -> {"__gr__":"pydantic","cls":"app.models:Point","v":{"x":1},"set":["x"]}

Classes are named ``"module:qualname"``. Loading never imports a module just
because stored data names it: see :class:`JsonSerializer`.
"""

from __future__ import annotations

import base64
import dataclasses
import importlib
import json
import math
import sys
import uuid
import weakref
from collections.abc import Callable, Iterable
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from enum import Enum
from typing import Any, Protocol, runtime_checkable
from zoneinfo import ZoneInfo

from graphruntime.errors import CheckpointError
from graphruntime.types import Command, Interrupt, Overwrite, Send

__all__ = ("JsonSerializer", "SerializerProtocol")

TAG = "__gr__"

_SUPPORTED = (
    "None, bool, int, float, str, bytes, bytearray, list, tuple, set, frozenset, dict, "
    "datetime, date, time, timedelta, UUID, Decimal, Enum members, pydantic v2 models, "
    "dataclasses, NamedTuples, Send, Interrupt, Command and Overwrite "
    "(exceptions are stored as their repr() string)"
)


@runtime_checkable
class SerializerProtocol(Protocol):
    """Turns a value into ``(type, bytes)`` and back; what every saver stores."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]: ...

    def loads_typed(self, data: tuple[str, bytes]) -> Any: ...


# --------------------------------------------------------------------------
# Encoding: value -> JSON-compatible tree
# --------------------------------------------------------------------------

# Classes seen while dumping, by name. Lets a process load values of classes
# it cannot import by name (defined inside a function, e.g. in a test).
# Weak, so dumping a value never keeps its class alive.
_seen_classes: weakref.WeakValueDictionary[str, type] = weakref.WeakValueDictionary()
_class_names: weakref.WeakKeyDictionary[type, str] = weakref.WeakKeyDictionary()


def _class_name(cls: type) -> str:
    name = _class_names.get(cls)
    if name is None:
        name = f"{cls.__module__}:{cls.__qualname__}"
        _class_names[cls] = name
        _seen_classes[name] = cls
    return name


def _pydantic_base() -> type | None:
    # Only look pydantic up if something imported it: no model instance can
    # exist otherwise, and importing it here would slow down every import.
    module = sys.modules.get("pydantic")
    base = getattr(module, "BaseModel", None)
    return base if isinstance(base, type) else None


def _is_namedtuple_class(cls: type) -> bool:
    return issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)


def _enc(obj: Any) -> Any:
    """Encode ``obj``; returns ``obj`` itself when it is already plain JSON."""
    t = type(obj)
    if t in _SCALARS:
        return obj
    if t is dict:
        return _enc_dict(obj)
    if t is list:
        return _enc_list(obj)
    return _enc_other(obj, t)


# Floats count as plain: non-finite ones make the JSON encoder raise, and
# only then does _tag_non_finite walk the tree (see JsonSerializer.dumps_typed).
_SCALARS = frozenset({str, int, float, bool, type(None)})
_STR = frozenset({str})


def _enc_list(items: list[Any]) -> list[Any]:
    # Hot path: decide "all plain scalars" with C-level set operations.
    if _SCALARS.issuperset(map(type, items)):
        return items
    # Copy on first change: the caller gets ``items`` back if nothing changed.
    out: list[Any] | None = None
    for i, v in enumerate(items):
        if type(v) in _SCALARS:
            continue
        e = _enc(v)
        if e is not v:
            if out is None:
                out = list(items)
            out[i] = e
    return items if out is None else out


def _enc_dict(d: dict[Any, Any]) -> Any:
    if TAG in d or not _STR.issuperset(map(type, d)):
        return _enc_dict_items(d)
    if _SCALARS.issuperset(map(type, d.values())):
        return d
    out: dict[str, Any] | None = None
    for k, v in d.items():
        if type(v) in _SCALARS:
            continue
        e = _enc(v)
        if e is not v:
            if out is None:
                out = dict(d)
            out[k] = e
    return d if out is None else out


def _tag_non_finite(tree: Any) -> Any:
    """Tag nan/inf floats in an encoded (pure JSON) tree, copying what changes."""
    t = type(tree)
    if t is float:
        return tree if math.isfinite(tree) else {TAG: "float", "v": repr(tree)}
    if t is list:
        new = [_tag_non_finite(v) for v in tree]
        return tree if all(a is b for a, b in zip(new, tree, strict=True)) else new
    if t is dict:
        new_d = {k: _tag_non_finite(v) for k, v in tree.items()}
        return tree if all(new_d[k] is v for k, v in tree.items()) else new_d
    return tree


def _enc_dict_items(d: dict[Any, Any]) -> dict[str, Any]:
    # Non-str keys, or a key that would read as our tag: a list of pairs.
    return {TAG: "dict", "items": [[_enc(k), _enc(v)] for k, v in d.items()]}


def _enc_seq(kind: str) -> Callable[[Any], dict[str, Any]]:
    def encode(obj: Iterable[Any]) -> dict[str, Any]:
        return {TAG: kind, "v": [_enc(v) for v in obj]}

    return encode


def _enc_datetime(obj: datetime) -> dict[str, Any]:
    tz = obj.tzinfo
    out: dict[str, Any]
    if isinstance(tz, ZoneInfo):
        # Keep the zone, not just today's offset, so arithmetic stays DST-aware.
        out = {TAG: "datetime", "v": obj.replace(tzinfo=None).isoformat(), "tz": tz.key}
    else:
        out = {TAG: "datetime", "v": obj.isoformat()}
    if obj.fold:
        out["fold"] = 1
    return out


def _enc_time(obj: time) -> dict[str, Any]:
    tz = obj.tzinfo
    out: dict[str, Any]
    if isinstance(tz, ZoneInfo):
        out = {TAG: "time", "v": obj.replace(tzinfo=None).isoformat(), "tz": tz.key}
    else:
        out = {TAG: "time", "v": obj.isoformat()}
    if obj.fold:
        out["fold"] = 1
    return out


def _b64(obj: bytes | bytearray) -> str:
    return base64.b64encode(obj).decode("ascii")


_ENCODERS: dict[type, Callable[[Any], Any]] = {
    tuple: _enc_seq("tuple"),
    set: _enc_seq("set"),
    frozenset: _enc_seq("frozenset"),
    bytes: lambda o: {TAG: "bytes", "v": _b64(o)},
    bytearray: lambda o: {TAG: "bytearray", "v": _b64(o)},
    datetime: _enc_datetime,
    date: lambda o: {TAG: "date", "v": o.isoformat()},
    time: _enc_time,
    timedelta: lambda o: {TAG: "timedelta", "v": [o.days, o.seconds, o.microseconds]},
    uuid.UUID: lambda o: {TAG: "uuid", "v": o.hex},
    Decimal: lambda o: {TAG: "decimal", "v": str(o)},
    Send: lambda o: {TAG: "send", "node": o.node, "arg": _enc(o.arg)},
    Interrupt: lambda o: {
        TAG: "interrupt",
        "value": _enc(o.value),
        "id": o.id,
        "schema": _enc(o.response_schema),
    },
    Command: lambda o: {
        TAG: "command",
        "graph": o.graph,
        "update": _enc(o.update),
        "resume": _enc(o.resume),
        "goto": _enc(o.goto),
    },
    Overwrite: lambda o: {TAG: "overwrite", "v": _enc(o.value)},
}


def _enc_other(obj: Any, t: type) -> Any:
    encoder = _ENCODERS.get(t)
    if encoder is not None:
        return encoder(obj)
    if isinstance(obj, Enum):
        return {TAG: "enum", "cls": _class_name(t), "v": _enc(obj.value)}
    if isinstance(obj, BaseException):
        # As LangGraph: a task error read back from a checkpoint is its repr.
        return repr(obj)
    pydantic_base = _pydantic_base()
    if pydantic_base is not None and isinstance(obj, pydantic_base):
        return _enc_pydantic(obj, t)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name, _MISSING)
            if value is not _MISSING:
                fields[f.name] = value
        return {TAG: "dataclass", "cls": _class_name(t), "v": _enc_dict(fields)}
    if _is_namedtuple_class(t):
        return {TAG: "namedtuple", "cls": _class_name(t), "v": [_enc(v) for v in obj]}
    if isinstance(obj, uuid.UUID):
        return {TAG: "uuid", "v": obj.hex}
    raise CheckpointError(
        f"Cannot serialize a value of type {t.__module__}.{t.__qualname__}: "
        f"checkpoint values must be built from {_SUPPORTED}."
    )


_MISSING = object()


def _enc_pydantic(obj: Any, t: type) -> dict[str, Any]:
    # Field values from getattr, encoded recursively, so nested models and
    # datetimes keep their types (model_dump would flatten them to dicts).
    values: dict[str, Any] = {}
    for name in t.__pydantic_fields__:  # type: ignore[attr-defined]
        value = getattr(obj, name, _MISSING)
        if value is not _MISSING:
            values[name] = value
    extra = getattr(obj, "__pydantic_extra__", None)
    if extra:
        values.update(extra)
    return {
        TAG: "pydantic",
        "cls": _class_name(t),
        "v": _enc_dict(values),
        "set": sorted(obj.model_fields_set),
    }


# --------------------------------------------------------------------------
# The serializer
# --------------------------------------------------------------------------

_json_encoder = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
)
_json_encoder_ascii = json.JSONEncoder(
    ensure_ascii=True, separators=(",", ":"), allow_nan=False, check_circular=False
)


class JsonSerializer:
    """JSON-based :class:`SerializerProtocol`; round-trips type and value exactly.

    Security: loading only instantiates classes that are pydantic models,
    dataclasses, Enums or NamedTuples, and only resolves a class whose module
    is already imported, or whose module is an ``allowed_modules`` entry or lies
    below one (``"myapp"`` allows ``myapp`` and ``myapp.models``). Stored data
    can therefore never make the loader import arbitrary code. Classes this
    process has dumped itself are always resolvable, even if defined locally.

    Args:
        allowed_modules: module names (package prefixes) the loader may import
            to resolve classes that are not imported yet.
    """

    __slots__ = ("_allowed", "_decoder", "_resolved")

    def __init__(self, *, allowed_modules: Iterable[str] = ()) -> None:
        self._allowed: tuple[str, ...] = tuple(m.rstrip(".") for m in allowed_modules)
        self._resolved: dict[tuple[str, str], type] = {}
        self._decoder = json.JSONDecoder(object_hook=self._revive)

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        t = type(obj)
        if t is bytes:
            return "bytes", obj
        if t is bytearray:
            return "bytearray", bytes(obj)
        try:
            tree = _enc(obj)
        except RecursionError as exc:
            raise CheckpointError(
                "Cannot serialize a value nested too deeply (or containing itself)"
            ) from exc
        try:
            text = _json_encoder.encode(tree)
        except ValueError:
            # nan/inf (rare): tag them and retry; anything else re-raises below.
            tree = _tag_non_finite(tree)
            try:
                text = _json_encoder.encode(tree)
            except ValueError as exc:
                raise CheckpointError(f"Cannot serialize value: {exc}") from exc
        try:
            return "json", text.encode("utf-8")
        except UnicodeEncodeError:
            # Lone surrogates cannot be UTF-8 encoded; escaped JSON keeps them.
            return "json", _json_encoder_ascii.encode(tree).encode("ascii")

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, payload = data
        if kind == "json":
            try:
                return self._decoder.decode(bytes(payload).decode("utf-8"))
            except (ValueError, KeyError, TypeError, ArithmeticError) as exc:
                raise CheckpointError(f"Corrupt serialized checkpoint value: {exc}") from exc
        if kind == "bytes":
            return bytes(payload)
        if kind == "bytearray":
            return bytearray(payload)
        if kind == "null":
            return None
        raise CheckpointError(
            f"Unknown serialized type {kind!r}: JsonSerializer reads 'json', 'bytes', "
            "'bytearray' and 'null'"
        )

    # -- decoding ----------------------------------------------------------

    def _revive(self, d: dict[str, Any]) -> Any:
        # json calls this bottom-up, so every nested value is already revived.
        if TAG not in d:
            return d
        kind = d[TAG]
        reviver = _REVIVERS.get(kind)
        if reviver is not None:
            return reviver(d)
        if kind == "enum":
            return self._resolve(d["cls"], kind)(d["v"])
        if kind == "pydantic":
            cls = self._resolve(d["cls"], kind)
            return cls.model_construct(  # type: ignore[attr-defined]
                _fields_set=set(d["set"]), **d["v"]
            )
        if kind == "dataclass":
            return _revive_dataclass(self._resolve(d["cls"], kind), d["v"])
        if kind == "namedtuple":
            return self._resolve(d["cls"], kind)(*d["v"])
        raise CheckpointError(f"Unknown tag {kind!r} in serialized checkpoint value")

    def _resolve(self, name: str, kind: str) -> type:
        key = (name, kind)
        cls = self._resolved.get(key)
        if cls is not None:
            return cls
        cls = _seen_classes.get(name)
        if cls is None:
            cls = self._import(name)
        if not _has_kind(cls, kind):
            raise CheckpointError(
                f"Refusing to load class {name!r} from a checkpoint: it is not a "
                f"{_KIND_NAMES[kind]}. Only pydantic models, dataclasses, Enums and "
                "NamedTuples are instantiated."
            )
        if _seen_classes.get(name) is not cls:
            # Only cache classes found by import; seen ones are already a lookup
            # away, and caching them would keep local classes alive.
            self._resolved[key] = cls
        return cls

    def _import(self, name: str) -> type:
        module_name, _, qualname = name.partition(":")
        module = sys.modules.get(module_name)
        if module is None:
            if not any(module_name == p or module_name.startswith(p + ".") for p in self._allowed):
                raise CheckpointError(
                    f"Refusing to load class {name!r} from a checkpoint: module "
                    f"{module_name!r} is not imported. Import it before loading, or "
                    f"allow it with JsonSerializer(allowed_modules=[{module_name!r}])."
                )
            try:
                module = importlib.import_module(module_name)
            except ImportError as exc:
                raise CheckpointError(f"Cannot load class {name!r}: {exc}") from exc
        obj: Any = module
        for part in qualname.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                hint = (
                    " (it was defined inside a function, so only the process that saved "
                    "it can load it; define it at module level)"
                    if "<locals>" in qualname
                    else ""
                )
                raise CheckpointError(f"Cannot load class {name!r}: not found{hint}")
        if not isinstance(obj, type):
            raise CheckpointError(f"Refusing to load {name!r} from a checkpoint: not a class")
        return obj


_KIND_NAMES = {
    "enum": "Enum subclass",
    "pydantic": "pydantic BaseModel subclass",
    "dataclass": "dataclass",
    "namedtuple": "NamedTuple class",
}


def _has_kind(cls: type, kind: str) -> bool:
    if kind == "enum":
        return issubclass(cls, Enum)
    if kind == "pydantic":
        base = _pydantic_base()
        return base is not None and issubclass(cls, base)
    if kind == "dataclass":
        return dataclasses.is_dataclass(cls)
    if kind == "namedtuple":
        return _is_namedtuple_class(cls)
    return False


_dataclass_fields: weakref.WeakKeyDictionary[type, tuple[list[str], list[str]]] = (
    weakref.WeakKeyDictionary()
)


def _revive_dataclass(cls: type, values: dict[str, Any]) -> Any:
    split = _dataclass_fields.get(cls)
    if split is None:
        fields = dataclasses.fields(cls)
        split = ([f.name for f in fields if f.init], [f.name for f in fields if not f.init])
        _dataclass_fields[cls] = split
    init_names, other_names = split
    obj = cls(**{n: values[n] for n in init_names if n in values})
    for n in other_names:
        if n in values:
            # object.__setattr__ also works for frozen dataclasses.
            object.__setattr__(obj, n, values[n])
    return obj


def _revive_datetime(d: dict[str, Any]) -> datetime:
    value = datetime.fromisoformat(d["v"])
    if "tz" in d:
        value = value.replace(tzinfo=ZoneInfo(d["tz"]))
    return value.replace(fold=1) if d.get("fold") else value


def _revive_time(d: dict[str, Any]) -> time:
    value = time.fromisoformat(d["v"])
    if "tz" in d:
        value = value.replace(tzinfo=ZoneInfo(d["tz"]))
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
    "send": lambda d: Send(d["node"], d["arg"]),
    "interrupt": lambda d: Interrupt(d["value"], d["id"], response_schema=d["schema"]),
    "command": lambda d: Command(
        graph=d["graph"], update=d["update"], resume=d["resume"], goto=d["goto"]
    ),
    "overwrite": lambda d: Overwrite(d["v"]),
}
