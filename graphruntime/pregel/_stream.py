"""Where a run's stream chunks go: a sink shared by the run and its subgraphs."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from graphruntime._internal._constants import INTERRUPT
from graphruntime.constants import START

StreamChunk = tuple[tuple[str, ...], str, Any]
"""``(namespace, mode, payload)``: one chunk as a driver yields it."""


class StreamSink:
    """Collects the stream chunks one run shows its caller, filtered by mode.

    A run streams its own namespace (``root_ns``), and its subgraphs' if asked. A
    nested run (a graph a node calls) has a sink of its own, for its own caller, and
    passes every chunk on to the ``parent`` sink too, which keeps what its run
    shows. ``modes`` is what the run's nodes must produce: its own modes and every
    ancestor's. ``listener`` (if set) is called after each chunk kept, from
    whichever thread put it.

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
        self.kept = frozenset(modes)
        self.modes: set[str] = set(modes) | (parent.modes if parent is not None else set())
        self.subgraphs = subgraphs
        self.root_ns = root_ns
        self.parent = parent
        self.chunks: deque[StreamChunk] = deque()
        self.listener: Callable[[], None] | None = None

    @property
    def eager(self) -> bool:
        """Whether chunks should reach the caller while a step's tasks still run.

        True for a root sink that streams subgraphs, tokens or custom data: those
        arrive from inside running tasks (LangGraph streams them as they come too).
        """
        return self.parent is None and (
            self.subgraphs or "messages" in self.kept or "custom" in self.kept
        )

    def put(self, ns: tuple[str, ...], mode: str, payload: Any) -> None:
        """A chunk the run produced: for this run's caller, and its ancestors'."""
        if self.parent is not None:
            self.parent.put(ns, mode, payload)
        self.put_local(ns, mode, payload)

    def put_local(self, ns: tuple[str, ...], mode: str, payload: Any) -> None:
        """A chunk for this run's caller only (an ancestor's own handler reports it too)."""
        if mode in self.kept and (ns == self.root_ns or self.subgraphs):
            self.chunks.append((ns, mode, payload))
            if self.listener is not None:
                self.listener()

    def drain(self) -> Iterator[StreamChunk]:
        chunks = self.chunks
        while chunks:
            yield chunks.popleft()


def stream_part(
    chunk: StreamChunk,
    output_mapper: Callable[[Any], Any] | None,
    state_mapper: Callable[[Any], Any] | None = None,
) -> dict[str, Any]:
    """A chunk as ``stream(version="v2")`` shows it: ``{"type", "ns", "data"}``.

    A ``values`` part carries its interrupts in their own field, and its data as the
    graph's output schema (``output_mapper``: a pydantic model or dataclass). The values
    of a ``checkpoints`` part (or a ``debug`` checkpoint) are the state schema's
    (``state_mapper``), once the input has been applied.
    """
    ns, mode, payload = chunk
    if mode in ("checkpoints", "debug") and state_mapper is not None:
        return {"type": mode, "ns": ns, "data": _state_values(payload, state_mapper)}
    if mode != "values":
        return {"type": mode, "ns": ns, "data": payload}
    interrupts: tuple[Any, ...] = ()
    if isinstance(payload, dict):
        if INTERRUPT in payload:
            payload = dict(payload)
            interrupts = tuple(payload.pop(INTERRUPT))
        if output_mapper is not None:
            payload = output_mapper(payload)
    return {"type": mode, "ns": ns, "data": payload, "interrupts": interrupts}


def _state_values(payload: Any, mapper: Callable[[Any], Any]) -> Any:
    """``payload`` with its checkpoint's values as the state schema, copied (the same
    payload may be streamed in another mode too)."""
    if not isinstance(payload, dict):
        return payload
    if payload.get("type") == "checkpoint" and isinstance(payload.get("payload"), dict):
        return {**payload, "payload": _state_values(payload["payload"], mapper)}
    values = payload.get("values")
    # before the input is applied the state may lack required fields
    if isinstance(values, dict) and START not in payload.get("next", ()):
        return {**payload, "values": mapper(values)}
    return payload
