"""The model side of ``create_react_agent``: the prompt, tool binding, history checks."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.runnables import (
    Runnable,
    RunnableBinding,
    RunnableConfig,
    RunnableLambda,
    RunnableSequence,
)
from langchain_core.tools import BaseTool

from graphruntime._internal._call import injected_kwargs
from graphruntime.errors import ErrorCode, create_error_message
from graphruntime.prebuilt._errors import PrebuiltInputError

PROMPT_RUNNABLE_NAME = "Prompt"

Prompt = (
    SystemMessage | str | Callable[[Any], LanguageModelInput] | Runnable[Any, LanguageModelInput]
)
"""A system prompt (text or message), or a function/runnable from state to model input.

A prompt function gets the keyword arguments it asks for, as a node does (``config``,
``store``, ``runtime``, ...).
"""


def state_value(state: Any, key: str, default: Any = None) -> Any:
    """``state[key]`` for a dict state, ``state.key`` for a pydantic/dataclass one."""
    if isinstance(state, dict):
        return state.get(key, default)
    return getattr(state, key, default)


def prompt_runnable(prompt: Prompt | None) -> Runnable[Any, Any]:
    """The runnable that turns the state into the model's input."""
    if prompt is None:
        return RunnableLambda(
            lambda state: state_value(state, "messages"), name=PROMPT_RUNNABLE_NAME
        )
    if isinstance(prompt, str):
        system = SystemMessage(content=prompt)
        return RunnableLambda(
            lambda state: [system, *state_value(state, "messages")], name=PROMPT_RUNNABLE_NAME
        )
    if isinstance(prompt, SystemMessage):
        message = prompt
        return RunnableLambda(
            lambda state: [message, *state_value(state, "messages")], name=PROMPT_RUNNABLE_NAME
        )
    if isinstance(prompt, Runnable):
        return prompt
    if inspect.iscoroutinefunction(prompt):
        aprompt = prompt

        async def acall(state: Any, config: RunnableConfig) -> Any:
            return await aprompt(state, **injected_kwargs(aprompt, config))

        return RunnableLambda(acall, name=PROMPT_RUNNABLE_NAME)
    if callable(prompt):
        sprompt = prompt

        def call(state: Any, config: RunnableConfig) -> Any:
            return sprompt(state, **injected_kwargs(sprompt, config))

        return RunnableLambda(call, name=PROMPT_RUNNABLE_NAME)
    raise PrebuiltInputError(f"Got unexpected type for `prompt`: {type(prompt)}")


def _inner_model(model: Any) -> Any:
    """The chat model or binding inside ``prompt | model``, else ``model`` itself."""
    if isinstance(model, RunnableSequence):
        return next(
            (s for s in model.steps if isinstance(s, (RunnableBinding, BaseChatModel))), model
        )
    return model


def should_bind_tools(model: Any, tools: Sequence[BaseTool], num_builtin: int = 0) -> bool:
    """Whether ``model`` still needs ``bind_tools``; checks tools bound already match."""
    model = _inner_model(model)
    if not isinstance(model, RunnableBinding) or "tools" not in model.kwargs:
        return True
    bound = model.kwargs["tools"]
    if len(tools) != len(bound) - num_builtin:
        raise PrebuiltInputError(
            "Number of tools in the model.bind_tools() and tools passed to create_react_agent "
            f"must match Got {len(tools)} tools, expected {len(bound) - num_builtin}"
        )
    bound_names = set()
    for spec in bound:
        if spec.get("type") == "function":  # OpenAI's format
            bound_names.add(spec["function"]["name"])
        elif spec.get("name"):  # Anthropic's format
            bound_names.add(spec["name"])
    if missing := {t.name for t in tools} - bound_names:
        raise PrebuiltInputError(f"Missing tools '{missing}' in the model.bind_tools()")
    return False


def chat_model(model: Any) -> BaseChatModel:
    """The ``BaseChatModel`` behind a model, a binding of one, or ``prompt | model``."""
    model = _inner_model(model)
    if isinstance(model, RunnableBinding):
        model = model.bound
    if not isinstance(model, BaseChatModel):
        raise PrebuiltInputError(
            "Expected `model` to be a ChatModel or RunnableBinding (e.g. "
            f"model.bind_tools(...)), got {type(model)}"
        )
    return model


class InvalidChatHistoryError(PrebuiltInputError):
    """An AI message's tool calls lack their ``ToolMessage`` answers."""


def validate_chat_history(messages: Sequence[BaseMessage]) -> None:
    """Every tool call in the history must have its ``ToolMessage`` (providers require it)."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    unanswered = [
        call
        for m in messages
        if isinstance(m, AIMessage)
        for call in m.tool_calls
        if call["id"] not in answered
    ]
    if not unanswered:
        return
    raise InvalidChatHistoryError(
        create_error_message(
            message="Found AIMessages with tool_calls that do not have a corresponding "
            f"ToolMessage. Here are the first few of those tool calls: {unanswered[:3]}.\n\n"
            "Every tool call (LLM requesting to call a tool) in the message history MUST have "
            "a corresponding ToolMessage (result of a tool invocation to return to the LLM) - "
            "this is required by most LLM providers.",
            error_code=ErrorCode.INVALID_CHAT_HISTORY,
        )
    )
