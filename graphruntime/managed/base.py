"""The managed-value contract: a value computed from the step, not stored in a channel."""

from __future__ import annotations

from abc import ABC, abstractmethod
from inspect import isclass
from typing import Any, Generic, Protocol, TypeGuard, TypeVar

__all__ = ("ManagedValue", "ManagedValueMapping", "ManagedValueSpec", "is_managed_value")

V = TypeVar("V")


class StepPosition(Protocol):
    """Where the run is: the current step and the step it must stop before."""

    @property
    def step(self) -> int: ...
    @property
    def stop(self) -> int: ...


class ManagedValue(ABC, Generic[V]):
    """A state key whose value the runtime computes each time a node reads it."""

    @staticmethod
    @abstractmethod
    def get(scratchpad: StepPosition) -> V:
        """The value at this point of the run."""


ManagedValueSpec = type[ManagedValue[Any]]
ManagedValueMapping = dict[str, ManagedValueSpec]


def is_managed_value(value: Any) -> TypeGuard[ManagedValueSpec]:
    return isclass(value) and issubclass(value, ManagedValue)
