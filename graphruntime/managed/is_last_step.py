"""The step counters: ``RemainingSteps`` and ``IsLastStep``."""

from __future__ import annotations

from typing import Annotated

from graphruntime.managed.base import ManagedValue, StepPosition

__all__ = ("IsLastStep", "IsLastStepManager", "RemainingSteps", "RemainingStepsManager")


class IsLastStepManager(ManagedValue[bool]):
    @staticmethod
    def get(scratchpad: StepPosition) -> bool:
        return scratchpad.step == scratchpad.stop - 1


IsLastStep = Annotated[bool, IsLastStepManager]
"""True while the run takes its last step before the recursion limit."""


class RemainingStepsManager(ManagedValue[int]):
    @staticmethod
    def get(scratchpad: StepPosition) -> int:
        return scratchpad.stop - scratchpad.step


RemainingSteps = Annotated[int, RemainingStepsManager]
"""How many steps the run may still take before the recursion limit."""
