"""Input, output and context schemas of a ``Pregel`` graph, from its channels' types.

A single input (output) channel gives a root model of that channel's type; several give
an object with one optional field per channel, as LangGraph names them
(``LangGraphInput``, ``LangGraphOutput``).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, RootModel, TypeAdapter, create_model

from graphruntime.channels import BaseChannel, Topic
from graphruntime.warnings import LangGraphDeprecatedSinceV10

if TYPE_CHECKING:
    from graphruntime._internal._config import RunnableConfig

_MODEL_CONFIG = ConfigDict(arbitrary_types_allowed=True)


def value_type(channel: BaseChannel) -> Any:
    """The type of a channel's value as a reader sees it."""
    if isinstance(channel, Topic):
        return Sequence[channel.typ]  # type: ignore[name-defined]
    return channel.typ


def _model(
    name: str, channels: Mapping[str, BaseChannel], keys: str | Sequence[str]
) -> type[BaseModel]:
    if isinstance(keys, str):
        root = value_type(channels[keys]) if keys in channels else Any
        return create_model(name, __base__=RootModel[root])  # type: ignore[valid-type]
    fields: dict[str, Any] = {k: (value_type(channels[k]), None) for k in keys if k in channels}
    return create_model(name, __config__=_MODEL_CONFIG, **fields)


class PregelSchemas:
    """The schema methods of a ``Pregel`` graph (a mixin: it reads the graph's attributes)."""

    name: str
    channel_specs: dict[str, BaseChannel]
    input_channels: str | Sequence[str]
    output_channels: str | Sequence[str]
    context_schema: type[Any] | None

    def get_name(self, suffix: str | None = None) -> str:
        return f"{self.name}{suffix}" if suffix else self.name

    @property
    def InputType(self) -> Any:
        keys = self.input_channels
        return value_type(self.channel_specs[keys]) if isinstance(keys, str) else dict[str, Any]

    @property
    def OutputType(self) -> Any:
        keys = self.output_channels
        return value_type(self.channel_specs[keys]) if isinstance(keys, str) else dict[str, Any]

    def get_input_schema(self, config: RunnableConfig | None = None) -> type[BaseModel]:
        return _model(self.get_name("Input"), self.channel_specs, self.input_channels)

    def get_output_schema(self, config: RunnableConfig | None = None) -> type[BaseModel]:
        return _model(self.get_name("Output"), self.channel_specs, self.output_channels)

    @property
    def input_schema(self) -> type[BaseModel]:
        return self.get_input_schema()

    @property
    def output_schema(self) -> type[BaseModel]:
        return self.get_output_schema()

    def get_input_jsonschema(self, config: RunnableConfig | None = None) -> dict[str, Any]:
        return dict(self.get_input_schema(config).model_json_schema())

    def get_output_jsonschema(self, config: RunnableConfig | None = None) -> dict[str, Any]:
        return dict(self.get_output_schema(config).model_json_schema())

    def get_context_jsonschema(self) -> dict[str, Any] | None:
        schema = self.context_schema
        if schema is None:
            return None
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            return dict(schema.model_json_schema())
        return dict(TypeAdapter(schema).json_schema())

    def config_schema(self, *, include: Sequence[str] | None = None) -> type[BaseModel]:
        """Deprecated: the context schema as a model (use ``get_context_jsonschema``)."""
        warnings.warn(
            "`config_schema` is deprecated. Use `get_context_jsonschema` for the relevant "
            "schema instead.",
            category=LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        schema = self.context_schema
        if schema is None:
            return create_model(self.get_name("Config"))
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            return schema
        if dataclasses.is_dataclass(schema):
            fields: dict[str, Any] = {f.name: (f.type, ...) for f in dataclasses.fields(schema)}
            model: type[BaseModel] = create_model(
                self.get_name("Config"), __config__=_MODEL_CONFIG, **fields
            )
            return model
        return create_model(self.get_name("Config"), __base__=RootModel[schema])  # type: ignore[valid-type]
