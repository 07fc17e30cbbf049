"""A reducer channel that checkpoints its writes, not its value (LangGraph's beta ``DeltaChannel``).

A ``BinaryOperatorAggregate`` stores its whole value in every checkpoint that
changed it, so a thread whose state grows by a message per step stores O(n²)
bytes. A ``DeltaChannel`` stores nothing in most checkpoints: the writes that
produced each step are saved anyway (as pending writes), so the value at a
checkpoint is rebuilt from the nearest stored snapshot plus the writes saved
along the parent chain since (``BaseCheckpointSaver.get_delta_channel_history``).
The runtime stores a snapshot every ``snapshot_frequency`` updates, or after
``DELTA_MAX_SUPERSTEPS_SINCE_SNAPSHOT`` supersteps, to bound that walk.
"""

from __future__ import annotations

import copy as _copy
from collections.abc import Callable, Sequence
from typing import Any, Self

from graphruntime._internal._typing import MISSING
from graphruntime.channels._reduce import concrete_type, initial_value, overwrite_value
from graphruntime.channels.base import BaseChannel
from graphruntime.checkpoint.base import PendingWrite
from graphruntime.checkpoint.serde.types import DeltaSnapshot
from graphruntime.errors import (
    EmptyChannelError,
    ErrorCode,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidUpdateError,
    create_error_message,
)

__all__ = ("DeltaChannel",)

Reducer = Callable[[Any, Sequence[Any]], Any]


class DeltaChannel(BaseChannel):
    """A state key whose reducer folds a whole step's writes at once, stored as deltas.

    ``reducer(state, [write1, write2, ...]) -> new_state``. It must be
    deterministic and batching-invariant, because replay folds the writes of
    many steps in one call: ``reducer(reducer(s, xs), ys) == reducer(s, xs + ys)``.

    Args:
        reducer: the fold, as above.
        typ: the value type; ``typ()`` is the empty value. Inferred from the key's
            annotation in ``Annotated[dict[str, str], DeltaChannel(merge)]``.
        snapshot_frequency: store the full value every this many updates (positive).

    !!! warning "Beta"
        As in LangGraph, the stored representation and the saver method it relies
        on may still change.
    """

    __slots__ = ("value", "reducer", "snapshot_frequency")

    def __init__(
        self,
        reducer: Reducer,
        typ: Any = None,
        *,
        snapshot_frequency: int = 100,
        key: str = "",
    ) -> None:
        if isinstance(snapshot_frequency, bool) or not isinstance(snapshot_frequency, int):
            raise InvalidArgumentTypeError(
                f"snapshot_frequency must be a positive int, got {snapshot_frequency!r}"
            )
        if snapshot_frequency <= 0:
            raise InvalidArgumentError(
                f"snapshot_frequency must be a positive int, got {snapshot_frequency}"
            )
        super().__init__(list if typ is None else concrete_type(typ), key)
        self.reducer = reducer
        self.snapshot_frequency = snapshot_frequency
        self.value: Any = MISSING

    def with_type(self, typ: Any) -> DeltaChannel:
        """This channel's settings for a key annotated with ``typ``."""
        return type(self)(
            self.reducer, typ, snapshot_frequency=self.snapshot_frequency, key=self.key
        )

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, DeltaChannel)
            and self.snapshot_frequency == other.snapshot_frequency
            and self.reducer == other.reducer
        )

    __hash__ = None  # type: ignore[assignment]

    @property
    def ValueType(self) -> Any:
        return self.typ

    @property
    def UpdateType(self) -> Any:
        return self.typ

    def _new(self, value: Any) -> Self:
        new = self.__class__.__new__(self.__class__)
        new.typ, new.key = self.typ, self.key
        new.reducer, new.snapshot_frequency = self.reducer, self.snapshot_frequency
        new.value = value
        return new

    def copy(self) -> Self:
        return self._new(self.value if self.value is MISSING else _copy.copy(self.value))

    def from_checkpoint(self, checkpoint: Any) -> Self:
        """MISSING: empty (the caller replays writes); a DeltaSnapshot: its value;
        anything else: a plain value stored before the key became a DeltaChannel."""
        if checkpoint is MISSING:
            return self._new(initial_value(self.typ))
        if isinstance(checkpoint, DeltaSnapshot):
            return self._new(checkpoint.value)
        return self._new(checkpoint)

    def replay_writes(self, writes: Sequence[PendingWrite]) -> None:
        """Fold saved writes (oldest first) in one reducer call.

        The last ``Overwrite`` among them resets the value: only writes after it fold.
        """
        values = [value for _, _, value in writes]
        if not values:
            return
        base, start = self.value, 0
        for i, value in enumerate(values):
            is_overwrite, replacement = overwrite_value(value)
            if is_overwrite:
                base, start = self._overwritten(replacement), i + 1
        rest = values[start:]
        self.value = self.reducer(self._base(base), rest) if rest else base

    def update(self, values: Sequence[Any]) -> bool:
        if not values:
            return False
        overwrites = [value for value in values if overwrite_value(value)[0]]
        if len(overwrites) > 1:
            raise InvalidUpdateError(
                create_error_message(
                    message="Can receive only one Overwrite value per super-step.",
                    error_code=ErrorCode.INVALID_CONCURRENT_GRAPH_UPDATE,
                )
            )
        if overwrites:
            self.value = self._overwritten(overwrite_value(overwrites[0])[1])
        else:
            self.value = self.reducer(self._base(self.value), list(values))
        return True

    def _overwritten(self, replacement: Any) -> Any:
        return initial_value(self.typ) if replacement is None else _copy.copy(replacement)

    def _base(self, value: Any) -> Any:
        return initial_value(self.typ) if value is MISSING else value

    def get(self) -> Any:
        if self.value is MISSING:
            raise EmptyChannelError()
        return self.value

    def is_available(self) -> bool:
        return self.value is not MISSING

    def checkpoint(self) -> Any:
        """Always MISSING: the runtime decides when to store a DeltaSnapshot instead."""
        return MISSING
