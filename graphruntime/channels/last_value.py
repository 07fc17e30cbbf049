"""Channels that keep the last value written."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

from graphruntime._internal._typing import MISSING
from graphruntime.channels.base import BaseChannel
from graphruntime.errors import (
    EmptyChannelError,
    ErrorCode,
    InvalidUpdateError,
    create_error_message,
)


class LastValue(BaseChannel):
    """A state key without a reducer: at most one write per step."""

    __slots__ = ("value",)

    def __init__(self, typ: Any = Any, key: str = "") -> None:
        super().__init__(typ, key)
        self.value: Any = MISSING

    def from_checkpoint(self, checkpoint: Any) -> Self:
        cls = self.__class__
        if cls is not LastValue and cls is not AnyValue:  # a subclass may set more in __init__
            new = cls(self.typ, self.key)
            new.value = checkpoint
            return new
        # every run loads a graph's channels: skip the __init__ chain
        fast = cls.__new__(cls)
        fast.typ, fast.key, fast.value = self.typ, self.key, checkpoint
        return fast

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        if len(values) != 1:
            raise InvalidUpdateError(
                create_error_message(
                    message=f"At key '{self.key}': Can receive only one value per step. "
                    "Use an Annotated key to handle multiple values.",
                    error_code=ErrorCode.INVALID_CONCURRENT_GRAPH_UPDATE,
                )
            )
        self.value = values[-1]
        return True

    def get(self) -> Any:
        if self.value is MISSING:
            raise EmptyChannelError()
        return self.value

    def is_available(self) -> bool:
        return self.value is not MISSING

    def checkpoint(self) -> Any:
        return self.value


class AnyValue(LastValue):
    """Last value wins, several writes allowed; an empty step clears it."""

    __slots__ = ()

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            if self.value is MISSING:
                return False
            self.value = MISSING
            return True
        self.value = values[-1]
        return True


class LastValueAfterFinish(BaseChannel):
    """Like LastValue but only readable once the graph has finished (``defer=True``)."""

    __slots__ = ("value", "finished")

    def __init__(self, typ: Any = Any, key: str = "") -> None:
        super().__init__(typ, key)
        self.value: Any = MISSING
        self.finished = False

    def from_checkpoint(self, checkpoint: Any) -> Self:
        new = self.__class__(self.typ, self.key)
        if checkpoint is not MISSING:
            new.value, new.finished = checkpoint
        return new

    def checkpoint(self) -> Any:
        return MISSING if self.value is MISSING else (self.value, self.finished)

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        self.finished = False
        self.value = values[-1]
        return True

    def consume(self) -> bool:
        if self.finished:
            self.finished = False
            self.value = MISSING
            return True
        return False

    def finish(self) -> bool:
        if not self.finished and self.value is not MISSING:
            self.finished = True
            return True
        return False

    def get(self) -> Any:
        if self.value is MISSING or not self.finished:
            raise EmptyChannelError()
        return self.value

    def is_available(self) -> bool:
        return self.value is not MISSING and self.finished
