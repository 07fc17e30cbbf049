"""What of a step a saver gets: never an UntrackedValue; the arguments a saver takes."""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from graphruntime._internal._constants import TASKS
from graphruntime.channels import BaseChannel, DeltaChannel, UntrackedValue
from graphruntime.checkpoint.base import BaseCheckpointSaver
from graphruntime.types import Send

__all__ = (
    "channel_facts",
    "sanitized_send",
    "takes_task_path",
    "untracked_keys",
    "without_untracked",
)


def untracked_keys(specs: Mapping[str, BaseChannel]) -> frozenset[str]:
    """The graph's UntrackedValue channels: their values live in memory only."""
    return frozenset(k for k, spec in specs.items() if isinstance(spec, UntrackedValue))


def channel_facts(graph: Any) -> tuple[frozenset[str], list[str]]:
    """The graph's untracked and DeltaChannel keys, worked out once per channel map.

    Every run needs both; they are kept on the graph, with the map they were read from.
    """
    specs = graph.channel_specs
    cached = getattr(graph, "_channel_facts", None)
    if cached is not None and cached[0] is specs:
        return cached[1], cached[2]
    untracked = untracked_keys(specs)
    deltas = [k for k, spec in specs.items() if isinstance(spec, DeltaChannel)]
    with contextlib.suppress(AttributeError):  # a spec without a __dict__: every run
        graph._channel_facts = (specs, untracked, deltas)
    return untracked, deltas


def sanitized_send(packet: Any, untracked: frozenset[str]) -> Any:
    """A Send whose state argument holds no untracked key (the rest is saved as is)."""
    if not isinstance(packet, Send) or not isinstance(packet.arg, dict):
        return packet
    arg = {k: v for k, v in packet.arg.items() if k not in untracked}
    return Send(packet.node, arg, timeout=packet.timeout)


def without_untracked(
    writes: Sequence[tuple[str, Any]], untracked: frozenset[str]
) -> list[tuple[str, Any]]:
    """What of ``writes`` is saved: no untracked value, not even inside a Send's state."""
    return [
        (c, sanitized_send(v, untracked) if c == TASKS else v)
        for c, v in writes
        if c not in untracked
    ]


@functools.cache
def takes_task_path(saver_type: type[BaseCheckpointSaver], method: str = "put_writes") -> bool:
    """Whether a saver's ``put_writes`` (or ``aput_writes``: ``method``) takes the task
    path; older savers take 3 arguments, and a subclass may override only one of them."""
    try:
        params = inspect.signature(getattr(saver_type, method)).parameters
    except (TypeError, ValueError):
        return True
    return "task_path" in params or len(params) > 4
