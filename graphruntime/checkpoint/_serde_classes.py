"""The typed serde's allowlist: which classes it may write and instantiate, by name.

A class is written as ``"module:qualname"`` and read back only through
:class:`ClassRegistry`: a map from class object to name and from name to class,
filled from the serializer's configuration, never from stored data. The rules are
described in :mod:`graphruntime.checkpoint.serde`.
"""

from __future__ import annotations

import importlib
import sys
import weakref
from collections.abc import Iterable
from typing import Any

from graphruntime.checkpoint._serde_kinds import (
    KIND_NAMES,
    Refusal,
    allowable_problem,
    class_name,
    kind_of,
)
from graphruntime.errors import SerializationError

__all__ = ("LANGCHAIN_MESSAGE_CLASSES", "ClassRegistry", "parse_allowed_classes")

# LangChain's message classes (pydantic models), allowed by default: the
# ``graphruntime[messages]`` extra stores them. Their content blocks and tool
# calls are TypedDicts, i.e. plain dicts. Imported on demand, only from this list.
STR_STAND_INS = frozenset({"langchain_core.messages.base:TextAccessor"})
"""str subclasses that exist to be read as a str (LangChain's ``message.text``): stored as
the plain str, as LangGraph's serializer stores them. Any other str subclass is refused
(it would come back as a plain str without saying so)."""

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

    @property
    def declarations(self) -> int:
        """How many classes were allowed explicitly (it only grows)."""
        return len(self._declared)

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
