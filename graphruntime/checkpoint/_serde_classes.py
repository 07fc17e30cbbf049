"""The typed serde's allowlist: which classes it may write and instantiate, by name.

A class is written as ``"module:qualname"`` and read back only through
:class:`ClassRegistry`: a map from class object to name and from name to class,
filled from the serializer's configuration, never from stored data. The rules are
described in :mod:`graphruntime.checkpoint.serde`.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys
import uuid
import weakref
from collections.abc import Iterable
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from enum import Enum
from typing import Any

from graphruntime.errors import SerializationError

__all__ = (
    "DATACLASS",
    "ENUM",
    "KIND_NAMES",
    "LANGCHAIN_MESSAGE_CLASSES",
    "NAMEDTUPLE",
    "PYDANTIC",
    "ClassRegistry",
    "Refusal",
    "allowable_problem",
    "kind_of",
    "parse_allowed_classes",
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

# LangChain's message classes (pydantic models), allowed by default: the
# ``graphruntime[messages]`` extra stores them. Their content blocks and tool
# calls are TypedDicts, i.e. plain dicts. Imported on demand, only from this list.
LANGCHAIN_MESSAGE_CLASSES = frozenset(
    f"langchain_core.messages.{module}:{name}{suffix}"
    for module, name in (
        ("ai", "AIMessage"),
        ("human", "HumanMessage"),
        ("system", "SystemMessage"),
        ("tool", "ToolMessage"),
        ("function", "FunctionMessage"),
        ("chat", "ChatMessage"),
    )
    for suffix in ("", "Chunk")
) | {"langchain_core.messages.modifier:RemoveMessage"}

# graphruntime's own value types that are plain NamedTuples (Send, Interrupt,
# Command and Overwrite have tags of their own).
_BUILTIN_CLASSES = ("graphruntime.types:PregelTask", "graphruntime.types:StateSnapshot")


class Refusal(Exception):
    """A value the encoder cannot write; ``path`` grows (innermost first) as it unwinds."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str] = []


# --------------------------------------------------------------------------
# What a class is, and whether its instances survive a round trip
# --------------------------------------------------------------------------


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
    "dataclasses, NamedTuples, Send, Interrupt, Command and Overwrite"
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


# --------------------------------------------------------------------------
# Classes this process learned by dumping them (plain JsonSerializer())
# --------------------------------------------------------------------------

# Weak: dumping a value never keeps its class alive (tests define classes in
# functions by the thousand). Two live classes with one name: the later wins.
_learned: weakref.WeakValueDictionary[str, type] = weakref.WeakValueDictionary()
_learned_entries: weakref.WeakKeyDictionary[type, tuple[str, str]] = weakref.WeakKeyDictionary()
_learned_kinds: dict[str, str] = {}  # name -> kind of the class _learned holds


def _lookup(module_name: str, qualname: str) -> type | None:
    """The class ``qualname`` defined in the imported module, through namespaces only.

    Reads ``vars()`` of the module and of enclosing classes: no ``getattr``, so
    no module ``__getattr__``, descriptor or property runs.
    """
    module = sys.modules.get(module_name)
    if module is None or "<locals>" in qualname:
        return None
    obj: Any = module
    for part in qualname.split("."):
        if not (obj is module or isinstance(obj, type)):
            return None
        obj = vars(obj).get(part)
    return obj if isinstance(obj, type) else None


def _remedy(name: str) -> str:
    module, _, qualname = name.partition(":")
    return (
        f"add it to the serializer's allowlist (JsonSerializer(allowed_classes=[{qualname}]) "
        f"or allowed_modules=[{module!r}]; on workers GRAPHRUNTIME_SERDE_ALLOW={name}), "
        "or use it in the graph's state schema"
    )


def _not_allowed(cls: type, name: str, *, resolvable: bool) -> str:
    what = f"class {name}"
    if cls.__module__ == "__main__":
        return (
            f"{what} is defined in __main__ (the script being run), so no other process "
            "can load it: define it in an importable module and add it to the allowlist "
            f"(JsonSerializer(allowed_classes=[{cls.__qualname__}]); on workers "
            "GRAPHRUNTIME_SERDE_ALLOW=module:qualname), or use it in the graph's state schema"
        )
    if "<locals>" in cls.__qualname__:
        return (
            f"{what} is defined inside a function, so other processes cannot find it by "
            "name: define it at module level and add it to the allowlist, or pass the "
            "class itself in JsonSerializer(allowed_classes=[...]) in every process"
        )
    if "[" in cls.__qualname__:
        return (
            f"{what} is a parametrized generic class, which no module holds by that name: "
            "pass the class itself in JsonSerializer(allowed_classes=[...]) in every process"
        )
    if not resolvable:
        return (
            f"{what} is not the class its module holds under that name (redefined or "
            f"replaced after import), so it would load as another class: {_remedy(name)}"
        )
    return f"{what} is not in this serializer's allowlist: {_remedy(name)}"


# --------------------------------------------------------------------------
# The registry
# --------------------------------------------------------------------------

Entry = tuple[type, str]  # (class, kind)


class ClassRegistry:
    """Class <-> ``"module:qualname"`` for one serializer.

    ``names`` maps each admitted class to ``(name, kind)``: the encoder reads it
    directly. ``learn``: admit any storable class on dump (in-process use).
    ``portable``: behave as a fresh process would, refusing ``__main__`` classes
    even when declared.
    """

    __slots__ = ("_by_name", "_declared", "_modules", "learn", "names", "portable")

    def __init__(
        self,
        classes: Iterable[type],
        modules: Iterable[str],
        *,
        learn: bool,
        portable: bool = False,
    ) -> None:
        self.learn = learn
        self.portable = portable
        self._modules = tuple(modules)
        self._by_name: dict[str, Entry] = {}
        self.names: dict[type, tuple[str, str]] = {}
        self._declared: list[type] = []
        for name in _BUILTIN_CLASSES:
            module, _, qualname = name.partition(":")
            builtin = _lookup(module, qualname)
            if builtin is not None:
                self._add(builtin, name)
        for cls in classes:
            self.declare(cls)

    def fresh(self) -> ClassRegistry:
        """This configuration as a fresh process has it: nothing learned, strict, portable.

        Declared ``__main__`` classes are left out: another process's ``__main__``
        is another script.
        """
        declared = [c for c in self._declared if c.__module__ != "__main__"]
        return ClassRegistry(declared, self._modules, learn=False, portable=True)

    def declare(self, cls: type) -> None:
        """Allow ``cls`` explicitly; raises if it cannot round-trip or its name is taken."""
        if not isinstance(cls, type):
            raise SerializationError(
                f"allowed_classes takes classes, got {cls!r}: pass the class object, "
                "or parse 'module:qualname' names with parse_allowed_classes()"
            )
        problem = allowable_problem(cls)
        if problem is not None:
            raise SerializationError(f"Cannot allow {class_name(cls)}: {problem}")
        name = class_name(cls)
        taken = self._by_name.get(name)
        if taken is not None and taken[0] is not cls:
            raise SerializationError(
                f"Cannot allow {name}: another allowed class has that name, so stored "
                "values could not tell them apart. Rename one of them."
            )
        if taken is None:
            self._declared.append(cls)
            self._add(cls, name)

    def _add(self, cls: type, name: str) -> tuple[str, str]:
        kind = kind_of(cls)
        assert kind is not None
        self._by_name[name] = (cls, kind)
        self.names[cls] = entry = (name, kind)
        return entry

    def _module_allowed(self, module: str) -> bool:
        return any(module == m or module.startswith(m + ".") for m in self._modules)

    # -- dumping ------------------------------------------------------------

    def admit(self, cls: type) -> tuple[str, str]:
        """``(name, kind)`` for writing an instance of ``cls`` not in :attr:`names`.

        Raises :class:`Refusal` with the reason if this serializer could not load
        the instance back.
        """
        if self.learn:
            learned = _learned_entries.get(cls)
            if learned is not None and learned[0] not in self._by_name:
                return learned
        problem = allowable_problem(cls)
        if problem is not None:
            raise Refusal(problem)
        name = class_name(cls)
        if self.portable and cls.__module__ == "__main__":
            raise Refusal(_not_allowed(cls, name, resolvable=True))
        taken = self._by_name.get(name)
        if taken is not None:  # another class with the name of an allowed one
            raise Refusal(
                f"class {name} has the name of another allowed class, so it would "
                "load as that class: rename one of them"
            )
        resolvable = _lookup(cls.__module__, cls.__qualname__) is cls
        if resolvable and (
            name in LANGCHAIN_MESSAGE_CLASSES or self._module_allowed(cls.__module__)
        ):
            return self._add(cls, name)
        if self.learn:
            kind = kind_of(cls)
            assert kind is not None
            _learned[name] = cls
            _learned_kinds[name] = kind
            _learned_entries[cls] = entry = (name, kind)
            return entry
        raise Refusal(_not_allowed(cls, name, resolvable=resolvable))

    # -- loading ------------------------------------------------------------

    def resolve(self, name: str, kind: str) -> type:
        """The class stored data names ``name``, if this serializer allows it."""
        entry = self._by_name.get(name)
        if entry is None:
            entry = self._resolve_other(name)
        if entry[1] != kind:
            raise SerializationError(
                f"Refusing to load class {name!r} as a {KIND_NAMES.get(kind, kind)}: "
                f"it is a {KIND_NAMES[entry[1]]} (the stored data is corrupt or forged)"
            )
        return entry[0]

    def _resolve_other(self, name: str) -> Entry:
        if self.learn:
            cls = _learned.get(name)
            if cls is not None:
                return cls, _learned_kinds[name]
        entry = None
        if not (self.portable and name.startswith("__main__:")):
            entry = self._resolve_configured(name)
        if entry is None:
            raise SerializationError(self._refusal(name))
        return entry

    def _resolve_configured(self, name: str) -> Entry | None:
        module_name, sep, qualname = name.partition(":")
        if not sep:
            return None
        if name in LANGCHAIN_MESSAGE_CLASSES:
            self._import(module_name, "install graphruntime[messages] (langchain-core)")
        elif self._module_allowed(module_name):
            self._import(module_name, "check the allowed_modules entry")
        else:
            return None
        cls = _lookup(module_name, qualname)
        if cls is None or class_name(cls) != name or allowable_problem(cls) is not None:
            return None
        kind = self._add(cls, name)[1]
        return cls, kind

    @staticmethod
    def _import(module_name: str, hint: str) -> None:
        if module_name in sys.modules:
            return
        try:
            importlib.import_module(module_name)
        except ImportError as exc:
            raise SerializationError(
                f"Cannot load a class of module {module_name!r}: {exc}; {hint}"
            ) from exc

    def _refusal(self, name: str) -> str:
        module, _, qualname = name.partition(":")
        head = f"Refusing to load class {name!r}: stored data never chooses a class, and "
        if "<locals>" in qualname:
            return head + (
                "this one was defined inside a function, so only the process that saved "
                "it can load it: define it at module level and add it to the allowlist "
                f"({_remedy(name)})"
            )
        if module == "__main__" and self.portable:
            return head + (
                "it was defined in the writer's __main__, which another process cannot "
                "import: define it in an importable module and add it to the allowlist"
            )
        return head + f"it is not in this serializer's allowlist: {_remedy(name)}"


def parse_allowed_classes(spec: str) -> tuple[type, ...]:
    """Classes named by a comma-separated ``module:qualname`` list (``GRAPHRUNTIME_SERDE_ALLOW``).

    Imports each module (this is configuration, not stored data) and checks that
    each name is a class whose instances round-trip. Raises
    :class:`~graphruntime.errors.SerializationError` on a bad entry.
    """
    classes: list[type] = []
    for raw in spec.split(","):
        entry = raw.strip()
        if not entry:
            continue
        module_name, sep, qualname = entry.partition(":")
        if not sep or not module_name or not qualname or "<locals>" in qualname:
            raise SerializationError(
                f"Bad serde allowlist entry {entry!r}: write module:qualname of a class "
                "defined at module level, e.g. myapp.models:Order"
            )
        try:
            importlib.import_module(module_name)
        except ImportError as exc:
            raise SerializationError(
                f"Bad serde allowlist entry {entry!r}: cannot import {module_name!r}: {exc}"
            ) from exc
        cls = _lookup(module_name, qualname)
        if cls is None:
            raise SerializationError(
                f"Bad serde allowlist entry {entry!r}: module {module_name!r} has no class "
                f"{qualname!r}"
            )
        problem = allowable_problem(cls)
        if problem is not None:
            raise SerializationError(f"Bad serde allowlist entry {entry!r}: {problem}")
        classes.append(cls)
    return tuple(classes)
