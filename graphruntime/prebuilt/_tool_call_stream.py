"""``ToolCallStream``: one tool call's live view in ``run.tool_calls`` (as LangGraph's)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from graphruntime.stream.stream_channel import StreamChannel

__all__ = ("ToolCallStream",)


class ToolCallStream:
    """A tool call seen through the ``tools`` stream mode.

    ``tool_call_id``, ``tool_name`` and ``input`` come with the call's start;
    ``output_deltas`` yields what the tool streams while it runs (iterate it, or this
    object, with ``for`` in a sync run and ``async for`` in an async one); ``output`` is
    the tool's result, ``error`` its failure's message, and ``completed`` is True once
    either arrived. :class:`~graphruntime.prebuilt.ToolCallTransformer` makes them.
    """

    def __init__(
        self, tool_call_id: str, tool_name: str, input: dict[str, Any] | None = None
    ) -> None:
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.input = input
        self.output: Any = None
        self.error: str | None = None
        self.completed = False
        self._output_deltas: StreamChannel[Any] = StreamChannel()

    @property
    def output_deltas(self) -> StreamChannel[Any]:
        """The tool's streamed chunks, in order; ends when the call ends."""
        return self._output_deltas

    def _bind(self, *, is_async: bool) -> None:
        self._output_deltas._bind(is_async=is_async)

    def _push_delta(self, delta: Any) -> None:
        self._output_deltas.push(delta)

    def _finish(self, output: Any) -> None:
        self.output = output
        self.completed = True
        self._output_deltas.close()

    def _fail(self, message: str) -> None:
        self.error = message
        self.completed = True
        self._output_deltas.close()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._output_deltas)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._output_deltas.__aiter__()

    def __repr__(self) -> str:
        if not self.completed:
            status = "running"
        else:
            status = "failed" if self.error is not None else "completed"
        return (
            f"ToolCallStream(tool_call_id={self.tool_call_id!r}, "
            f"tool_name={self.tool_name!r}, status={status})"
        )
