"""A state key with a reducer: ``Annotated[list, operator.add]``."""

from __future__ import annotations

import collections.abc
from collections.abc import Callable, Sequence
from typing import Annotated, Any, NotRequired, Required, Self, get_args, get_origin

from graphruntime._internal._typing import MISSING
from graphruntime.channels.base import BaseChannel
from graphruntime.errors import (
    EmptyChannelError,
    ErrorCode,
    InvalidUpdateError,
    create_error_message,
)
from graphruntime.types import Overwrite

_ABSTRACT_TO_CONCRETE: dict[Any, type] = {
    collections.abc.Sequence: list,
    collections.abc.MutableSequence: list,
    collections.abc.Set: set,
    collections.abc.MutableSet: set,
    collections.abc.Mapping: dict,
    collections.abc.MutableMapping: dict,
}


def _strip_wrappers(typ: Any) -> Any:
    """``NotRequired[Annotated[list, op]]`` → ``list``: the type whose ``()`` starts the value."""
    while get_origin(typ) in (Annotated, NotRequired, Required):
        typ = get_args(typ)[0]
    return typ


def _initial_value(typ: Any) -> Any:
    typ = _strip_wrappers(typ)
    typ = get_origin(typ) or typ
    typ = _ABSTRACT_TO_CONCRETE.get(typ, typ)
    try:
        return typ()
    except Exception:  # noqa: BLE001 - a type without a no-arg constructor starts empty
        return MISSING


def _overwrite_value(value: Any) -> tuple[bool, Any]:
    if isinstance(value, Overwrite):
        return True, value.value
    if isinstance(value, dict):
        if set(value) == {"__overwrite__"}:
            return True, value["__overwrite__"]
        if value.get("type") == "__overwrite__" and set(value) == {"type", "value"}:
            return True, value["value"]  # an Overwrite that went through JSON
    return False, None


class BinaryOperatorAggregate(BaseChannel):
    """Folds each write into the value with ``operator``; starts from ``typ()`` if it can."""

    __slots__ = ("value", "operator")

    def __init__(self, typ: Any, operator: Callable[[Any, Any], Any], key: str = "") -> None:
        super().__init__(typ, key)
        self.operator = operator
        self.value: Any = _initial_value(typ)

    def from_checkpoint(self, checkpoint: Any) -> Self:
        new = self.__class__.__new__(self.__class__)
        new.typ, new.key, new.operator = self.typ, self.key, self.operator
        new.value = _initial_value(self.typ) if checkpoint is MISSING else checkpoint
        return new

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        if self.value is MISSING:
            self.value = values[0]
            values = values[1:]
        seen_overwrite = False
        for value in values:
            is_overwrite, overwrite = _overwrite_value(value)
            if is_overwrite:
                if seen_overwrite:
                    raise InvalidUpdateError(
                        create_error_message(
                            message="Can receive only one Overwrite value per super-step.",
                            error_code=ErrorCode.INVALID_CONCURRENT_GRAPH_UPDATE,
                        )
                    )
                self.value = overwrite
                seen_overwrite = True
            elif not seen_overwrite:
                self.value = self.operator(self.value, value)
        return True

    def get(self) -> Any:
        if self.value is MISSING:
            raise EmptyChannelError()
        return self.value

    def is_available(self) -> bool:
        return self.value is not MISSING

    def checkpoint(self) -> Any:
        return self.value
