"""``stream_mode="messages"``: LLM tokens and node messages, via LangChain callbacks.

Needs langchain-core; loaded by :mod:`graphruntime.pregel._lc_callbacks` (listed in
import-linter's ``graphruntime-pure`` contract). The handler rides on the graph run's
inheritable callbacks, so every chat model a node calls (at any depth) reports to it:
each token (``on_llm_new_token``) or, for a model that did not stream, the final
message (``on_llm_end``) becomes a ``(message, metadata)`` chunk of the ``messages``
mode, in the namespace of the graph whose node called the model. Messages a node
returns (``on_chain_end``) are streamed too, once per message id.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import fields, is_dataclass
from typing import Any, TypeVar
from uuid import UUID, uuid4

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, LLMResult
from pydantic import BaseModel

from graphruntime._internal._constants import NS_SEP, PUSH
from graphruntime.constants import TAG_HIDDEN, TAG_NOSTREAM
from graphruntime.types import Command

try:  # LangChain's markers: how its event streams and chat models recognise a handler
    from langchain_core.tracers._streaming import (
        _StreamingCallbackHandler,
        _V2StreamingCallbackHandler,
    )
except ImportError:  # pragma: no cover - older langchain-core

    class _StreamingCallbackHandler:  # type: ignore[no-redef]
        pass

    class _V2StreamingCallbackHandler:  # type: ignore[no-redef]
        pass


T = TypeVar("T")
Meta = tuple[tuple[str, ...], dict[str, Any]]
Put = Callable[[tuple[tuple[str, ...], str, Any]], None]

StreamingCallbackHandler = _StreamingCallbackHandler
"""LangChain's marker of a handler its event streams tap (our tools handler is one)."""

__all__ = (
    "StreamMessagesHandler",
    "StreamMessagesHandlerV2",
    "StreamingCallbackHandler",
    "graph_namespace",
)


def graph_namespace(metadata: Mapping[str, Any]) -> tuple[str, ...]:
    """The namespace of the graph a task runs in, from the task's run metadata.

    Drops the task's own segment, and one more per enclosing ``@task`` call (a call's
    path is ``(PUSH, <caller's path>, <index>, True)``: it runs in its caller's graph).
    """
    ns = tuple(str(metadata["langgraph_checkpoint_ns"]).split(NS_SEP))
    path = metadata.get("langgraph_path", ())
    drop = 1
    while len(path) == 4 and path[0] == PUSH and path[-1] is True:
        drop += 1
        path = path[1]
    return ns[:-drop]


def _user_tags(tags: Sequence[str] | None) -> list[str] | None:
    """Tags without the ``seq:step:*`` bookkeeping ones; None if none remain."""
    kept = [t for t in tags or () if not t.startswith("seq:step")]
    return kept or None


def _state_values(obj: Any) -> Sequence[Any]:
    if isinstance(obj, dict):
        return list(obj.values())
    if isinstance(obj, BaseModel):
        return [getattr(obj, k) for k in type(obj).model_fields]
    if is_dataclass(obj) and not isinstance(obj, type):
        return [getattr(obj, f.name) for f in fields(obj)]
    return ()


def _messages_in(value: Any) -> Iterator[BaseMessage]:
    """The messages of a node's output: itself, its items, or its state's fields."""
    if isinstance(value, BaseMessage):
        yield value
    elif isinstance(value, Sequence) and not isinstance(value, str):
        yield from (v for v in value if isinstance(v, BaseMessage))
    else:
        for field in _state_values(value):
            if isinstance(field, BaseMessage):
                yield field
            elif isinstance(field, Sequence) and not isinstance(field, str):
                yield from (v for v in field if isinstance(v, BaseMessage))


class StreamMessagesHandler(BaseCallbackHandler, _StreamingCallbackHandler):  # type: ignore[type-arg]
    """Puts chat model tokens and node messages on the run's ``messages`` stream.

    ``subgraphs=False`` keeps only the messages of the graph that streams
    (``parent_ns``: the namespace it was started at, for a graph streamed inside a node).
    """

    run_inline = True  # in the thread of the model call: tokens keep their order

    def __init__(
        self, stream: Put, subgraphs: bool, *, parent_ns: tuple[str, ...] | None = None
    ) -> None:
        self.stream = stream
        self.subgraphs = subgraphs
        self.parent_ns = parent_ns
        self.metadata: dict[UUID, Meta] = {}
        self.seen: set[int | str] = set()

    def _shown(self, ns: tuple[str, ...]) -> bool:
        return self.subgraphs or not ns or ns == self.parent_ns

    def _emit(self, meta: Meta, message: BaseMessage, *, dedupe: bool = False) -> None:
        if dedupe and message.id in self.seen:
            return
        if message.id is None:
            message.id = str(uuid4())
        self.seen.add(message.id)
        self.stream((meta[0], "messages", (message, meta[1])))

    def _keep(self, message: BaseMessage) -> bool:
        return True

    def _emit_output(self, meta: Meta, output: Any) -> None:
        for message in _messages_in(output):
            if self._keep(message):
                self._emit(meta, message, dedupe=True)

    def tap_output_aiter(self, run_id: UUID, output: AsyncIterator[T]) -> AsyncIterator[T]:
        return output

    def tap_output_iter(self, run_id: UUID, output: Iterator[T]) -> Iterator[T]:
        return output

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        if not metadata or (tags and TAG_NOSTREAM in tags):
            return
        if "langgraph_checkpoint_ns" not in metadata:
            return  # a model called outside any task
        ns = graph_namespace(metadata)
        if not self._shown(ns):
            return
        if (user_tags := _user_tags(tags)) is not None:
            metadata["tags"] = user_tags
        self.metadata[run_id] = (ns, metadata)

    def on_llm_new_token(  # type: ignore[override]
        self,
        token: str,
        *,
        chunk: ChatGenerationChunk | None = None,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> Any:
        if isinstance(chunk, ChatGenerationChunk) and (meta := self.metadata.get(run_id)):
            self._emit(meta, chunk.message)

    def on_llm_end(
        self,
        response: LLMResult,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> Any:
        if (meta := self.metadata.get(run_id)) and response.generations and response.generations[0]:
            generation = response.generations[0][0]
            if isinstance(generation, ChatGeneration):
                self._emit(meta, generation.message, dedupe=True)
        self.metadata.pop(run_id, None)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> Any:
        self.metadata.pop(run_id, None)

    def on_chain_start(
        self,
        serialized: dict[str, Any],
        inputs: dict[str, Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        if (
            not metadata
            or kwargs.get("name") != metadata.get("langgraph_node")
            or (tags and TAG_HIDDEN in tags)
        ):
            return
        ns = graph_namespace(metadata)
        if not self._shown(ns):
            return
        self.metadata[run_id] = (ns, metadata)
        # messages the node got as input are not news: do not stream them back
        for message in _messages_in(inputs):
            if message.id is not None:
                self.seen.add(message.id)

    def on_chain_end(  # type: ignore[override]
        self, response: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> Any:
        meta = self.metadata.pop(run_id, None)
        if meta is None:
            return
        if isinstance(response, Command):
            self._emit_output(meta, response.update)
        elif isinstance(response, Sequence) and any(isinstance(v, Command) for v in response):
            for value in response:
                self._emit_output(meta, value.update if isinstance(value, Command) else value)
        else:
            self._emit_output(meta, response)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> Any:
        self.metadata.pop(run_id, None)


class StreamMessagesHandlerV2(StreamMessagesHandler, _V2StreamingCallbackHandler):
    """The ``messages`` handler of ``stream_events(version="v3")``: protocol events.

    Being a v2 streaming handler makes chat models stream content-block events
    (``on_stream_event``) instead of tokens; each is put on the stream with the model
    run's id in its metadata, which ``run.messages`` groups by. Tool messages a node
    returns are not chat output here.
    """

    def __init__(
        self, stream: Put, subgraphs: bool, *, parent_ns: tuple[str, ...] | None = None
    ) -> None:
        super().__init__(stream, subgraphs, parent_ns=parent_ns)
        self._streamed_run_ids: set[UUID] = set()

    def _keep(self, message: BaseMessage) -> bool:
        return not isinstance(message, ToolMessage)

    def on_llm_new_token(  # type: ignore[override]
        self,
        token: str,
        *,
        chunk: ChatGenerationChunk | None = None,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Ignored: a v2 stream carries protocol events, never v1 chunks."""

    def on_llm_end(
        self,
        response: LLMResult,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> Any:
        if (meta := self.metadata.get(run_id)) and response.generations and response.generations[0]:
            generation = response.generations[0][0]
            if isinstance(generation, ChatGeneration):
                if run_id in self._streamed_run_ids:
                    # already streamed as events: only remember it, so the node's
                    # returning it does not stream it twice
                    if generation.message.id is None:
                        generation.message.id = str(uuid4())
                    self.seen.add(generation.message.id)
                else:
                    self._emit(meta, generation.message, dedupe=True)
        self._streamed_run_ids.discard(run_id)
        self.metadata.pop(run_id, None)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> Any:
        self._streamed_run_ids.discard(run_id)
        super().on_llm_error(error, run_id=run_id, **kwargs)

    def on_stream_event(  # type: ignore[override]
        self,
        event: dict[str, Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> Any:
        if (meta := self.metadata.get(run_id)) is None:
            return
        if event.get("event") == "message-start":
            self._streamed_run_ids.add(run_id)
            if message_id := event.get("message_id"):
                self.seen.add(message_id)
        self.stream((meta[0], "messages", (event, {**meta[1], "run_id": str(run_id)})))
