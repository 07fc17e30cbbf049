"""``run.messages``: one LangChain ``ChatModelStream`` per model call.

Needs langchain-core (``pip install 'graphruntime[messages]'``); this is the stream
package's only module that imports it (import-linter's ``graphruntime-pure`` allows it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from graphruntime.errors import MissingDependencyError

try:
    from langchain_core.language_models._compat_bridge import message_to_events
    from langchain_core.language_models.chat_model_stream import (
        AsyncChatModelStream,
        ChatModelStream,
    )
    from langchain_core.messages import AIMessageChunk, BaseMessage, ToolMessage
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError(
        "run.messages (stream_events(version='v3')) needs langchain-core: "
        "pip install 'graphruntime[messages]'"
    ) from exc

from graphruntime.stream._types import ProtocolEvent, StreamTransformer
from graphruntime.stream.stream_channel import StreamChannel

__all__ = ("MessagesTransformer",)


class MessagesTransformer(StreamTransformer):
    """``run.messages``: a ``ChatModelStream`` per chat model call at this scope.

    ``messages`` events carry ``(payload, metadata)``. A protocol event (a dict with
    ``"event"``, from a model streaming content blocks) goes to the stream of its
    model run (``metadata["run_id"]``): ``message-start`` opens one, ``message-finish``
    ends it. A whole message a node returned (not a chunk, not a tool result) becomes
    a stream replayed from its content. Tool messages are left to the tools
    projection; legacy ``AIMessageChunk`` tokens are not projected.
    """

    _native = True
    required_stream_modes = ("messages",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._log: StreamChannel[ChatModelStream | AsyncChatModelStream] = StreamChannel()
        self._by_run: dict[str, ChatModelStream | AsyncChatModelStream] = {}
        self._ignored_runs: set[str] = set()
        self._pump_fn: Callable[[], bool] | None = None
        self._apump_fn: Callable[[], Awaitable[bool]] | None = None
        self._scope_list: list[str] = list(scope)

    def init(self) -> dict[str, Any]:
        return {"messages": self._log}

    def _bind_pump(self, fn: Callable[[], bool]) -> None:
        self._pump_fn = fn

    def _bind_apump(self, fn: Callable[[], Awaitable[bool]]) -> None:
        self._apump_fn = fn

    def _make_stream(
        self, *, node: str | None, message_id: str | None
    ) -> ChatModelStream | AsyncChatModelStream:
        """A stream whose readers pull the run forward with whichever pump is bound."""
        if self._apump_fn is not None:
            astream = AsyncChatModelStream(namespace=[], node=node, message_id=message_id)
            astream.set_arequest_more(self._apump_fn)
            return astream
        if self._pump_fn is not None:
            stream = ChatModelStream(namespace=[], node=node, message_id=message_id)
            stream.set_request_more(self._pump_fn)
            return stream
        # no pump: events are dispatched by hand (unit tests of the transformer)
        return AsyncChatModelStream(namespace=[], node=node, message_id=message_id)

    def process(self, event: ProtocolEvent) -> bool:
        params = event["params"]
        if event["method"] != "messages" or params["namespace"] != self._scope_list:
            return True
        payload, metadata = params["data"]
        node: str | None = metadata.get("langgraph_node") if metadata else None
        run_id = str(metadata.get("run_id", "")) if metadata else ""
        if isinstance(payload, dict) and "event" in payload:
            self._route_protocol_event(payload, run_id=run_id, node=node)
        elif isinstance(payload, BaseMessage) and not isinstance(
            payload, (AIMessageChunk, ToolMessage)
        ):
            self._route_whole_message(payload, node=node)
        return True

    def _route_protocol_event(
        self, event: dict[str, Any], *, run_id: str, node: str | None
    ) -> None:
        kind = event.get("event")
        if kind == "message-start":
            if event.get("role") == "tool":
                self._ignored_runs.add(run_id)
                return
            message_id = event.get("message_id")
            stream = self._make_stream(
                node=node, message_id=str(message_id) if message_id is not None else None
            )
            self._by_run[run_id] = stream
            self._log.push(stream)
            stream.dispatch(event)
        elif run_id in self._ignored_runs:
            if kind == "message-finish":
                self._ignored_runs.discard(run_id)
        elif run_id in self._by_run:
            stream = self._by_run[run_id]
            stream.dispatch(event)
            if kind == "message-finish":
                del self._by_run[run_id]

    def _route_whole_message(self, message: BaseMessage, *, node: str | None) -> None:
        stream = self._make_stream(node=node, message_id=message.id)
        for event in message_to_events(message, message_id=message.id):
            stream.dispatch(event)
        self._log.push(stream)

    def finalize(self) -> None:
        self._by_run.clear()
        self._ignored_runs.clear()

    def fail(self, err: BaseException) -> None:
        for stream in list(self._by_run.values()):
            stream.fail(err)
        self._by_run.clear()
        self._ignored_runs.clear()
