"""``ToolCallTransformer``: ``run.tool_calls`` from the ``tools`` stream mode (as LangGraph's)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.messages import ToolMessage

from graphruntime.prebuilt._tool_call_stream import ToolCallStream
from graphruntime.stream._types import ProtocolEvent, StreamTransformer
from graphruntime.stream.stream_channel import StreamChannel

__all__ = ("ToolCallTransformer",)


def _tool_output(output: Any) -> Any:
    """A ToolMessage's content (live or in LangChain's serialized form); else as is."""
    if isinstance(output, ToolMessage):
        return output.content
    if (
        isinstance(output, dict)
        and output.get("type") == "constructor"
        and isinstance(output.get("id"), list)
        and output["id"][-1:] == ["ToolMessage"]
        and isinstance(output.get("kwargs"), dict)
    ):
        return output["kwargs"].get("content")
    return output


class ToolCallTransformer(StreamTransformer):
    """Adds ``run.tool_calls``: a :class:`ToolCallStream` per tool call of the run's scope.

    Opt-in: ``builder.compile(transformers=[ToolCallTransformer])`` (``create_agent``
    does). It reads the ``tools`` events (``tool-started``, ``tool-output-delta``,
    ``tool-finished``, ``tool-error``) and leaves them in the event log; the handles are
    live objects, so ``tool_calls`` is an unnamed projection that is never serialized.
    Subgraphs' calls belong to their own scope's transformer.
    """

    _native = True
    required_stream_modes = ("tools",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._log: StreamChannel[ToolCallStream] = StreamChannel()
        self._active: dict[str, ToolCallStream] = {}
        self._is_async = False
        self._pump: Callable[[], bool] | None = None
        self._apump: Callable[[], Awaitable[bool]] | None = None

    def init(self) -> dict[str, Any]:
        return {"tool_calls": self._log}

    # the mux hands its pumps over, so a handle's deltas can pull the run forward too
    def _bind_pump(self, fn: Callable[[], bool]) -> None:
        self._pump, self._is_async = fn, False

    def _bind_apump(self, fn: Callable[[], Awaitable[bool]]) -> None:
        self._apump, self._is_async = fn, True

    def _start(self, call_id: str, data: dict[str, Any]) -> None:
        handle = ToolCallStream(call_id, data.get("tool_name", ""), data.get("input"))
        handle._bind(is_async=self._is_async)
        handle.output_deltas._request_more = self._pump
        handle.output_deltas._arequest_more = self._apump
        self._active[call_id] = handle
        self._log.push(handle)

    def process(self, event: ProtocolEvent) -> bool:
        params = event["params"]
        if event["method"] != "tools" or tuple(params["namespace"]) != self.scope:
            return True
        data = params["data"]
        call_id = data.get("tool_call_id")
        if call_id is None:
            return True
        kind = data.get("event")
        if kind == "tool-started":
            self._start(call_id, data)
        elif kind == "tool-output-delta":
            if (handle := self._active.get(call_id)) is not None:
                handle._push_delta(data.get("delta"))
        elif kind == "tool-finished":
            if (handle := self._active.pop(call_id, None)) is not None:
                handle._finish(_tool_output(data.get("output")))
        elif kind == "tool-error" and (handle := self._active.pop(call_id, None)) is not None:
            handle._fail(data.get("message", ""))
        return True

    def finalize(self) -> None:
        """The run ended: a call still open ends without output."""
        for handle in self._active.values():
            if not handle.completed:
                handle._finish(None)
        self._active.clear()

    def fail(self, err: BaseException) -> None:
        """The run failed: a call still open fails with the run's error."""
        for handle in self._active.values():
            if not handle.completed:
                handle._fail(str(err))
        self._active.clear()
