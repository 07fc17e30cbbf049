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

**What is written is read.** ``dumps_typed`` refuses, with a
:class:`~graphruntime.errors.SerializationError` naming the place in the value
(``value['doc'].meta[2]``), its type and what to do, every value the same
serializer could not load again: unsupported types (and subclasses of the
built-in ones, which would come back as the base type), C struct sequences
such as ``os.stat_result``, NamedTuple-likes whose constructor does not take
their fields (``platform.uname()``), dataclasses whose ``__init__`` needs more
than their fields, classes outside the allowlist (below), and values nested
more than :data:`MAX_DEPTH` (100) levels deep or containing themselves.
Loading refuses JSON nested deeper than a value of that depth encodes to, so a
forged stored value cannot exhaust the stack. One documented exception, as in
LangGraph: an exception object is stored as its ``repr()`` string.

**Which classes stored data may instantiate** (enums, pydantic models,
dataclasses, NamedTuples). Stored data names a class ``"module:qualname"``, and
the name is looked up only in the serializer's own registry: never imported or
``getattr``-walked because stored data says so. The registry holds

1. the built-in kinds above and graphruntime's own value types (``Send``,
   ``Interrupt``, ``Command``, ``Overwrite``, ``PregelTask``, ``StateSnapshot``);
2. LangChain's message classes (``AIMessage``, ``HumanMessage``,
   ``SystemMessage``, ``ToolMessage``, ``FunctionMessage``, ``ChatMessage``, their
   ``Chunk`` variants and ``RemoveMessage``), imported on demand from that fixed
   list when langchain-core is installed (``graphruntime[messages]``);
3. the classes the configuration declares: ``allowed_classes`` (class objects,
   e.g. from :func:`schema_classes` of a graph's state schema or
   :func:`parse_allowed_classes` of a ``GRAPHRUNTIME_SERDE_ALLOW`` setting), added
   later with :meth:`JsonSerializer.allow`; and ``allowed_modules``, package
   prefixes whose module-level classes are allowed (``"myapp"`` allows
   ``myapp.models:Order``; the module is imported, the class read from its
   namespace and checked to be that very class);
4. unless ``strict=True``: every class **this process** has dumped. That is what
   a plain ``JsonSerializer()`` relies on: a single process storing its own
   dataclasses and models (also ones defined in ``__main__`` or in functions)
   gets them back, as LangGraph users expect; a class it never wrote is refused.
   (Two live classes with one name, e.g. made by two calls of a function: values
   load as the one dumped last.)

Data read by another process (the workers, an app restarted on a durable saver)
needs its classes declared in that process. ``strict=True`` serializers also
refuse at write time what a fresh process with the same configuration could not
load. :func:`check_round_trip` runs that check on a value before a client
submits it (it also refuses classes from ``__main__``). Subclasses of an allowed
class are not allowed by it; list them too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from graphruntime.checkpoint._serde_classes import ClassRegistry
from graphruntime.checkpoint._serde_decode import check_depth, make_object_hook
from graphruntime.checkpoint._serde_encode import (
    MAX_DEPTH,
    Encoder,
    format_path,
    tag_non_finite,
)
from graphruntime.checkpoint._serde_kinds import Refusal
from graphruntime.errors import CheckpointError, SerializationError

__all__ = ("MAX_DEPTH", "JsonSerializer", "SerializerProtocol", "check_round_trip")


@runtime_checkable
class SerializerProtocol(Protocol):
    """Turns a value into ``(type, bytes)`` and back; what every saver stores."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]: ...

    def loads_typed(self, data: tuple[str, bytes]) -> Any: ...


_json_encoder = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
)
_json_encoder_ascii = json.JSONEncoder(
    ensure_ascii=True, separators=(",", ":"), allow_nan=False, check_circular=False
)


def _chunks_of(encoder: json.JSONEncoder) -> Callable[[Any, int], Sequence[str]]:
    """What ``encoder.encode`` joins, for an encoder without ``check_circular`` or
    ``indent``: its C encoder, built once.

    ``JSONEncoder.encode`` builds a new C encoder on every call (two Python frames and
    a call with nine arguments); without ``check_circular`` that encoder keeps no
    state, so one serves every call and gives the same text.
    """
    make: Any = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator: the Python encoder
        return lambda tree, _level: (encoder.encode(tree),)
    basestring = (
        json.encoder.encode_basestring_ascii
        if encoder.ensure_ascii
        else json.encoder.encode_basestring
    )
    chunks: Callable[[Any, int], Sequence[str]] = make(
        None,
        encoder.default,
        basestring,
        None,
        encoder.key_separator,
        encoder.item_separator,
        encoder.sort_keys,
        encoder.skipkeys,
        encoder.allow_nan,
    )
    return chunks


_json_chunks = _chunks_of(_json_encoder)


class JsonSerializer:
    """JSON-based :class:`SerializerProtocol`; round-trips type and value exactly.

    See the module docstring for what it stores and which classes it loads.

    Args:
        allowed_classes: classes whose instances may be stored and loaded.
        allowed_modules: package prefixes whose module-level classes may be
            stored and loaded (the loader may import these modules).
        strict: only the classes above (and the built-in ones); without it,
            classes this process dumped load too, in this process.
    """

    __slots__ = ("_decode", "_encode", "_portable", "_registry")

    def __init__(
        self,
        *,
        allowed_classes: Iterable[type] = (),
        allowed_modules: Iterable[str] = (),
        strict: bool = False,
    ) -> None:
        if isinstance(allowed_classes, (str, type)):
            raise SerializationError(
                "allowed_classes takes a list of classes, e.g. [Order, Invoice]"
            )
        if isinstance(allowed_modules, str):
            raise SerializationError("allowed_modules takes a list of module names, e.g. ['myapp']")
        modules = []
        for module in allowed_modules:
            name = module.rstrip(".") if isinstance(module, str) else ""
            if not name or ":" in name:
                raise SerializationError(
                    f"Bad allowed_modules entry {module!r}: give a module or package name "
                    "such as 'myapp.models' (classes go in allowed_classes)"
                )
            modules.append(name)
        self._setup(ClassRegistry(allowed_classes, modules, learn=not strict))

    def _setup(self, registry: ClassRegistry) -> None:
        self._registry = registry
        self._portable: tuple[int, JsonSerializer, JsonSerializer] | None = None
        self._encode = Encoder(registry).encode
        self._decode = json.JSONDecoder(object_hook=make_object_hook(registry)).decode

    @property
    def strict(self) -> bool:
        """Whether only declared classes are stored and loaded (nothing learned)."""
        return not self._registry.learn

    def allow(self, *classes: type) -> None:
        """Allow more classes, e.g. ``serde.allow(*schema_classes(State))``.

        Raises :class:`~graphruntime.errors.SerializationError` for a class whose
        instances cannot round-trip, or whose name another allowed class has.
        """
        for cls in classes:
            self._registry.declare(cls)

    def fresh(self) -> JsonSerializer:
        """This configuration as a fresh process has it (see :func:`check_round_trip`)."""
        copy = JsonSerializer.__new__(JsonSerializer)
        copy._setup(self._registry.fresh())
        return copy

    def _portable_pair(self) -> tuple[JsonSerializer, JsonSerializer]:
        """Two :meth:`fresh` copies, one to dump and one to load, kept until a class is
        declared: a fresh copy only ever adds what any fresh process would (classes of
        its allowed modules), so reusing it checks the same and costs no set-up."""
        declared = self._registry.declarations
        cached = self._portable
        if cached is None or cached[0] != declared:
            cached = self._portable = (declared, self.fresh(), self.fresh())
        return cached[1], cached[2]

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        t = type(obj)
        if t is bytes:
            return "bytes", obj
        if t is bytearray:
            return "bytearray", bytes(obj)
        try:
            tree = self._encode(obj, 0)
        except Refusal as exc:
            raise SerializationError(
                f"Cannot serialize {format_path(exc.path)}: {exc.reason}"
            ) from None
        except RecursionError as exc:
            raise SerializationError(
                "Cannot serialize a value nested too deeply (or containing itself): "
                "store a flatter structure"
            ) from exc
        try:
            text = "".join(_json_chunks(tree, 0))
        except ValueError:
            # nan/inf (rare): tag them and retry; anything else re-raises below.
            tree = tag_non_finite(tree)
            try:
                text = _json_encoder.encode(tree)
            except ValueError as exc:
                raise SerializationError(f"Cannot serialize value: {exc}") from exc
        try:
            return "json", text.encode("utf-8")
        except UnicodeEncodeError:
            # Lone surrogates cannot be UTF-8 encoded; escaped JSON keeps them.
            return "json", _json_encoder_ascii.encode(tree).encode("ascii")

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, payload = data
        if kind == "json":
            payload = bytes(payload)
            check_depth(payload)
            try:
                return self._decode(payload.decode("utf-8"))
            except RecursionError as exc:
                raise SerializationError(
                    "Refusing to load a stored value nested too deeply for this call stack"
                ) from exc
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


def check_round_trip(value: Any, serde: SerializerProtocol) -> tuple[str, bytes]:
    """Raise unless a fresh process configured like ``serde`` could load ``value``;
    the dump it checked (what to store: the value need not be dumped again).

    For a client about to submit ``value`` to remote workers: it dumps with
    ``serde``'s declared configuration only (nothing this process learned by
    dumping, no class from ``__main__``) and loads the result in another fresh
    copy. Raises :class:`~graphruntime.errors.SerializationError` naming the
    offending place in the value and what to do. Another serializer type is
    checked with a plain dump and load.
    """
    if isinstance(serde, JsonSerializer):
        dumper, loader = serde._portable_pair()
        data = dumper.dumps_typed(value)
        loader.loads_typed(data)
        return data
    data = serde.dumps_typed(value)
    serde.loads_typed(data)
    return data
