"""State schemas (TypedDict, dataclass, pydantic) → channels, readers and writers."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Annotated, Any, NotRequired, Required, get_args, get_origin, get_type_hints

from pydantic import BaseModel

from graphruntime.channels import BaseChannel, BinaryOperatorAggregate, DeltaChannel, LastValue
from graphruntime.errors import GraphValidationError


def schema_channels(schema: Any) -> dict[str, BaseChannel]:
    """One channel per state key: a reducer channel for ``Annotated[T, fn]``, else LastValue."""
    if not hasattr(schema, "__annotations__") and not _is_pydantic(schema):
        raise GraphValidationError(
            f"Unsupported state schema {schema!r}: use a TypedDict, a dataclass or a "
            "pydantic model."
        )
    hints = get_type_hints(schema, include_extras=True)
    return {
        name: _channel_for(name, hint)
        for name, hint in hints.items()
        if not name.startswith("__") and not _is_classvar(hint)
    }


def _is_classvar(hint: Any) -> bool:
    from typing import ClassVar

    return get_origin(hint) is ClassVar


def _channel_for(name: str, hint: Any) -> BaseChannel:
    while get_origin(hint) in (NotRequired, Required):
        hint = get_args(hint)[0]
    if get_origin(hint) is Annotated:
        base, *extras = get_args(hint)
        for extra in reversed(extras):
            if isinstance(extra, DeltaChannel):
                # the value type comes from the annotation: Annotated[dict, DeltaChannel(f)]
                channel = extra.with_type(base)
                channel.key = name
                return channel
            if isinstance(extra, BaseChannel):
                extra.key = name
                return extra
            if isinstance(extra, type) and issubclass(extra, BaseChannel):
                return extra(base, key=name)
        # the reducer is the last annotation, if callable: a binary function
        last = extras[-1]
        if callable(last):
            if _arity(last) != 2:
                raise GraphValidationError(
                    f"Invalid reducer signature. Expected (a, b) -> c. Got {_signature(last)}"
                )
            return BinaryOperatorAggregate(base, last, key=name)
        return LastValue(base, key=name)
    return LastValue(hint, key=name)


def _signature(fn: Callable[..., Any]) -> str:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return repr(fn)


def _arity(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2  # builtins such as operator.add have no signature on some versions
    return sum(
        1
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    )


def _is_pydantic(schema: Any) -> bool:
    return isinstance(schema, type) and issubclass(schema, BaseModel)


def make_mapper(schema: Any) -> Callable[[dict[str, Any]], Any] | None:
    """Nodes typed with a pydantic/dataclass state receive an instance, not a dict."""
    if _is_pydantic(schema) or (isinstance(schema, type) and dataclasses.is_dataclass(schema)):
        return lambda values: schema(**values)
    return None


def first_param_schema(fn: Callable[..., Any]) -> Any | None:
    """The state type a node declares for its first parameter, if it is a schema class."""
    target = fn
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
    if isinstance(hint, type) and (
        _is_pydantic(hint) or dataclasses.is_dataclass(hint) or _is_typeddict(hint)
    ):
        return hint
    return None


def _is_typeddict(t: type) -> bool:
    return (
        isinstance(t, type)
        and issubclass(t, dict)
        and hasattr(t, "__annotations__")
        and hasattr(t, "__total__")
    )
