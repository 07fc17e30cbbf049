"""Channels: how each state key merges the writes of a superstep."""

from __future__ import annotations

from graphruntime.channels.barrier import NamedBarrierValue, NamedBarrierValueAfterFinish
from graphruntime.channels.base import BaseChannel
from graphruntime.channels.binop import BinaryOperatorAggregate
from graphruntime.channels.delta import DeltaChannel
from graphruntime.channels.ephemeral import EphemeralValue
from graphruntime.channels.last_value import AnyValue, LastValue, LastValueAfterFinish
from graphruntime.channels.topic import Topic
from graphruntime.channels.untracked_value import UntrackedValue

__all__ = (
    "AnyValue",
    "BaseChannel",
    "BinaryOperatorAggregate",
    "DeltaChannel",
    "EphemeralValue",
    "LastValue",
    "LastValueAfterFinish",
    "NamedBarrierValue",
    "NamedBarrierValueAfterFinish",
    "Topic",
    "UntrackedValue",
)
