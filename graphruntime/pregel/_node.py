"""A compiled node: what triggers it, what it reads, what it runs and how it writes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphruntime._internal._config import RunnableConfig
from graphruntime.types import RetryPolicy

Write = tuple[str, Any]
Writer = Callable[[Any, RunnableConfig], Sequence[Write]]
"""Maps a node's return value to channel writes; runs inside the node's task."""


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """Immutable plan of one node; shared by every task that runs it."""

    name: str
    func: Callable[..., Any] | None
    triggers: tuple[str, ...]
    input_keys: tuple[str, ...] | str
    writers: tuple[Writer, ...]
    mapper: Callable[[dict[str, Any]], Any] | None = None
    retry_policy: tuple[RetryPolicy, ...] = ()
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    subgraphs: tuple[Any, ...] = ()
    hidden: bool = False
