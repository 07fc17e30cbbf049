"""JSON Schemas of a compiled graph's input, output and context, as LangGraph writes them.

A pydantic model or TypedDict schema is converted as it is (keeping its own title); any
other schema (a dataclass) becomes a model named ``<graph name>Input``/``Output`` with one
field per state key, whose requiredness follows the schema's annotations and defaults; a
root state (one ``__root__`` channel, e.g. a list of messages) gets the value's own schema.
"""

from __future__ import annotations

import dataclasses
import types
from typing import (
    Annotated,
    Any,
    NotRequired,
    Required,
    TypeVar,
    Union,
    get_args,
    get_origin,
)

from pydantic import BaseModel, ConfigDict, Field, RootModel, TypeAdapter, create_model

from graphruntime._internal._constants import ROOT
from graphruntime.channels import BaseChannel, Topic
from graphruntime.errors import GraphValidationError
from graphruntime.graph._spec import BuilderSpec

_MODEL_CONFIG = ConfigDict(arbitrary_types_allowed=True, frozen=True, protected_namespaces=())
# Field names pydantic reserves on every model: such state keys are renamed and aliased back.
_RESERVED = frozenset(name for name in dir(BaseModel) if not name.startswith("_"))


def input_jsonschema(builder: BuilderSpec, name: str) -> dict[str, Any]:
    return _state_jsonschema(builder, builder.input_schema, f"{name}Input")


def output_jsonschema(builder: BuilderSpec, name: str) -> dict[str, Any]:
    return _state_jsonschema(builder, builder.output_schema, f"{name}Output")


def context_jsonschema(builder: BuilderSpec) -> dict[str, Any] | None:
    schema = builder.context_schema
    if schema is None:
        return None
    if _is_model(schema):
        return dict(schema.model_json_schema())
    if _is_typeddict(schema) or dataclasses.is_dataclass(schema):
        return dict(TypeAdapter(schema).json_schema())
    raise GraphValidationError(
        f"Invalid context schema type: {schema}. Must be a BaseModel, TypedDict or dataclass."
    )


def _state_jsonschema(builder: BuilderSpec, schema: Any, name: str) -> dict[str, Any]:
    if _is_model(schema):
        return dict(schema.model_json_schema())
    if _is_typeddict(schema):
        return dict(TypeAdapter(schema).json_schema())
    keys = list(builder.schemas[schema])
    if keys == [ROOT] and ROOT in builder.channels:
        # a root state (a list of messages...): the schema is of the value itself
        root_type = _update_type(builder.channels[ROOT])
        root_model = create_model(name, __base__=RootModel[root_type], root=(root_type, None))  # type: ignore[valid-type]
        return dict(root_model.model_json_schema())
    fields: dict[str, Any] = {}
    for key in keys:
        channel = builder.channels.get(key)
        if channel is None:
            continue
        hint = _update_type(channel)
        default = _field_default(key, hint, schema)
        field_type = _strip_required(hint)
        if key.startswith("_") or key in _RESERVED:
            title = key.lstrip("_").replace("_", " ").title()
            fields[f"private_{key}"] = (
                field_type,
                Field(default=default, alias=key, serialization_alias=key, title=title),
            )
        else:
            fields[key] = (field_type, default)
    model = create_model(name, __config__=_MODEL_CONFIG, **fields)
    return dict(model.model_json_schema())


def _update_type(channel: BaseChannel) -> Any:
    """The type a write to ``channel`` may have."""
    typ: Any = channel.typ
    if isinstance(channel, Topic):
        listed: Any = list.__class_getitem__(typ)  # list[typ], built from a runtime value
        return typ | listed
    return typ


def _field_default(name: str, hint: Any, schema: Any) -> Any:
    """``...`` when the key is required, else its default (None when it has none)."""
    required = _required_marker(hint)
    if name in getattr(schema, "__optional_keys__", ()):  # total=False or NotRequired
        return ... if required else None
    if required is not None:
        return ... if required else None
    if dataclasses.is_dataclass(schema):
        for field in dataclasses.fields(schema):
            if field.name != name:
                continue
            if field.default is not dataclasses.MISSING and field.default is not ...:
                return field.default
            if field.default_factory is not dataclasses.MISSING:
                return field.default_factory()
    return None if _is_optional(hint) else ...


def _required_marker(hint: Any) -> bool | None:
    """True for ``Required[...]``, False for ``NotRequired[...]``, None when unmarked."""
    origin = get_origin(hint)
    if origin is Required:
        return True
    if origin is NotRequired:
        return False
    if origin is Annotated:
        return _required_marker(get_args(hint)[0])
    return None


def _strip_required(hint: Any) -> Any:
    origin = get_origin(hint)
    if origin in (Required, NotRequired):
        return _strip_required(get_args(hint)[0])
    if origin is Annotated:
        inner, *metadata = get_args(hint)
        return Annotated[(_strip_required(inner), *metadata)]
    return hint


def _is_optional(hint: Any) -> bool:
    if isinstance(hint, types.UnionType) or get_origin(hint) is Union:
        return any(arg is type(None) or _is_optional(arg) for arg in get_args(hint))
    if get_origin(hint) is Annotated:
        return _is_optional(get_args(hint)[0])
    if isinstance(hint, TypeVar) and hint.__bound__ is not None:
        return _is_optional(hint.__bound__)
    return hint is None


def _is_model(schema: Any) -> bool:
    return isinstance(schema, type) and issubclass(schema, BaseModel)


def _is_typeddict(schema: Any) -> bool:
    return isinstance(schema, type) and issubclass(schema, dict) and hasattr(schema, "__total__")
