"""Barriers for ``add_edge([a, b], c)``: available once every named source wrote."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

from graphruntime._internal._typing import MISSING
from graphruntime.channels.base import BaseChannel
from graphruntime.errors import EmptyChannelError, InvalidUpdateError


class NamedBarrierValue(BaseChannel):
    """Records which names wrote; readable (as None) when all have; reset on consume."""

    __slots__ = ("names", "seen")

    def __init__(self, typ: Any, names: set[str], key: str = "") -> None:
        super().__init__(typ, key)
        self.names = set(names)
        self.seen: set[str] = set()

    def from_checkpoint(self, checkpoint: Any) -> Self:
        new = self.__class__(self.typ, self.names, self.key)
        if checkpoint is not MISSING:
            new.seen = set(checkpoint)
        return new

    def checkpoint(self) -> Any:
        return set(self.seen)

    def update(self, values: Sequence[Any]) -> bool:
        updated = False
        for value in values:
            if value not in self.names:
                raise InvalidUpdateError(f"At key '{self.key}': Value {value} not in {self.names}")
            if value not in self.seen:
                self.seen.add(value)
                updated = True
        return updated

    def get(self) -> Any:
        if self.seen != self.names:
            raise EmptyChannelError()
        return None

    def is_available(self) -> bool:
        return self.seen == self.names

    def consume(self) -> bool:
        if self.seen == self.names:
            self.seen = set()
            return True
        return False


class NamedBarrierValueAfterFinish(NamedBarrierValue):
    """A named barrier for ``defer=True`` targets: also waits for the graph to finish."""

    __slots__ = ("finished",)

    def __init__(self, typ: Any, names: set[str], key: str = "") -> None:
        super().__init__(typ, names, key)
        self.finished = False

    def from_checkpoint(self, checkpoint: Any) -> Self:
        new = self.__class__(self.typ, self.names, self.key)
        if checkpoint is not MISSING:
            seen, new.finished = checkpoint
            new.seen = set(seen)
        return new

    def checkpoint(self) -> Any:
        return (set(self.seen), self.finished)

    def get(self) -> Any:
        if not self.finished or self.seen != self.names:
            raise EmptyChannelError()
        return None

    def is_available(self) -> bool:
        return self.finished and self.seen == self.names

    def consume(self) -> bool:
        if self.finished and self.seen == self.names:
            self.finished = False
            self.seen = set()
            return True
        return False

    def finish(self) -> bool:
        if not self.finished and self.seen == self.names:
            self.finished = True
            return True
        return False
