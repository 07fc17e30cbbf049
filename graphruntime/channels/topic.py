"""A list of values written in one step (the ``Send`` packet queue)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

from graphruntime._internal._typing import MISSING
from graphruntime.channels.base import BaseChannel
from graphruntime.errors import EmptyChannelError


class Topic(BaseChannel):
    """Collects every value written in a step; without ``accumulate`` each step replaces it."""

    __slots__ = ("values", "accumulate")

    def __init__(self, typ: Any = Any, accumulate: bool = False, key: str = "") -> None:
        super().__init__(typ, key)
        self.accumulate = accumulate
        self.values: list[Any] = []

    @property
    def ValueType(self) -> Any:
        return Sequence[self.typ]  # type: ignore[name-defined]

    @property
    def UpdateType(self) -> Any:
        return self.typ | list.__class_getitem__(self.typ)

    def from_checkpoint(self, checkpoint: Any) -> Self:
        cls = self.__class__
        if cls is Topic:  # every run loads it: skip the __init__ chain (a subclass may not)
            new = cls.__new__(cls)
            new.typ, new.key, new.accumulate, new.values = self.typ, self.key, self.accumulate, []
        else:
            new = cls(self.typ, self.accumulate, self.key)
        if checkpoint is not MISSING:
            new.values = list(checkpoint)
        return new

    def update(self, values: Sequence[Any]) -> bool:
        updated = False
        if not self.accumulate:
            updated = bool(self.values)
            self.values = []
        flat = [v for value in values for v in (value if isinstance(value, list) else [value])]
        if flat:
            self.values.extend(flat)
            updated = True
        return updated

    def get(self) -> Any:
        if not self.values:
            raise EmptyChannelError()
        return list(self.values)

    def is_available(self) -> bool:
        return bool(self.values)

    def checkpoint(self) -> Any:
        return list(self.values)
