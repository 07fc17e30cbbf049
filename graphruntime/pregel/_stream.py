"""Where a run's stream chunks go: a sink shared by the run and its subgraphs."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

StreamChunk = tuple[tuple[str, ...], str, Any]
"""``(namespace, mode, payload)``: one chunk as a driver yields it."""


class StreamSink:
    """Collects stream chunks from a run and its subgraphs, filtered by mode.

    Task threads append while the driving thread drains: ``deque.append`` and
    ``popleft`` are atomic, so no chunk is lost or seen twice.
    """

    def __init__(
        self,
        modes: set[str],
        subgraphs: bool,
        root_ns: tuple[str, ...] = (),
        parent: StreamSink | None = None,
    ) -> None:
        self.modes = modes
        self.subgraphs = subgraphs
        self.root_ns = root_ns
        self.parent = parent
        self.chunks: deque[StreamChunk] = deque()
        self.on_put: Callable[[], None] | None = None
        """Called after a chunk is added: a driver waiting on running tasks drains it."""

    def put(self, ns: tuple[str, ...], mode: str, payload: Any) -> None:
        if mode in self.modes and (ns == self.root_ns or self.subgraphs):
            self.chunks.append((ns, mode, payload))
            if self.on_put is not None:
                self.on_put()

    def drain(self) -> Iterator[StreamChunk]:
        chunks = self.chunks
        while chunks:
            yield chunks.popleft()
