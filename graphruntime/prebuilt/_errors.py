"""Errors of the prebuilt nodes; all in graphruntime's tree and LangGraph's built-in types."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.tools import ToolException

from graphruntime.errors import GraphRuntimeError

if TYPE_CHECKING:
    from pydantic import ValidationError
    from pydantic_core import ErrorDetails

TOOL_INVOCATION_ERROR_TEMPLATE = (
    "Error invoking tool '{tool_name}' with kwargs {tool_kwargs} with error:\n"
    " {error}\n"
    " Please fix the error and try again."
)


class PrebuiltInputError(GraphRuntimeError, ValueError):
    """A prebuilt node got input it cannot work with (no messages, no AIMessage...)."""


class AsyncOnlyError(GraphRuntimeError, RuntimeError):
    """Something async-only (a model picker) was run by the sync API: use ainvoke/astream."""


class InjectedStateError(PrebuiltInputError, KeyError, AttributeError):
    """A tool asked for a state key (``InjectedState("key")``) the state does not have."""

    def __str__(self) -> str:
        # KeyError's str() would quote the message.
        return str(self.args[0]) if self.args else ""


class InvalidToolOutputError(GraphRuntimeError, ValueError, TypeError):
    """A tool returned something ``ToolNode`` cannot turn into a state update."""


class ToolInvocationError(ToolException, GraphRuntimeError):
    """The model called a tool with arguments that fail its schema.

    Raised (and, by default, turned into an error ``ToolMessage`` for the model to
    read) only by ``ToolNode``. ``message`` lists the failing arguments the model
    controls; arguments the graph injects (state, store, runtime) are left out.
    """

    def __init__(
        self,
        tool_name: str,
        source: ValidationError,
        tool_kwargs: dict[str, Any],
        filtered_errors: list[ErrorDetails] | None = None,
    ) -> None:
        if filtered_errors is not None:
            shown = "\n".join(
                f"{'.'.join(str(part) for part in error.get('loc', ()))}: "
                f"{error.get('msg', 'Unknown error')}"
                for error in filtered_errors
            )
        else:
            shown = str(source)
        self.message = TOOL_INVOCATION_ERROR_TEMPLATE.format(
            tool_name=tool_name, tool_kwargs=tool_kwargs, error=shown
        )
        self.tool_name = tool_name
        self.tool_kwargs = tool_kwargs
        self.source = source
        self.filtered_errors = filtered_errors
        super().__init__(self.message)


class UnknownToolError(PrebuiltInputError, KeyError):
    """A tool call names a tool (or schema) the node does not have."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""
