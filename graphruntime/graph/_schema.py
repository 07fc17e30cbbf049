"""State schemas (TypedDict, dataclass, pydantic, or any other type) → channels.

A schema with annotated fields gets one channel per field. Any other type (``list``,
``dict``, ``Annotated[list, operator.add]``) is the whole state: one channel named
``__root__``, read and written as the bare value.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
import warnings
from collections.abc import Callable
from typing import (
    Annotated,
    Any,
    ClassVar,
    NotRequired,
    Required,
    get_args,
    get_origin,
    get_type_hints,
)

from pydantic import BaseModel

from graphruntime._internal._constants import ROOT
from graphruntime.channels import BaseChannel, BinaryOperatorAggregate, DeltaChannel, LastValue
from graphruntime.errors import GraphValidationError
from graphruntime.managed.base import ManagedValueSpec, is_managed_value

__all__ = (
    "ROOT",
    "first_param_schema",
    "make_mapper",
    "schema_fields",
    "warn_invalid_state_schema",
)

Fields = tuple[dict[str, BaseChannel], dict[str, ManagedValueSpec]]


def warn_invalid_state_schema(schema: Any) -> None:
    """A state schema is a type, or ``Annotated[type, reducer]``; warn about anything else."""
    if isinstance(schema, type) or typing.get_args(schema):
        return
    warnings.warn(
        f"Invalid state_schema: {schema}. Expected a type or Annotated[type, reducer]. "
        "Please provide a valid schema to ensure correct updates.",
        stacklevel=3,
    )


def schema_fields(schema: Any) -> Fields:
    """The channels and the managed values of a state schema."""
    if not hasattr(schema, "__annotations__") and not _is_pydantic(schema):
        channel = channel_for(ROOT, schema)
        if not isinstance(channel, BaseChannel):
            raise GraphValidationError(
                f"{schema} is a managed value: it cannot be a graph's whole state."
            )
        return {ROOT: channel}, {}
    try:
        hints = get_type_hints(schema, include_extras=True)
    except (NameError, TypeError) as exc:
        raise GraphValidationError(
            f"Cannot read the fields of state schema {schema!r}: {exc}"
        ) from exc
    channels: dict[str, BaseChannel] = {}
    managed: dict[str, ManagedValueSpec] = {}
    for name, hint in hints.items():
        # dunder annotations are the class machinery's (pydantic's), except a __root__
        # key: the schema's one root channel, as LangGraph reads it
        if (name.startswith("__") and name != ROOT) or get_origin(hint) is ClassVar:
            continue
        field = channel_for(name, hint)
        if isinstance(field, BaseChannel):
            channels[name] = field
        else:
            managed[name] = field
    return channels, managed


def channel_for(name: str, hint: Any) -> BaseChannel | ManagedValueSpec:
    """The channel of one state key, as LangGraph reads its annotation.

    ``Annotated[T, SomeChannel]`` or ``Annotated[T, SomeChannel(...)]`` (anywhere in the
    metadata) picks the channel; a callable as the last metadata item is a reducer
    ``(a, b) -> c``; a managed value class makes the key managed; else LastValue.
    """
    while get_origin(hint) in (NotRequired, Required):
        hint = get_args(hint)[0]
    if (managed := _managed(hint)) is not None:
        return managed
    if get_origin(hint) is not Annotated:
        return LastValue(hint, key=name)
    base, *extras = get_args(hint)
    for extra in extras:
        if isinstance(extra, DeltaChannel):
            # the value type comes from the annotation: Annotated[dict, DeltaChannel(f)]
            channel = extra.with_type(base)
            channel.key = name
            return channel
        if isinstance(extra, BaseChannel):
            extra.key = name
            return extra
        if inspect.isclass(extra) and issubclass(extra, BaseChannel):
            return extra(base, key=name)
    reducer = extras[-1]
    if callable(reducer):
        arity = positional_arity(reducer)
        if arity != 2:
            raise GraphValidationError(
                f"Invalid reducer signature. Expected (a, b) -> c. Got {_signature(reducer)}"
            )
        return BinaryOperatorAggregate(base, reducer, key=name)
    return LastValue(base, key=name)


def _managed(hint: Any) -> ManagedValueSpec | None:
    if get_origin(hint) is Annotated:
        last = get_args(hint)[-1]
        last = get_origin(last) or last
        if is_managed_value(last):
            return last
    args = get_args(hint) if get_origin(hint) is not None else ()
    if args and args[0] is not None:
        return _managed(args[0])
    return None


def positional_arity(fn: Callable[..., Any]) -> int:
    """How many positional parameters ``fn`` takes, defaults included (LangGraph's count)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2  # a builtin without a signature: taken as a binary operator
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _signature(fn: Callable[..., Any]) -> str:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return repr(fn)


def _is_pydantic(schema: Any) -> bool:
    return isinstance(schema, type) and issubclass(schema, BaseModel)


def make_mapper(schema: Any, keys: Any = None) -> Callable[[dict[str, Any]], Any] | None:
    """Nodes typed with a pydantic/dataclass state receive an instance, not a dict."""
    if keys == ROOT or keys == [ROOT]:
        return None
    if _is_pydantic(schema) or (isinstance(schema, type) and dataclasses.is_dataclass(schema)):
        return lambda values: schema(**values)
    return None


def first_param_schema(fn: Callable[..., Any]) -> Any | None:
    """The state type a callable declares for its first parameter, if it is a class with
    typed fields (TypedDict, dataclass, pydantic model, annotated class)."""
    target: Any = fn
    if not (inspect.isfunction(fn) or inspect.ismethod(fn)):
        call = getattr(fn, "__call__", None)  # noqa: B004 - want the bound method
        if call is None or not inspect.ismethod(call):
            return None
        target = call
    try:
        hints = get_type_hints(target)
        first = next(iter(inspect.signature(target).parameters))
    except (NameError, TypeError, StopIteration, ValueError):
        return None
    hint = hints.get(first)
    if not isinstance(hint, type):
        return None
    try:
        return hint if get_type_hints(hint) else None
    except (NameError, TypeError):
        return None
