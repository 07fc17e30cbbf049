"""Checks that a low-level ``Pregel`` graph's nodes, channels and keys fit together."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graphruntime._internal._constants import RESERVED, TASKS
from graphruntime.channels import BaseChannel
from graphruntime.errors import GraphValidationError
from graphruntime.pregel._node import NodeSpec
from graphruntime.pregel._timeout import check_timeout_supported
from graphruntime.types import All


def _known(channels: Mapping[str, BaseChannel]) -> str:
    return repr(sorted(channels))[:100]


def validate_graph(
    nodes: Mapping[str, NodeSpec],
    channels: Mapping[str, BaseChannel | Any],
    input_channels: str | Sequence[str],
    output_channels: str | Sequence[str],
    stream_channels: str | Sequence[str],
    interrupt_after_nodes: All | Sequence[str],
    interrupt_before_nodes: All | Sequence[str],
) -> None:
    """Raise ValueError naming the first node, channel or key that does not fit."""
    for chan in channels:
        if chan in RESERVED and chan != TASKS:
            raise GraphValidationError(f"Channel name '{chan}' is reserved")
    subscribed: set[str] = set()
    for name, node in nodes.items():
        if name in RESERVED:
            raise GraphValidationError(f"Node name '{name}' is reserved")
        if node.timeout is not None:
            check_timeout_supported(node.func, name)
        subscribed.update(node.triggers)
        reads = [node.input_keys] if isinstance(node.input_keys, str) else node.input_keys
        for chan in reads:
            if chan not in channels:
                raise GraphValidationError(
                    f"Node {name} reads channel '{chan}' not in known channels: "
                    f"'{_known(channels)}'"
                )
    for chan in sorted(subscribed):
        if chan not in channels:
            raise GraphValidationError(
                f"Subscribed channel '{chan}' not in known channels: '{_known(channels)}'"
            )
    inputs = [input_channels] if isinstance(input_channels, str) else list(input_channels)
    for chan in inputs:
        if chan not in channels:
            raise GraphValidationError(
                f"Input channel '{chan}' not in known channels: '{_known(channels)}'"
            )
    if not any(chan in subscribed for chan in inputs):
        raise GraphValidationError(
            f"None of the input channels {input_channels} are subscribed to by any node"
        )
    outputs = {output_channels} if isinstance(output_channels, str) else set(output_channels)
    outputs |= {stream_channels} if isinstance(stream_channels, str) else set(stream_channels)
    for chan in sorted(outputs):
        if chan not in channels:
            raise GraphValidationError(
                f"Output channel '{chan}' not in known channels: '{_known(channels)}'"
            )
    for breakpoints in (interrupt_after_nodes, interrupt_before_nodes):
        if breakpoints == "*":
            continue
        for node_name in breakpoints:
            if node_name not in nodes:
                raise GraphValidationError(f"Node {node_name} not in nodes")


def validate_keys(keys: str | Sequence[str] | None, channels: Mapping[str, BaseChannel]) -> None:
    """Raise ValueError if a requested output key is not a channel."""
    if keys is None:
        return
    for key in [keys] if isinstance(keys, str) else keys:
        if key not in channels:
            raise GraphValidationError(f"Key {key} not in channels")
