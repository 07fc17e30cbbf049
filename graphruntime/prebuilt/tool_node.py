"""``ToolNode``: run the tool calls of the last AI message (as ``langgraph.prebuilt.tool_node``).

Needs langchain-core (``pip install 'graphruntime[messages]'``).
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypedDict, cast

from langchain_core.messages import AIMessage, AnyMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import get_config_list, get_executor_for_config
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as create_tool
from pydantic import BaseModel, ValidationError
from typing_extensions import Unpack

from graphruntime._internal._constants import CONF, CONFIG_KEY_READ, CONFIG_KEY_READ_STATE
from graphruntime.errors import GraphBubbleUp, is_invalid_resume
from graphruntime.prebuilt._base import PrebuiltNode
from graphruntime.prebuilt._errors import (
    TOOL_INVOCATION_ERROR_TEMPLATE,
    PrebuiltInputError,
    ToolInvocationError,
)
from graphruntime.prebuilt._handling import (
    TOOL_CALL_ERROR_TEMPLATE,
    ErrorHandling,
    default_handle_tool_errors,
    error_content,
    handled_types,
    model_errors,
)
from graphruntime.prebuilt._injection import (
    InjectedArgs,
    InjectedState,
    InjectedStore,
    inject,
    injected_args,
)
from graphruntime.prebuilt._runtime import GraphRuntime, ToolRuntime
from graphruntime.prebuilt._tool_output import InputType, Output, combine, msg_content_output
from graphruntime.prebuilt._tool_output import normalize as normalize_output
from graphruntime.types import Command

__all__ = (
    "INVALID_TOOL_NAME_ERROR_TEMPLATE",
    "TOOL_CALL_ERROR_TEMPLATE",
    "TOOL_EXECUTION_ERROR_TEMPLATE",
    "TOOL_INVOCATION_ERROR_TEMPLATE",
    "AsyncToolCallWrapper",
    "InjectedState",
    "InjectedStore",
    "ToolCallRequest",
    "ToolCallWithContext",
    "ToolCallWrapper",
    "ToolInvocationError",
    "ToolNode",
    "ToolRuntime",
    "msg_content_output",
    "tools_condition",
)

INVALID_TOOL_NAME_ERROR_TEMPLATE = (
    "Error: {requested_tool} is not a valid tool, try one of [{available_tools}]."
)
TOOL_EXECUTION_ERROR_TEMPLATE = (
    "Error executing tool '{tool_name}' with kwargs {tool_kwargs} with error:\n"
    " {error}\n"
    " Please fix the error and try again."
)
"""For error handlers that describe a failed tool (``ToolNode`` itself does not use it)."""


class _RequestOverrides(TypedDict, total=False):
    tool_call: ToolCall
    tool: BaseTool
    state: Any


@dataclass
class ToolCallRequest:
    """One tool call as a ``wrap_tool_call`` wrapper sees it.

    ``tool`` is None for a name the node does not know: the wrapper may answer the
    call itself; executing it gives the "not a valid tool" error message.
    """

    tool_call: ToolCall
    tool: BaseTool | None
    state: Any
    runtime: ToolRuntime[Any, Any]

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self.__dict__:
            warnings.warn(
                f"Setting attribute '{name}' on ToolCallRequest is deprecated. Use the "
                "override() method instead to create a new instance with modified values.",
                DeprecationWarning,
                stacklevel=2,
            )
        object.__setattr__(self, name, value)

    def override(self, **overrides: Unpack[_RequestOverrides]) -> ToolCallRequest:
        """A copy with ``tool_call``, ``tool`` or ``state`` replaced."""
        return replace(self, **overrides)


ToolCallWrapper = Callable[
    [ToolCallRequest, Callable[[ToolCallRequest], ToolMessage | Command[Any]]],
    ToolMessage | Command[Any],
]
"""``wrap_tool_call(request, execute)``: runs around each call; may call ``execute``
any number of times (retries), change the request, or answer without executing."""

AsyncToolCallWrapper = Callable[
    [ToolCallRequest, Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]],
    Awaitable[ToolMessage | Command[Any]],
]
"""The async form of :data:`ToolCallWrapper`, used by ``ainvoke``."""


class ToolCallWithContext(TypedDict):
    """A tool call sent to ``ToolNode`` with ``Send``, with the state its tools see."""

    tool_call: ToolCall
    __type: Literal["tool_call_with_context"]
    state: Any


_WITH_CONTEXT = "tool_call_with_context"


class ToolNode(PrebuiltNode):
    """Runs the tool calls of the last ``AIMessage``, in parallel, and returns their results.

    Input: a state with a ``messages_key`` list (returns ``{messages_key: [ToolMessage,
    ...]}``), a list of messages (returns the list of ``ToolMessage``), or tool calls
    (a list of them, or one ``ToolCallWithContext`` sent with ``Send``). A tool may
    return a ``Command``; the node then returns a list of updates and Commands.

    ``handle_tool_errors``: ``True`` turns every error into an error ``ToolMessage``
    for the model, a string is used as that message, a function of the exception makes
    it (the types its parameter is annotated with are the ones it handles), exception
    types name the errors to handle, ``False`` raises all. By default only calls with
    invalid arguments become messages; errors inside tools raise.

    Tool arguments marked ``InjectedState``, ``InjectedStore`` or typed ``ToolRuntime``
    are filled in by the node and hidden from the model.
    """

    name: str | None = "tools"

    def __init__(
        self,
        tools: Sequence[BaseTool | Callable[..., Any]],
        *,
        name: str = "tools",
        tags: list[str] | None = None,
        handle_tool_errors: ErrorHandling = default_handle_tool_errors,
        messages_key: str = "messages",
        wrap_tool_call: ToolCallWrapper | None = None,
        awrap_tool_call: AsyncToolCallWrapper | None = None,
    ) -> None:
        super().__init__(name=name, tags=tags)
        self._tools_by_name: dict[str, BaseTool] = {}
        self._injected: dict[str, InjectedArgs] = {}
        self._handle_tool_errors = handle_tool_errors
        self._messages_key = messages_key
        self._wrap_tool_call = wrap_tool_call
        self._awrap_tool_call = awrap_tool_call
        for item in tools:
            tool_ = item if isinstance(item, BaseTool) else create_tool(item)
            self._tools_by_name[tool_.name] = tool_
            self._injected[tool_.name] = injected_args(tool_)

    @classmethod
    def lc_id(cls) -> list[str]:
        """The class this node is in LangGraph (graph JSON names it)."""
        return ["langgraph", "prebuilt", "tool_node", "ToolNode"]

    @property
    def tools_by_name(self) -> dict[str, BaseTool]:
        """The node's tools by name."""
        return self._tools_by_name

    # --- running ------------------------------------------------------------------------

    def _prepare(
        self, input: Any, config: RunnableConfig
    ) -> tuple[list[ToolCall], InputType, list[ToolRuntime[Any, Any]]]:
        calls, input_type = self._parse_input(input)
        graph = GraphRuntime.of(config)
        tools = list(self._tools_by_name.values())
        runtimes = [
            ToolRuntime(
                state=self._state(input, config),
                context=graph.context,
                config=cfg,
                stream_writer=graph.stream_writer,
                tool_call_id=call["id"],
                store=graph.store,
                tools=tools,
                execution_info=graph.execution_info,
                server_info=graph.server_info,
            )
            for call, cfg in zip(calls, get_config_list(config, len(calls)), strict=True)
        ]
        return calls, input_type, runtimes

    def _run(self, input: Any, config: RunnableConfig) -> Any:
        calls, input_type, runtimes = self._prepare(input, config)
        with get_executor_for_config(config) as executor:
            outputs = list(executor.map(self._run_one, calls, [input_type] * len(calls), runtimes))
        return combine(outputs, input_type, self._messages_key)

    async def _arun(self, input: Any, config: RunnableConfig) -> Any:
        calls, input_type, runtimes = self._prepare(input, config)
        outputs = list(
            await asyncio.gather(
                *(
                    self._arun_one(call, input_type, runtime)
                    for call, runtime in zip(calls, runtimes, strict=True)
                )
            )
        )
        return combine(outputs, input_type, self._messages_key)

    def _parse_input(self, input: Any) -> tuple[list[ToolCall], InputType]:
        if isinstance(input, list):
            if input and isinstance(input[-1], dict) and input[-1].get("type") == "tool_call":
                return cast("list[ToolCall]", input), "tool_calls"
            messages: Any = input
            input_type: InputType = "list"
        elif isinstance(input, dict) and input.get("__type") == _WITH_CONTEXT:
            return [input["tool_call"]], "tool_calls"
        elif (isinstance(input, dict) and (messages := input.get(self._messages_key, []))) or (
            messages := getattr(input, self._messages_key, [])
        ):
            input_type = "dict"
        else:
            raise PrebuiltInputError("No message found in input")
        ai = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        if ai is None:
            raise PrebuiltInputError("No AIMessage found in input")
        return list(ai.tool_calls), input_type

    def _state(self, input: Any, config: RunnableConfig) -> Any:
        """The state the tools see: the input, the state sent with the calls, or, for bare
        tool calls (a ``Send`` of a list of calls), the graph's state read from the task
        (empty outside a graph), as LangGraph's ToolNode does."""
        if isinstance(input, dict) and input.get("__type") == _WITH_CONTEXT:
            return input["state"]
        if input and isinstance(input, list) and isinstance(input[-1], dict):
            conf = config.get(CONF, {})
            read_state = conf.get(CONFIG_KEY_READ_STATE)
            if read_state is not None:
                return read_state()
            return _read_channels(conf.get(CONFIG_KEY_READ))
        return input

    def _execute(
        self, request: ToolCallRequest, input_type: InputType, config: RunnableConfig
    ) -> Output | list[Output]:
        call, tool = request.tool_call, request.tool
        if tool is None:
            return self._invalid_tool_message(call)
        args = {**self._injected_call(call, _runtime_of(request), tool), "type": "tool_call"}
        try:
            try:
                response = tool.invoke(args, config)
            except ValidationError as exc:
                if is_invalid_resume(exc):
                    raise  # an interrupt's answer, not the model's arguments
                raise self._invocation_error(call, exc) from exc
            return normalize_output(response, call, input_type, self._messages_key)
        except GraphBubbleUp:
            raise
        except Exception as exc:  # noqa: BLE001 - handle_tool_errors decides, else re-raised
            return self._error_message(exc, call)

    async def _aexecute(
        self, request: ToolCallRequest, input_type: InputType, config: RunnableConfig
    ) -> Output | list[Output]:
        call, tool = request.tool_call, request.tool
        if tool is None:
            return self._invalid_tool_message(call)
        args = {**self._injected_call(call, _runtime_of(request), tool), "type": "tool_call"}
        try:
            try:
                response = await tool.ainvoke(args, config)
            except ValidationError as exc:
                if is_invalid_resume(exc):
                    raise  # an interrupt's answer, not the model's arguments
                raise self._invocation_error(call, exc) from exc
            return normalize_output(response, call, input_type, self._messages_key)
        except GraphBubbleUp:
            raise
        except Exception as exc:  # noqa: BLE001 - handle_tool_errors decides, else re-raised
            return self._error_message(exc, call)

    def _run_one(
        self, call: ToolCall, input_type: InputType, runtime: ToolRuntime[Any, Any]
    ) -> Output | list[Output]:
        request = self._request(call, runtime)
        if self._wrap_tool_call is None:
            return self._execute(request, input_type, runtime.config)

        def execute(req: ToolCallRequest) -> Any:
            return self._execute(req, input_type, runtime.config)

        try:
            return self._wrap_tool_call(request, execute)
        except GraphBubbleUp:
            raise
        except Exception as exc:  # noqa: BLE001 - handle_tool_errors decides, else re-raised
            return self._wrapper_error_message(exc, request.tool_call)

    async def _arun_one(
        self, call: ToolCall, input_type: InputType, runtime: ToolRuntime[Any, Any]
    ) -> Output | list[Output]:
        request = self._request(call, runtime)
        if self._awrap_tool_call is None and self._wrap_tool_call is None:
            return await self._aexecute(request, input_type, runtime.config)

        async def aexecute(req: ToolCallRequest) -> Any:
            return await self._aexecute(req, input_type, runtime.config)

        def execute(req: ToolCallRequest) -> Any:
            return self._execute(req, input_type, runtime.config)

        try:
            if self._awrap_tool_call is not None:
                return await self._awrap_tool_call(request, aexecute)
            assert self._wrap_tool_call is not None
            return self._wrap_tool_call(request, execute)
        except GraphBubbleUp:
            raise
        except Exception as exc:  # noqa: BLE001 - handle_tool_errors decides, else re-raised
            return self._wrapper_error_message(exc, request.tool_call)

    # --- helpers ------------------------------------------------------------------------

    def _request(self, call: ToolCall, runtime: ToolRuntime[Any, Any]) -> ToolCallRequest:
        return ToolCallRequest(
            tool_call=call,
            tool=self._tools_by_name.get(call["name"]),
            state=runtime.state,
            runtime=runtime,
        )

    def _injected_call(
        self, call: ToolCall, runtime: ToolRuntime[Any, Any], tool: BaseTool
    ) -> ToolCall:
        # A tool a wrapper swapped in is not in the table: read its arguments now.
        injected = self._injected.get(call["name"]) or injected_args(tool)
        if injected.state and isinstance(runtime.state, _BareCallsState):
            raise runtime.state.error(call["name"])
        return inject(call, injected, runtime, self._messages_key)

    def _invocation_error(self, call: ToolCall, exc: ValidationError) -> ToolInvocationError:
        errors = model_errors(exc, self._injected.get(call["name"]))
        return ToolInvocationError(call["name"], exc, call["args"], errors)

    def _invalid_tool_message(self, call: ToolCall) -> ToolMessage:
        content = INVALID_TOOL_NAME_ERROR_TEMPLATE.format(
            requested_tool=call["name"], available_tools=", ".join(self._tools_by_name)
        )
        return ToolMessage(content, name=call["name"], tool_call_id=call["id"], status="error")

    def _error_message(self, exc: Exception, call: ToolCall) -> ToolMessage:
        # A resume value an interrupt's response_schema refused fails the run whatever the
        # error handling: the model cannot fix it, and the interrupt stays pending.
        if is_invalid_resume(exc) or not isinstance(exc, handled_types(self._handle_tool_errors)):
            raise exc
        return self._as_message(exc, call)

    def _wrapper_error_message(self, exc: Exception, call: ToolCall) -> ToolMessage:
        # A wrapper's own error: handled whenever errors are handled at all.
        if not self._handle_tool_errors or is_invalid_resume(exc):
            raise exc
        return self._as_message(exc, call)

    def _as_message(self, exc: Exception, call: ToolCall) -> ToolMessage:
        return ToolMessage(
            content=error_content(exc, self._handle_tool_errors),
            name=call["name"],
            tool_call_id=call["id"],
            status="error",
        )


def _runtime_of(request: ToolCallRequest) -> ToolRuntime[Any, Any]:
    """The runtime the tool gets: the request's, with the request's state (a wrapper's
    ``override(state=...)`` reaches the tool's InjectedState and ``runtime.state``)."""
    runtime = request.runtime
    if runtime.state is not request.state:
        runtime = replace(runtime, state=request.state)
    return runtime


def _read_channels(read: Any) -> Any:
    """Every channel through a read function of LangGraph's shape (a ``functools.partial``
    whose second argument is the channels), as LangGraph's ToolNode reads them. Outside a
    graph there is no state: a tool that injects it gets a clear error."""
    args: tuple[Any, ...] = tuple(getattr(read, "args", ()))
    if read is None or len(args) < 2 or not isinstance(args[1], Mapping):
        return _BareCallsState()
    return read(list(args[1]), True)


class _BareCallsState(dict[str, Any]):
    """The "state" of bare tool calls run outside a graph: none."""

    def error(self, tool_name: str) -> PrebuiltInputError:
        return PrebuiltInputError(
            f"Tool {tool_name!r} reads the graph state (InjectedState), but ToolNode got bare "
            "tool calls outside a graph, which carry no state: run it in a graph (a Send of "
            "the calls gets the graph's state), send the calls with their state "
            "(ToolCallWithContext) or pass ToolNode the state or its messages."
        )


def tools_condition(
    state: list[AnyMessage] | dict[str, Any] | BaseModel,
    messages_key: str = "messages",
) -> Literal["tools", "__end__"]:
    """Route to ``"tools"`` if the last message has tool calls, else to the end.

    For ``add_conditional_edges(node, tools_condition)`` after a node calling a model
    with tools; ``state`` is a message list, or a state with ``messages_key``.
    """
    if isinstance(state, list):
        last = state[-1]
    elif (isinstance(state, dict) and (messages := state.get(messages_key, []))) or (
        messages := getattr(state, messages_key, [])
    ):
        last = messages[-1]
    else:
        raise PrebuiltInputError(f"No messages found in input state to tool_edge: {state}")
    if getattr(last, "tool_calls", None):
        return "tools"
    return "__end__"
