"""``create_react_agent``: a model that calls tools in a loop (as ``langgraph.prebuilt``).

Needs langchain-core (``pip install 'graphruntime[messages]'``). The graph:
``[pre_model_hook] -> agent -> [post_model_hook] -> tools -> agent ...`` until the
model answers without tool calls, then ``[generate_structured_response]`` and END.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, Literal, NotRequired, TypeVar, cast, get_type_hints

from langchain_core.language_models import BaseChatModel, LanguageModelLike
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from pydantic import BaseModel, create_model
from typing_extensions import TypedDict, deprecated

from graphruntime._internal._constants import CONF, CONFIG_KEY_SCRATCHPAD
from graphruntime.constants import END
from graphruntime.errors import InvalidArgumentTypeError, MissingDependencyError
from graphruntime.graph.message import add_messages
from graphruntime.graph.state import CompiledStateGraph, StateGraph
from graphruntime.prebuilt._agent_model import (
    Prompt,
    chat_model,
    prompt_runnable,
    should_bind_tools,
    state_value,
    validate_chat_history,
)
from graphruntime.prebuilt._base import FunctionNode
from graphruntime.prebuilt._errors import AsyncOnlyError, PrebuiltInputError
from graphruntime.prebuilt._runtime import GraphRuntime
from graphruntime.prebuilt.tool_node import ToolCallWithContext, ToolNode
from graphruntime.types import Send
from graphruntime.warnings import LangGraphDeprecatedSinceV10

__all__ = (
    "AgentState",
    "AgentStatePydantic",
    "AgentStateWithStructuredResponse",
    "AgentStateWithStructuredResponsePydantic",
    "create_react_agent",
    "create_tool_calling_executor",
)

StructuredResponse = dict[str, Any] | BaseModel
StructuredResponseSchema = dict[str, Any] | type[BaseModel]


# Deprecated as in LangGraph 1.0 (which moved them to `langchain.agents`); kept for ports.
# Their JSON schemas say so, as LangGraph's do.
_STATE_DEPRECATED = (
    "{} is deprecated since LangGraph v1.0: declare the agent's state yourself (a "
    "`messages` key with add_messages and a `remaining_steps` key)."
)


@deprecated(_STATE_DEPRECATED.format("AgentState"), category=LangGraphDeprecatedSinceV10)
class AgentState(TypedDict):
    """The state of the agent."""

    messages: Annotated[Sequence[BaseMessage], add_messages]
    # LangGraph's managed value: the agent computes it from the run's recursion limit
    # itself, so a value given here is never read.
    remaining_steps: NotRequired[int]


@deprecated(_STATE_DEPRECATED.format("AgentStatePydantic"), category=LangGraphDeprecatedSinceV10)
class AgentStatePydantic(BaseModel):
    """The state of the agent."""

    messages: Annotated[Sequence[BaseMessage], add_messages]
    remaining_steps: int = 25


with warnings.catch_warnings():
    warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)

    @deprecated(
        _STATE_DEPRECATED.format("AgentStateWithStructuredResponse"),
        category=LangGraphDeprecatedSinceV10,
    )
    class AgentStateWithStructuredResponse(AgentState):
        """The state of the agent with a structured response."""

        structured_response: StructuredResponse

    @deprecated(
        _STATE_DEPRECATED.format("AgentStateWithStructuredResponsePydantic"),
        category=LangGraphDeprecatedSinceV10,
    )
    class AgentStateWithStructuredResponsePydantic(AgentStatePydantic):
        """The state of the agent with a structured response."""

        structured_response: StructuredResponse


StateSchema = TypeVar("StateSchema", bound=AgentState | AgentStatePydantic)
StateSchemaType = type[StateSchema]

DynamicModel = Callable[[Any, Any], Any]
"""``(state, runtime) -> model``: picks the model (with its tools bound) per call."""


def _remaining_steps(config: RunnableConfig) -> int | None:
    """Steps left before the recursion limit (LangGraph's ``RemainingSteps``)."""
    scratchpad = (config.get(CONF) or {}).get(CONFIG_KEY_SCRATCHPAD)
    if scratchpad is None:
        return None
    return int(scratchpad.stop - scratchpad.step)


def _check_state_schema(state_schema: Any, response_format: Any) -> None:
    required = {"messages", "remaining_steps"}
    if response_format is not None:
        required.add("structured_response")
    if missing := required - set(get_type_hints(state_schema)):
        raise PrebuiltInputError(f"Missing required key(s) {missing} in state_schema")


class _Agent:
    """The agent's model calls; one instance per compiled agent."""

    def __init__(
        self,
        model: Any,
        tools: list[BaseTool],
        builtin_tools: list[dict[str, Any]],
        *,
        prompt: Prompt | None,
        response_format: Any,
        pre_model_hook: bool,
        state_schema: Any,
        name: str | None,
    ) -> None:
        self.dynamic = not isinstance(model, (str, Runnable)) and callable(model)
        self.async_dynamic = self.dynamic and inspect.iscoroutinefunction(model)
        self.prompt = prompt
        self.response_format = response_format
        self.pre_model_hook = pre_model_hook
        self.state_schema = state_schema
        self.name = name
        self.return_direct = {t.name for t in tools if t.return_direct}
        self.model = model
        self.static: Runnable[Any, Any] | None = None
        if not self.dynamic:
            if isinstance(model, str):
                model = _init_chat_model(model)
            if should_bind_tools(model, tools, num_builtin=len(builtin_tools)) and (
                tools or builtin_tools
            ):
                model = cast(BaseChatModel, model).bind_tools([*tools, *builtin_tools])
            self.static = prompt_runnable(prompt) | model

    # --- the model ----------------------------------------------------------------------

    def _runtime(self, config: RunnableConfig) -> Any:
        graph = GraphRuntime.of(config)
        return graph.runtime if graph.runtime is not None else graph

    def _with_prompt(self, model: Any) -> Runnable[Any, Any]:
        return cast("Runnable[Any, Any]", prompt_runnable(self.prompt) | model)

    def _resolve(self, state: Any, config: RunnableConfig) -> Runnable[Any, Any]:
        if self.async_dynamic:
            raise AsyncOnlyError(
                "Async model callable provided but agent invoked synchronously. Use "
                "agent.ainvoke() or agent.astream(), or provide a sync model callable."
            )
        if self.dynamic:
            return self._with_prompt(self.model(state, self._runtime(config)))
        assert self.static is not None
        return self.static

    async def _aresolve(self, state: Any, config: RunnableConfig) -> Runnable[Any, Any]:
        if self.async_dynamic:
            return self._with_prompt(await self.model(state, self._runtime(config)))
        if self.dynamic:
            return self._with_prompt(self.model(state, self._runtime(config)))
        assert self.static is not None
        return self.static

    def _model_input(self, state: Any) -> Any:
        messages = None
        if self.pre_model_hook:
            messages = state_value(state, "llm_input_messages")
        messages = messages or state_value(state, "messages")
        if messages is None:
            keys = (
                "'llm_input_messages' or 'messages' key"
                if self.pre_model_hook
                else ("'messages' key")
            )
            raise PrebuiltInputError(
                f"Expected input to call_model to have {keys}, but got {state}"
            )
        validate_chat_history(messages)
        # The prompt reads `messages`: hand it the hook's messages under that key.
        if isinstance(state, BaseModel):
            return state.model_copy(update={"messages": messages})
        return {**state, "messages": messages}

    def _answer(self, response: AIMessage, config: RunnableConfig) -> dict[str, Any]:
        response.name = self.name
        if self._needs_more_steps(response, config):
            return {
                "messages": [
                    AIMessage(
                        id=response.id, content="Sorry, need more steps to process this request."
                    )
                ]
            }
        return {"messages": [response]}

    def _needs_more_steps(self, response: BaseMessage, config: RunnableConfig) -> bool:
        remaining = _remaining_steps(config)
        if remaining is None or not isinstance(response, AIMessage):
            return False
        calls = response.tool_calls
        if remaining < 1 and all(c["name"] in self.return_direct for c in calls):
            return True
        return remaining < 2 and bool(calls)

    def call_model(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        model = self._resolve(state, config)
        response = model.invoke(self._model_input(state), config)
        return self._answer(cast(AIMessage, response), config)

    async def acall_model(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        model = await self._aresolve(state, config)
        response = await model.ainvoke(self._model_input(state), config)
        return self._answer(cast(AIMessage, response), config)

    # --- structured response ------------------------------------------------------------

    def _structured_input(self, state: Any) -> tuple[list[Any], Any]:
        messages = list(state_value(state, "messages"))
        schema = self.response_format
        if isinstance(schema, tuple):
            system_prompt, schema = schema
            messages = [SystemMessage(content=system_prompt), *messages]
        return messages, schema

    def structured_response(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        messages, schema = self._structured_input(state)
        model = chat_model(self._resolve(state, config)).with_structured_output(schema)
        return {"structured_response": model.invoke(messages, config)}

    async def astructured_response(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        messages, schema = self._structured_input(state)
        model = chat_model(await self._aresolve(state, config)).with_structured_output(schema)
        return {"structured_response": await model.ainvoke(messages, config)}


def _init_chat_model(model: str) -> Any:
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as exc:
        raise MissingDependencyError(
            "Please install langchain (`pip install langchain`) to use '<provider>:<model>' "
            "string syntax for `model` parameter."
        ) from exc
    return init_chat_model(model)


def _model_input_schema(state_schema: Any) -> Any:
    """The agent node's input with a pre-model hook: the state plus ``llm_input_messages``."""
    if isinstance(state_schema, type) and issubclass(state_schema, BaseModel):
        return create_model(
            "CallModelInputSchema",
            llm_input_messages=(list[AnyMessage], ...),
            __base__=state_schema,
        )

    class CallModelInputSchema(state_schema):  # type: ignore[misc]
        llm_input_messages: list[AnyMessage]

    return CallModelInputSchema


def _tool_sends(calls: Sequence[Any], state: Any) -> list[Send]:
    """One ``tools`` task per call, each carrying the state its tools see."""
    return [
        Send(
            "tools",
            ToolCallWithContext(__type="tool_call_with_context", tool_call=call, state=state),
        )
        for call in calls
    ]


def create_react_agent(
    model: str | LanguageModelLike | DynamicModel | Callable[[Any, Any], Awaitable[Any]],
    tools: Sequence[BaseTool | Callable[..., Any] | dict[str, Any]] | ToolNode,
    *,
    prompt: Prompt | None = None,
    response_format: StructuredResponseSchema | tuple[str, StructuredResponseSchema] | None = None,
    pre_model_hook: Any = None,
    post_model_hook: Any = None,
    state_schema: Any = None,
    context_schema: type[Any] | None = None,
    checkpointer: Any = None,
    store: Any = None,
    interrupt_before: list[str] | None = None,
    interrupt_after: list[str] | None = None,
    debug: bool = False,
    version: Literal["v1", "v2"] = "v2",
    name: str | None = None,
    **deprecated_kwargs: Any,
) -> CompiledStateGraph:
    """A graph that calls ``model`` and runs the tools it asks for until it answers.

    ``model``: a chat model (tools are bound to it unless they already are), a
    ``"provider:model"`` string (needs ``langchain``), or ``(state, runtime) -> model``
    (sync or async) to pick one per call. ``tools``: tools, functions, provider
    built-in tool dicts, or a ``ToolNode``; none makes a single-node graph.
    ``prompt``: a system prompt or a function/runnable from state to model input.
    ``response_format``: a schema (or ``(prompt, schema)``) for a final structured
    answer in ``structured_response``. ``pre_model_hook`` / ``post_model_hook``:
    nodes around the model call (a pre-hook may set ``llm_input_messages`` to
    change the model input without changing the history). ``version="v2"`` runs
    each tool call as its own task (``Send``); ``"v1"`` runs all in one task.
    When fewer than two steps are left before the recursion limit, a tool-calling
    answer is replaced by "Sorry, need more steps to process this request.".

    Unlike LangGraph, this does not warn that ``create_react_agent`` moved to
    ``langchain.agents``: that factory builds LangGraph graphs, not graphruntime's.
    """
    if (config_schema := deprecated_kwargs.pop("config_schema", None)) is not None:
        warnings.warn(
            "`config_schema` is deprecated and will be removed. Please use `context_schema` "
            "instead.",
            category=LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        context_schema = context_schema or config_schema
    if deprecated_kwargs:
        raise InvalidArgumentTypeError(
            f"create_react_agent() got unexpected keyword arguments: {deprecated_kwargs}"
        )
    if version not in ("v1", "v2"):
        raise PrebuiltInputError(
            f"Invalid version {version}. Supported versions are 'v1' and 'v2'."
        )
    if state_schema is not None:
        _check_state_schema(state_schema, response_format)
    else:
        state_schema = (
            AgentStateWithStructuredResponse if response_format is not None else AgentState
        )

    builtin_tools: list[dict[str, Any]] = []
    if isinstance(tools, ToolNode):
        tool_node = tools
    else:
        builtin_tools = [t for t in tools if isinstance(t, dict)]
        tool_node = ToolNode([t for t in tools if not isinstance(t, dict)])
    tool_classes = list(tool_node.tools_by_name.values())
    agent = _Agent(
        model,
        tool_classes,
        builtin_tools,
        prompt=prompt,
        response_format=response_format,
        pre_model_hook=pre_model_hook is not None,
        state_schema=state_schema,
        name=name,
    )

    workflow = StateGraph(state_schema, context_schema=context_schema)
    workflow.add_node(
        "agent",
        FunctionNode(agent.call_model, agent.acall_model, name="agent"),
        input_schema=(
            _model_input_schema(state_schema) if pre_model_hook is not None else state_schema
        ),
    )
    if tool_classes:  # added next, as LangGraph does: graph drawings list nodes in order
        workflow.add_node("tools", tool_node)
    entrypoint = "agent"
    if pre_model_hook is not None:
        workflow.add_node("pre_model_hook", pre_model_hook)
        workflow.add_edge("pre_model_hook", "agent")
        entrypoint = "pre_model_hook"
    workflow.set_entry_point(entrypoint)
    if post_model_hook is not None:
        workflow.add_node("post_model_hook", post_model_hook)
        workflow.add_edge("agent", "post_model_hook")
    if response_format is not None:
        workflow.add_node(
            "generate_structured_response",
            FunctionNode(
                agent.structured_response,
                agent.astructured_response,
                name="generate_structured_response",
            ),
        )

    if tool_classes:
        _route_tools(
            workflow, agent, entrypoint, version, post_model_hook is not None, response_format
        )
    elif response_format is not None:
        source = "post_model_hook" if post_model_hook is not None else "agent"
        workflow.add_edge(source, "generate_structured_response")

    compile_kwargs: dict[str, Any] = {} if store is None else {"store": store}
    return workflow.compile(
        checkpointer=checkpointer,
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        debug=debug,
        name=name,
        **compile_kwargs,
    )


def _route_tools(
    workflow: StateGraph,
    agent: _Agent,
    entrypoint: str,
    version: str,
    post_hook: bool,
    response_format: Any,
) -> None:
    """The edges of a graph with tools: model -> tools -> model, until no tool calls."""
    finish = "generate_structured_response" if response_format is not None else END

    def should_continue(state: Any) -> str | list[Send]:
        last = state_value(state, "messages")[-1]
        if not isinstance(last, AIMessage) or not last.tool_calls:
            return "post_model_hook" if post_hook else finish
        if version == "v1":
            return "tools"
        if post_hook:
            return "post_model_hook"
        return _tool_sends(last.tool_calls, state)

    agent_paths = ["post_model_hook"] if post_hook else ["tools", finish]
    workflow.add_conditional_edges("agent", should_continue, path_map=agent_paths)

    if post_hook:

        def post_model_hook_router(state: Any) -> str | list[Send]:
            """Pending tool calls -> tools; a tool's answer -> the model; else finish."""
            messages = state_value(state, "messages")
            answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
            last_ai = next(m for m in reversed(messages) if isinstance(m, AIMessage))
            pending = [c for c in last_ai.tool_calls if c["id"] not in answered]
            if pending:
                return _tool_sends(pending, state)
            if isinstance(messages[-1], ToolMessage):
                return entrypoint
            return finish

        workflow.add_conditional_edges(
            "post_model_hook", post_model_hook_router, path_map=[entrypoint, "tools", finish]
        )

    if not agent.return_direct:
        workflow.add_edge("tools", entrypoint)
        return

    def route_tool_responses(state: Any) -> str:
        message: Any = None
        for message in reversed(state_value(state, "messages")):
            if not isinstance(message, ToolMessage):
                break
            if message.name in agent.return_direct:
                return END
        # Parallel calls: the return_direct tool may have answered in another task.
        if isinstance(message, AIMessage) and any(
            c["name"] in agent.return_direct for c in message.tool_calls
        ):
            return END
        return entrypoint

    workflow.add_conditional_edges("tools", route_tool_responses, path_map=[entrypoint, END])


create_tool_calling_executor = create_react_agent
"""The former name of :func:`create_react_agent`."""
