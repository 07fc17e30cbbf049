"""``stream_mode="tools"``: tool calls' lifecycle, via LangChain callbacks.

Needs langchain-core; loaded by :mod:`graphruntime.pregel._lc_callbacks` (listed in
import-linter's ``graphruntime-pure`` contract). Every LangChain tool a node runs
reports ``tool-started`` / ``tool-finished`` / ``tool-error`` (keyed by its tool call
id), in the namespace of the graph whose node runs it; while it runs, the tool can
stream ``tool-output-delta`` events through
:data:`graphruntime._internal._tool_stream.tool_call_writer`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import Token
from typing import Any, TypeVar
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from graphruntime import errors
from graphruntime._internal._tool_stream import ToolCallWriter, tool_call_writer
from graphruntime.constants import TAG_NOSTREAM
from graphruntime.errors import GraphInterrupt
from graphruntime.pregel._lc_messages import StreamingCallbackHandler, graph_namespace

T = TypeVar("T")
Put = Callable[[tuple[tuple[str, ...], str, Any]], None]

__all__ = ("StreamToolCallHandler",)


def _paused(error: BaseException) -> bool:
    """An interrupted or drained tool is paused, not failed: it runs again on resume."""
    drained = getattr(errors, "GraphDrained", None)  # present once run control is
    return isinstance(error, GraphInterrupt) or (drained is not None and isinstance(error, drained))


class StreamToolCallHandler(BaseCallbackHandler, StreamingCallbackHandler):  # type: ignore[type-arg]
    """Puts tool call events on the run's ``tools`` stream.

    ``subgraphs=False`` keeps only the tools of the graph that streams (``parent_ns``).
    """

    run_inline = True  # in the tool's thread: events keep their order

    def __init__(
        self, stream: Put, subgraphs: bool, *, parent_ns: tuple[str, ...] | None = None
    ) -> None:
        self.stream = stream
        self.subgraphs = subgraphs
        self.parent_ns = parent_ns
        # on_tool_end does not get the tool call id: runs are matched by run id
        self._run_to_call: dict[
            UUID, tuple[tuple[str, ...], str, Token[ToolCallWriter | None]]
        ] = {}

    def _namespace(
        self, metadata: dict[str, Any] | None, tags: list[str] | None
    ) -> tuple[str, ...] | None:
        """Where the call streams, or None when it does not."""
        if not metadata or (tags and TAG_NOSTREAM in tags):
            return None
        ns = graph_namespace(metadata) if metadata.get("langgraph_checkpoint_ns") else ()
        if not self.subgraphs and ns and ns != self.parent_ns:
            return None
        return ns

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        ns = self._namespace(metadata, tags)
        if ns is None:
            return
        call_id = str(kwargs.get("tool_call_id") or run_id)
        name = (serialized or {}).get("name") or kwargs.get("name") or ""

        def write(delta: Any) -> None:
            event = {"event": "tool-output-delta", "tool_call_id": call_id, "delta": delta}
            self.stream((ns, "tools", event))

        self._run_to_call[run_id] = (ns, call_id, tool_call_writer.set(write))
        payload: dict[str, Any] = {
            "event": "tool-started",
            "tool_call_id": call_id,
            "tool_name": name,
        }
        if inputs is not None:
            payload["input"] = inputs
        self.stream((ns, "tools", payload))

    def _finish(self, run_id: UUID) -> tuple[tuple[str, ...], str] | None:
        call = self._run_to_call.pop(run_id, None)
        if call is None:
            return None
        ns, call_id, token = call
        # a tool may end in another context than it started in (a worker thread)
        with contextlib.suppress(ValueError):
            tool_call_writer.reset(token)
        return ns, call_id

    def on_tool_end(
        self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> Any:
        if call := self._finish(run_id):
            ns, call_id = call
            event = {"event": "tool-finished", "tool_call_id": call_id, "output": output}
            self.stream((ns, "tools", event))

    def on_tool_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> Any:
        if (call := self._finish(run_id)) and not _paused(error):
            ns, call_id = call
            event = {"event": "tool-error", "tool_call_id": call_id, "message": str(error)}
            self.stream((ns, "tools", event))

    def tap_output_aiter(self, run_id: UUID, output: AsyncIterator[T]) -> AsyncIterator[T]:
        return output

    def tap_output_iter(self, run_id: UUID, output: Iterator[T]) -> Iterator[T]:
        return output
