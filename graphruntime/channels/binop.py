"""A state key with a reducer: ``Annotated[list, operator.add]``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Self

from graphruntime._internal._typing import MISSING
from graphruntime.channels._reduce import initial_value, overwrite_value
from graphruntime.channels.base import BaseChannel
from graphruntime.checkpoint.serde.types import DeltaSnapshot
from graphruntime.errors import (
    EmptyChannelError,
    ErrorCode,
    InvalidUpdateError,
    create_error_message,
)


class BinaryOperatorAggregate(BaseChannel):
    """Folds each write into the value with ``operator``; starts from ``typ()`` if it can."""

    __slots__ = ("value", "operator")

    def __init__(self, typ: Any, operator: Callable[[Any, Any], Any], key: str = "") -> None:
        super().__init__(typ, key)
        self.operator = operator
        self.value: Any = initial_value(typ)

    def from_checkpoint(self, checkpoint: Any) -> Self:
        new = self.__class__.__new__(self.__class__)
        new.typ, new.key, new.operator = self.typ, self.key, self.operator
        if isinstance(checkpoint, DeltaSnapshot):
            checkpoint = checkpoint.value  # stored while the key was a DeltaChannel
        new.value = initial_value(self.typ) if checkpoint is MISSING else checkpoint
        return new

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        if self.value is MISSING:
            self.value = values[0]
            values = values[1:]
        seen_overwrite = False
        for value in values:
            is_overwrite, overwrite = overwrite_value(value)
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
