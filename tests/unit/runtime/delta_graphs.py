"""Graphs the DeltaChannel tests share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphruntime.channels import DeltaChannel, LastValue
from graphruntime.checkpoint import InMemorySaver
from graphruntime.graph import START
from graphruntime.pregel import Pregel
from graphruntime.pregel._node import NodeSpec


def extend(current: list[Any], writes: Sequence[list[Any]]) -> list[Any]:
    return [*current, *(item for write in writes for item in write)]


def input_graph(saver: InMemorySaver) -> Any:
    """A graph whose input channel is a DeltaChannel: the run's input is a delta write."""
    count = NodeSpec(
        name="count",
        func=lambda items: len(items),
        triggers=(START,),
        input_keys=START,
        writers=(lambda n, config: [("n", n)],),
    )
    return Pregel(
        nodes={"count": count},
        channels={START: DeltaChannel(extend), "n": LastValue(int)},
        input_channels=START,
        output_channels=[START, "n"],
        stream_channels=[START, "n"],
        checkpointer=saver,
    )
