"""Managed values: state keys the runtime fills in on read (as ``langgraph.managed``).

``remaining_steps: RemainingSteps`` in a state schema gives a node the number of steps
left before the recursion limit; ``is_last_step: IsLastStep`` is True on the last one.
They are never written or checkpointed.
"""

from __future__ import annotations

from graphruntime.managed.base import ManagedValue, ManagedValueSpec, is_managed_value
from graphruntime.managed.is_last_step import (
    IsLastStep,
    IsLastStepManager,
    RemainingSteps,
    RemainingStepsManager,
)

__all__ = (
    "IsLastStep",
    "IsLastStepManager",
    "ManagedValue",
    "ManagedValueSpec",
    "RemainingSteps",
    "RemainingStepsManager",
    "is_managed_value",
)
