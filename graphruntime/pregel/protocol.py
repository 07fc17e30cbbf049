"""What every runnable graph offers (``PregelProtocol``), and the stream sink type.

``PregelProtocol`` is structural: ``Pregel``, ``CompiledStateGraph`` and an
``@entrypoint`` all satisfy it, and so does any class with the same methods.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Protocol, runtime_checkable

from graphruntime._internal._config import RunnableConfig
from graphruntime.pregel._stream import StreamChunk
from graphruntime.types import StateSnapshot, StreamMode

__all__ = ("PregelProtocol", "StreamChunk", "StreamProtocol")


@runtime_checkable
class PregelProtocol(Protocol):
    """A graph that can be run, streamed, and whose threads can be read and edited."""

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any: ...

    async def ainvoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Any: ...

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]: ...

    def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]: ...

    def get_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot: ...

    async def aget_state(
        self, config: RunnableConfig, *, subgraphs: bool = False
    ) -> StateSnapshot: ...

    def get_state_history(
        self, config: RunnableConfig, **kwargs: Any
    ) -> Iterator[StateSnapshot]: ...

    def aget_state_history(
        self, config: RunnableConfig, **kwargs: Any
    ) -> AsyncIterator[StateSnapshot]: ...

    def update_state(
        self, config: RunnableConfig, values: Any, as_node: str | None = None
    ) -> RunnableConfig: ...

    async def aupdate_state(
        self, config: RunnableConfig, values: Any, as_node: str | None = None
    ) -> RunnableConfig: ...


class StreamProtocol:
    """A stream sink as LangGraph passes one to a run: a callable taking
    ``(namespace, mode, payload)`` chunks, and the modes it wants."""

    __slots__ = ("__call__", "modes")

    modes: set[StreamMode]

    __call__: Callable[[StreamChunk], None]

    def __init__(self, __call__: Callable[[StreamChunk], None], modes: set[StreamMode]) -> None:
        self.__call__ = __call__
        self.modes = modes
