"""``ToolNode(handle_tool_errors=...)``: which tool errors become error messages, and how."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import UnionType
from typing import TYPE_CHECKING, Any, Union, cast, get_args, get_origin, get_type_hints

from graphruntime.prebuilt._errors import PrebuiltInputError, ToolInvocationError
from graphruntime.prebuilt._injection import InjectedArgs

if TYPE_CHECKING:
    from pydantic import ValidationError
    from pydantic_core import ErrorDetails

ErrorHandling = bool | str | Callable[..., str] | type[Exception] | tuple[type[Exception], ...]
"""``True``/``False``, a fixed message, a function of the error, or the types to catch."""

TOOL_CALL_ERROR_TEMPLATE = "Error: {error}\n Please fix your mistakes."


def default_handle_tool_errors(e: Exception) -> str:
    """The default: bad arguments from the model become a message; other errors raise."""
    if isinstance(e, ToolInvocationError):
        return e.message
    raise e


def handled_types(flag: ErrorHandling) -> tuple[type[Exception], ...]:
    """The exception types ``flag`` turns into error messages (nothing for ``False``)."""
    if not flag:
        return ()
    if isinstance(flag, type) and issubclass(flag, Exception):
        return (flag,)
    if isinstance(flag, tuple):
        return flag
    if callable(flag) and not isinstance(flag, type):
        return _types_of_handler(flag)
    return (Exception,)


def _types_of_handler(handler: Callable[..., str]) -> tuple[type[Exception], ...]:
    """What a handler's first parameter is annotated with: ``(e: ValueError | KeyError)``."""
    params = list(inspect.signature(handler).parameters.values())
    if not params:
        return (Exception,)
    first = params[1] if params[0].name in ("self", "cls") and len(params) == 2 else params[0]
    hints = get_type_hints(handler)
    if first.name not in hints:
        return (Exception,)
    hint = hints[first.name]
    if get_origin(hint) in (Union, UnionType):
        members = get_args(hint)
        if all(isinstance(m, type) and issubclass(m, Exception) for m in members):
            return tuple(members)
        raise PrebuiltInputError(
            "All types in the error handler error annotation must be Exception types. For "
            "example, `def custom_handler(e: Union[ValueError, TypeError])`. "
            f"Got '{first.annotation}' instead."
        )
    if isinstance(hint, type) and issubclass(hint, Exception):
        return (hint,)
    raise PrebuiltInputError(
        "Arbitrary types are not supported in the error handler signature. Please annotate "
        "the error with either a specific Exception type or a union of Exception types. For "
        "example, `def custom_handler(e: ValueError)` or "
        f"`def custom_handler(e: Union[ValueError, TypeError])`. Got '{hint}' instead."
    )


def error_content(e: Exception, flag: ErrorHandling) -> str:
    """The content of the error ``ToolMessage`` for a handled error."""
    if isinstance(flag, (bool, tuple)) or (isinstance(flag, type) and issubclass(flag, Exception)):
        return TOOL_CALL_ERROR_TEMPLATE.format(error=repr(e))
    if isinstance(flag, str):
        return flag
    if callable(flag):
        return cast("Callable[..., str]", flag)(e)
    raise PrebuiltInputError(
        "Got unexpected type of `handle_tool_error`. Expected bool, str or callable. "
        f"Received: {flag}"
    )


def model_errors(error: ValidationError, injected: InjectedArgs | None) -> list[ErrorDetails]:
    """The validation errors of the arguments the model controls, without injected values.

    The model cannot fix the state, the store or the runtime, and should not read them
    back in an error message.
    """
    hidden: set[str] = set()
    if injected is not None:
        hidden.update(injected.state)
        hidden.update(name for name in (injected.store, injected.runtime) if name)
    kept: list[ErrorDetails] = []
    for details in error.errors():
        if not details["loc"] or details["loc"][0] in hidden:
            continue
        copy: dict[str, Any] = {**details}
        if isinstance(copy.get("input"), dict):
            copy["input"] = {k: v for k, v in copy["input"].items() if k not in hidden}
        kept.append(copy)  # type: ignore[arg-type]  # the same keys as ErrorDetails
    return kept
