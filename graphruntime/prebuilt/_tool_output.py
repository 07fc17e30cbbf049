"""What a tool returned, checked and shaped into the ``ToolNode``'s state update."""

from __future__ import annotations

import json
from copy import deepcopy
from dataclasses import replace
from typing import Any, Literal, cast

from langchain_core.messages import RemoveMessage, ToolCall, ToolMessage, convert_to_messages
from langchain_core.messages.tool import ToolOutputMixin
from langchain_core.tools.base import TOOL_MESSAGE_BLOCK_TYPES

from graphruntime.graph.message import REMOVE_ALL_MESSAGES
from graphruntime.prebuilt._errors import InvalidToolOutputError
from graphruntime.types import Command, Send


def _commands_are_tool_outputs() -> None:
    """Let LangChain tools return graphruntime's ``Command`` as they return LangGraph's.

    A LangChain tool wraps whatever it returns in a ``ToolMessage`` unless it is a
    ``ToolOutputMixin``; LangGraph's ``Command`` is one. graphruntime's core does not
    import langchain-core, so its ``Command`` becomes one here, when tools are in play.
    """
    if not issubclass(Command, ToolOutputMixin):
        Command.__bases__ = (*Command.__bases__, ToolOutputMixin)


_commands_are_tool_outputs()

InputType = Literal["list", "dict", "tool_calls"]
"""How the tool calls reached ``ToolNode``: messages, a state, or bare tool calls."""

Output = ToolMessage | Command[Any]


def msg_content_output(output: Any) -> str | list[dict[str, Any]]:
    """A tool's return value as ``ToolMessage`` content: text, content blocks, or JSON."""
    if isinstance(output, str) or (
        isinstance(output, list)
        and all(isinstance(x, dict) and x.get("type") in TOOL_MESSAGE_BLOCK_TYPES for x in output)
    ):
        return output
    try:
        return json.dumps(output, ensure_ascii=False)
    except (TypeError, ValueError):  # not JSON-serializable: its text, as LangGraph does
        return str(output)


def _content(value: Any) -> str | list[str | dict[str, Any]]:
    return cast("str | list[str | dict[str, Any]]", msg_content_output(value))


def normalize(
    response: Any, call: ToolCall, input_type: InputType, messages_key: str
) -> Output | list[Output]:
    """Check what one tool call returned: a ToolMessage, a Command, or a list of them."""
    if isinstance(response, Command):
        return _checked_command(response, call, input_type, messages_key)
    if isinstance(response, ToolMessage):
        response.content = _content(response.content)
        return response
    if isinstance(response, list):
        if all(isinstance(r, (Command, ToolMessage)) for r in response):
            return _checked_list(response, call, input_type, messages_key)
        raise InvalidToolOutputError(
            f"Tool {call['name']} returned a list with invalid element types: expected all "
            "Command or ToolMessage"
        )
    raise InvalidToolOutputError(f"Tool {call['name']} returned unexpected type: {type(response)}")


def _answers(message: Any, call_id: str | None) -> bool:
    return isinstance(message, ToolMessage) and message.tool_call_id == call_id


def _checked_list(
    response: list[Output], call: ToolCall, input_type: InputType, messages_key: str
) -> list[Output]:
    """Several outputs for one call: exactly one ToolMessage must answer the call."""
    answers = 0
    for item in response:
        if isinstance(item, ToolMessage):
            answers += _answers(item, call["id"])
        elif isinstance(item.update, dict):
            answers += sum(_answers(m, call["id"]) for m in item.update.get(messages_key, []))
    if answers != 1:
        raise InvalidToolOutputError(
            f"Tool {call['name']} returned a list with {answers} messages bound to "
            f"tool_call_id {call['id']!r}; expected exactly one terminating ToolMessage."
        )
    checked: list[Output] = []
    for item in response:
        if isinstance(item, Command):
            checked.append(
                _checked_command(item, call, input_type, messages_key, require_answer=False)
            )
        else:
            item.content = _content(item.content)
            checked.append(item)
    return checked


def _checked_command(
    command: Command[Any],
    call: ToolCall,
    input_type: InputType,
    messages_key: str,
    *,
    require_answer: bool = True,
) -> Command[Any]:
    """A Command's messages must fit the input's shape and answer the call.

    A Command for this graph must carry the ``ToolMessage`` answering the call:
    every tool call in the history needs its answer. Its name is set to the tool's.
    """
    if isinstance(command.update, dict):
        if input_type not in ("dict", "tool_calls"):
            raise InvalidToolOutputError(
                "Tools can provide a dict in Command.update only when using dict with "
                f"'{messages_key}' key as ToolNode input, got: {command.update} for tool "
                f"'{call['name']}'"
            )
        command = deepcopy(command)
        messages = cast("dict[str, Any]", command.update).get(messages_key, [])
    elif isinstance(command.update, list):
        if input_type != "list":
            raise InvalidToolOutputError(
                "Tools can provide a list of messages in Command.update only when using list "
                f"of messages as ToolNode input, got: {command.update} for tool "
                f"'{call['name']}'"
            )
        command = deepcopy(command)
        messages = command.update
    else:
        return command
    messages = convert_to_messages(messages)
    if messages == [RemoveMessage(id=REMOVE_ALL_MESSAGES)]:
        return command
    answered = False
    for message in messages:
        if _answers(message, call["id"]):
            message.name = call["name"]
            answered = True
    if require_answer and command.graph is None and not answered:
        example = (
            '`Command(update={"messages": [ToolMessage("Success", tool_call_id=tool_call_id), '
            "...]}, ...)`"
            if input_type == "dict"
            else '`Command(update=[ToolMessage("Success", tool_call_id=tool_call_id), ...], ...)`'
        )
        raise InvalidToolOutputError(
            f"Expected to have a matching ToolMessage in Command.update for tool "
            f"'{call['name']}', got: {messages}. Every tool call (LLM requesting to call a "
            "tool) in the message history MUST have a corresponding ToolMessage. You can fix "
            f"it by modifying the tool to return {example}."
        )
    return command


def combine(outputs: list[Output | list[Output]], input_type: InputType, messages_key: str) -> Any:
    """The node's return value for all its calls' outputs.

    Plain messages: ``{messages_key: [...]}`` (a list for list input). With Commands:
    a list of the Commands and one update per message; Commands that only send to
    the parent graph are merged into one.
    """
    flat: list[Output] = []
    for output in outputs:
        if isinstance(output, list):
            flat.extend(output)
        else:
            flat.append(output)
    if not any(isinstance(o, Command) for o in flat):
        return flat if input_type == "list" else {messages_key: flat}
    combined: list[Any] = []
    to_parent: Command[Any] | None = None
    for output in flat:
        if not isinstance(output, Command):
            combined.append([output] if input_type == "list" else {messages_key: [output]})
        elif (
            output.graph == Command.PARENT
            and isinstance(output.goto, list)
            and all(isinstance(s, Send) for s in output.goto)
        ):
            if to_parent is None:
                to_parent = Command(graph=Command.PARENT, goto=output.goto)
            else:
                to_parent = replace(to_parent, goto=[*to_parent.goto, *output.goto])  # type: ignore[misc]
        else:
            combined.append(output)
    if to_parent is not None:
        combined.append(to_parent)
    return combined
