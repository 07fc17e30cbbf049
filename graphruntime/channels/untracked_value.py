"""A value that is never checkpointed (a live resource, a cache for this run only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

from graphruntime._internal._typing import MISSING
from graphruntime.channels.base import BaseChannel
from graphruntime.errors import EmptyChannelError, InvalidUpdateError

__all__ = ("UntrackedValue",)


class UntrackedValue(BaseChannel):
    """Keeps the last value written, in memory only: checkpoints never hold it.

    A run that resumes from a checkpoint (or another process) starts without it.
    """

    __slots__ = ("value", "guard")

    def __init__(self, typ: Any = Any, guard: bool = True, key: str = "") -> None:
        super().__init__(typ, key)
        self.guard = guard
        self.value: Any = MISSING

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UntrackedValue) and other.guard == self.guard

    __hash__ = BaseChannel.__hash__

    def copy(self) -> Self:
        new = self.__class__(self.typ, self.guard, self.key)
        new.value = self.value
        return new

    def checkpoint(self) -> Any:
        return MISSING

    def from_checkpoint(self, checkpoint: Any) -> Self:
        return self.__class__(self.typ, self.guard, self.key)

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        if len(values) != 1 and self.guard:
            raise InvalidUpdateError(
                f"At key '{self.key}': UntrackedValue(guard=True) can receive only one value "
                "per step. Use guard=False if you want to store any one of multiple values."
            )
        self.value = values[-1]
        return True

    def get(self) -> Any:
        if self.value is MISSING:
            raise EmptyChannelError()
        return self.value

    def is_available(self) -> bool:
        return self.value is not MISSING
