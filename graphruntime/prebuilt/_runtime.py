"""``ToolRuntime`` (what a tool may ask for) and the graph runtime a node's config carries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool

# LangChain's marker for an argument injected by its type alone (``runtime: ToolRuntime``,
# no ``Annotated``): its tool schemas leave such arguments out of what the model sees.
from langchain_core.tools.base import _DirectlyInjectedToolArg
from typing_extensions import TypeVar

from graphruntime._internal._constants import CONF, CONFIG_KEY_CUSTOM_WRITER, CONFIG_KEY_RUNTIME
from graphruntime._internal._tool_stream import tool_call_writer
from graphruntime.config import StreamWriter

# Imported at run time, not for type checking only: LangChain builds a pydantic schema
# of every tool's signature, and a `runtime: ToolRuntime` parameter needs these fields.
from graphruntime.store.base import BaseStore

StateT = TypeVar("StateT", default=dict[str, Any])
ContextT = TypeVar("ContextT", default=None)


@dataclass
class ToolRuntime(_DirectlyInjectedToolArg, Generic[ContextT, StateT]):
    """What a tool gets in a parameter typed ``ToolRuntime`` (no ``Annotated`` needed).

    ``state`` is the graph state ``ToolNode`` was called with, ``tool_call_id`` the
    call being answered, ``config`` the call's config; ``context``, ``store`` and
    ``stream_writer`` are the run's (as a node's ``Runtime`` has them), ``tools``
    every tool of the ``ToolNode``. The model never sees this parameter.
    """

    state: StateT
    context: ContextT
    config: RunnableConfig
    stream_writer: StreamWriter
    tool_call_id: str | None
    store: BaseStore | None
    tools: list[BaseTool] = field(default_factory=list)
    execution_info: Any = None
    server_info: Any = None

    def emit_output_delta(self, delta: Any) -> None:
        """Stream a partial output chunk of this tool call.

        A no-op unless the run streams tool output, so tools may call it
        unconditionally.
        """
        writer = tool_call_writer.get()
        if writer is not None:
            writer(delta)


def _noop_writer(_: Any) -> None:
    return None


@dataclass(frozen=True)
class GraphRuntime:
    """The run's context, store and stream writer, as seen from a node's config.

    Read from the runtime object the executing graph puts in the config (a node's
    ``Runtime``); outside a graph, or before the graph sets one, there is no
    context or store and the writer is the ``custom`` stream's (or a no-op).
    """

    context: Any = None
    store: BaseStore | None = None
    stream_writer: StreamWriter = _noop_writer
    execution_info: Any = None
    server_info: Any = None
    runtime: Any = None

    @classmethod
    def of(cls, config: RunnableConfig) -> GraphRuntime:
        conf = config.get(CONF) or {}
        runtime = conf.get(CONFIG_KEY_RUNTIME)
        writer = getattr(runtime, "stream_writer", None) or conf.get(CONFIG_KEY_CUSTOM_WRITER)
        return cls(
            context=getattr(runtime, "context", None),
            store=getattr(runtime, "store", None),
            stream_writer=writer or _noop_writer,
            execution_info=getattr(runtime, "execution_info", None),
            server_info=getattr(runtime, "server_info", None),
            runtime=runtime,
        )
