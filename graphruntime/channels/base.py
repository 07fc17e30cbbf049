"""The channel contract: how a state key merges the writes of one superstep."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Self

from graphruntime._internal._typing import MISSING
from graphruntime.errors import EmptyChannelError


class BaseChannel(ABC):
    """A state slot with update semantics.

    Channels are mutable during one superstep and restored from a checkpoint
    value with :meth:`from_checkpoint`, which returns a fresh instance, so a
    compiled graph's channel specs are never mutated.
    """

    __slots__ = ("typ", "key")

    def __init__(self, typ: Any, key: str = "") -> None:
        self.typ = typ
        self.key = key

    @abstractmethod
    def from_checkpoint(self, checkpoint: Any) -> Self:
        """A new channel of the same spec holding ``checkpoint`` (or empty if MISSING)."""

    @abstractmethod
    def update(self, values: Sequence[Any]) -> bool:
        """Apply one step's writes (in task-path order); True if the value changed."""

    @abstractmethod
    def get(self) -> Any:
        """The current value; raises EmptyChannelError when there is none."""

    def checkpoint(self) -> Any:
        """The value to store in a checkpoint, or MISSING when empty."""
        try:
            return self.get()
        except EmptyChannelError:
            return MISSING

    def is_available(self) -> bool:
        try:
            self.get()
        except EmptyChannelError:
            return False
        return True

    @property
    def ValueType(self) -> Any:
        """The type of the channel's value."""
        return self.typ

    @property
    def UpdateType(self) -> Any:
        """The type of one write to the channel."""
        return self.typ

    def copy(self) -> Self:
        return self.from_checkpoint(self.checkpoint())

    def consume(self) -> bool:
        """Called when a node triggered by this channel ran; True if that changed it."""
        return False

    def finish(self) -> bool:
        """Called when the graph would otherwise stop; True if that changed it."""
        return False
