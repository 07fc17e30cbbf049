"""A value that lives for exactly one step (``__start__``, ``branch:to:<node>``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

from graphruntime._internal._typing import MISSING
from graphruntime.channels.base import BaseChannel
from graphruntime.errors import EmptyChannelError, InvalidUpdateError


class EphemeralValue(BaseChannel):
    """Stores a write for one step; an empty update clears it (and counts as a change)."""

    __slots__ = ("value", "guard")

    def __init__(self, typ: Any = Any, guard: bool = True, key: str = "") -> None:
        super().__init__(typ, key)
        self.guard = guard
        self.value: Any = MISSING

    def from_checkpoint(self, checkpoint: Any) -> Self:
        cls = self.__class__
        if cls is not EphemeralValue:  # a subclass may set more in its __init__
            new = cls(self.typ, self.guard, self.key)
            new.value = checkpoint
            return new
        # every run loads a graph's channels: skip the __init__ chain
        fast = cls.__new__(cls)
        fast.typ, fast.key, fast.guard, fast.value = self.typ, self.key, self.guard, checkpoint
        return fast

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            if self.value is MISSING:
                return False
            self.value = MISSING
            return True
        if len(values) != 1 and self.guard:
            raise InvalidUpdateError(
                f"At key '{self.key}': EphemeralValue(guard=True) can receive only one "
                "value per step. Use guard=False if you want to store any one of multiple "
                "values."
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
