"""``ValidationNode``: check tool calls against schemas without running them.

As ``langgraph.prebuilt.tool_validator``. For extraction: the model's tool calls are
validated with pydantic and each answered by a ``ToolMessage`` holding the validated
JSON or, with ``additional_kwargs={"is_error": True}``, the validation error, so the
model can be asked again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import get_executor_for_config
from langchain_core.tools import BaseTool, create_schema_from_function
from pydantic import BaseModel, ValidationError
from pydantic.v1 import BaseModel as BaseModelV1
from pydantic.v1 import ValidationError as ValidationErrorV1

from graphruntime.prebuilt._base import PrebuiltNode
from graphruntime.prebuilt._errors import PrebuiltInputError, UnknownToolError

__all__ = ("ValidationNode",)

Schema = type[BaseModel] | type[BaseModelV1]
FormatError = Callable[[BaseException, ToolCall, Any], str]


def _default_format_error(error: BaseException, call: ToolCall, schema: Any) -> str:
    return f"{error!r}\n\nRespond after fixing all validation errors."


def _schema_of(item: BaseTool | type[BaseModel] | Callable[..., Any]) -> tuple[str, Schema]:
    if isinstance(item, BaseTool):
        args_schema = item.args_schema
        if args_schema is None:
            raise PrebuiltInputError(f"Tool {item.name} does not have an args_schema defined.")
        if not (isinstance(args_schema, type) and issubclass(args_schema, BaseModel)):
            raise PrebuiltInputError(
                "Validation node only works with tools that have a pydantic BaseModel "
                f"args_schema. Got {item.name} with args_schema: {args_schema}."
            )
        return item.name, args_schema
    if isinstance(item, type) and issubclass(item, (BaseModel, BaseModelV1)):
        return item.__name__, item
    if callable(item):
        return item.__name__, create_schema_from_function("Validation", item)
    raise PrebuiltInputError(
        "Unsupported input to ValidationNode. Expected BaseModel, tool or function. "
        f"Got: {type(item)}."
    )


class ValidationNode(PrebuiltNode):
    """Validates every tool call of the last ``AIMessage`` (state ``messages`` or a list).

    ``schemas``: pydantic models (validated by class name), tools (their
    ``args_schema``) or functions (a schema from the signature). ``format_error``
    makes the content of an error message from ``(error, call, schema)``.
    """

    def __init__(
        self,
        schemas: Sequence[BaseTool | type[BaseModel] | Callable[..., Any]],
        *,
        format_error: FormatError | None = None,
        name: str = "validation",
        tags: list[str] | None = None,
    ) -> None:
        super().__init__(name=name, tags=tags)
        self._format_error = format_error or _default_format_error
        self.schemas_by_name: dict[str, Schema] = dict(_schema_of(s) for s in schemas)

    @classmethod
    def lc_id(cls) -> list[str]:
        """The class this node is in LangGraph (graph JSON names it)."""
        return ["langgraph", "prebuilt", "tool_validator", "ValidationNode"]

    def _run(self, input: Any, config: RunnableConfig) -> Any:
        if isinstance(input, list):
            as_list, messages = True, input
        elif isinstance(input, dict) and (messages := input.get("messages", [])):
            as_list = False
        else:
            raise PrebuiltInputError("No message found in input")
        last = messages[-1]
        if not isinstance(last, AIMessage):
            raise PrebuiltInputError("Last message is not an AIMessage")
        with get_executor_for_config(config) as executor:
            outputs = list(executor.map(self._validate, last.tool_calls))
        return outputs if as_list else {"messages": outputs}

    def _validate(self, call: ToolCall) -> ToolMessage:
        schema = self.schemas_by_name.get(call["name"])
        if schema is None:
            raise UnknownToolError(
                f"ValidationNode has no schema named {call['name']!r}; it has: "
                f"{', '.join(self.schemas_by_name)}"
            )
        call_id = cast(str, call["id"])
        try:
            if issubclass(schema, BaseModel):
                content = schema.model_validate(call["args"]).model_dump_json()
            else:
                content = schema.validate(call["args"]).json()
        except (ValidationError, ValidationErrorV1) as error:
            return ToolMessage(
                content=self._format_error(error, call, schema),
                name=call["name"],
                tool_call_id=call_id,
                additional_kwargs={"is_error": True},
            )
        return ToolMessage(content=content, name=call["name"], tool_call_id=call_id)
