"""Reading an interrupt: which of the known request formats its value and schema are.

- LangChain's ``HumanInTheLoopMiddleware``, batched: the value is a ``HITLRequest``
  ``{"action_requests": [{"name", "args", "description"?}], "review_configs":
  [{"action_name", "allowed_decisions", "args_schema"?}]}``.
- The same middleware per call: the value is a ``ToolApprovalRequest`` ``{"type":
  "tool_approval", "tool_call_id", "name", "args", "description"}`` and the interrupt's
  ``response_schema`` (a JSON schema) is the union of the decisions the tool allows.
- LangGraph's Agent Inbox: the value is a list of ``HumanInterrupt`` ``{"action_request":
  {"action", "args"}, "config": {"allow_accept", "allow_edit", "allow_respond",
  "allow_ignore"}, "description"}``; only the first is answered, as in Agent Inbox.
- Choices: a ``response_schema`` that is an enum, a const or a boolean (or a union of
  them), or a value ``{"options": [...]}`` / ``{"choices": [...]}`` of scalars or
  ``{"label", "value"}`` objects.
- Anything else is a question taking JSON.
"""

from __future__ import annotations

import json
from typing import Any

from workers.decisions._model import (
    DECISIONS,
    Action,
    Choices,
    DecisionType,
    Option,
    Question,
    Request,
    Review,
)

MAX_OPTIONS = 50
_AGENT_INBOX_FLAGS: dict[str, DecisionType] = {
    "allow_accept": "approve",
    "allow_edit": "edit",
    "allow_respond": "respond",
    "allow_ignore": "reject",
}
_QUESTION_KEYS = ("question", "prompt", "message")


def read_request(value: Any, response_schema: Any = None) -> Request:
    """What the interrupt ``value`` (with its ``response_schema``, a JSON schema or None)
    says its answers mean."""
    return (
        _hitl(value)
        or _tool_approval(value, response_schema)
        or _agent_inbox(value)
        or _schema_choices(value, response_schema)
        or _value_choices(value)
        or Question(_question(value), response_schema)
    )


def _is_str_dict(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) for k in value)


def _ordered(found: set[str]) -> tuple[DecisionType, ...]:
    return tuple(d for d in DECISIONS if d in found)


def _hitl(value: Any) -> Review | None:
    if not isinstance(value, dict) or not {"action_requests", "review_configs"} <= set(value):
        return None
    requests, configs = value["action_requests"], value["review_configs"]
    if not isinstance(requests, list) or not requests or not isinstance(configs, list):
        return None
    by_name: dict[str, dict[str, Any]] = {}
    for config in configs:
        if not isinstance(config, dict) or not isinstance(config.get("action_name"), str):
            return None
        allowed = config.get("allowed_decisions")
        if not isinstance(allowed, list) or not all(isinstance(d, str) for d in allowed):
            return None
        by_name.setdefault(config["action_name"], config)
    actions = []
    for request in requests:
        if not (
            isinstance(request, dict)
            and isinstance(request.get("name"), str)
            and _is_str_dict(request.get("args"))
        ):
            return None
        config = by_name.get(request["name"], {})
        schema = config.get("args_schema")
        description = request.get("description")
        actions.append(
            Action(
                name=request["name"],
                args=dict(request["args"]),
                description=description if isinstance(description, str) else None,
                allowed=_ordered(set(config.get("allowed_decisions", ()))),
                args_schema=schema if isinstance(schema, dict) else None,
            )
        )
    return Review("hitl", tuple(actions))


def _tool_approval(value: Any, schema: Any) -> Review | None:
    if not (
        isinstance(value, dict)
        and value.get("type") == "tool_approval"
        and isinstance(value.get("name"), str)
        and _is_str_dict(value.get("args"))
        and isinstance(schema, dict)
    ):
        return None
    allowed, args_schema = schema_decisions(schema)
    if not allowed:
        return None
    description = value.get("description")
    action = Action(
        name=value["name"],
        args=dict(value["args"]),
        description=description if isinstance(description, str) else None,
        allowed=allowed,
        args_schema=args_schema,
    )
    return Review("tool_approval", (action,))


def _agent_inbox_item(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    request, config = item.get("action_request"), item.get("config")
    if not isinstance(request, dict) or not isinstance(config, dict):
        return False
    if not isinstance(request.get("action"), str) or not _is_str_dict(request.get("args")):
        return False
    if not all(isinstance(config.get(flag, False), bool) for flag in _AGENT_INBOX_FLAGS):
        return False
    description = item.get("description")
    return description is None or isinstance(description, str)


def _agent_inbox(value: Any) -> Review | None:
    if not isinstance(value, list) or not value or not all(map(_agent_inbox_item, value)):
        return None
    first = value[0]
    config = first["config"]
    action = Action(
        name=first["action_request"]["action"],
        args=dict(first["action_request"]["args"]),
        description=first.get("description"),
        allowed=_ordered({d for flag, d in _AGENT_INBOX_FLAGS.items() if config.get(flag)}),
    )
    return Review("agent_inbox", (action,), count=len(value))


# --- JSON schemas ----------------------------------------------------------------------


def _resolve(node: Any, root: dict[str, Any], depth: int = 0) -> Any:
    """``node`` with a local ``$ref`` (``#/$defs/...``) followed."""
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and depth < 16:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            return {}
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        node, depth = target, depth + 1
    return node if isinstance(node, dict) else {}


def _branches(schema: dict[str, Any], root: dict[str, Any]) -> list[dict[str, Any]]:
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list):
            return [_resolve(b, root) for b in schema[key]]
    return [schema]


def _const(schema: dict[str, Any]) -> tuple[bool, Any]:
    if "const" in schema:
        return True, schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and len(enum) == 1:
        return True, enum[0]
    return False, None


def schema_decisions(
    schema: dict[str, Any],
) -> tuple[tuple[DecisionType, ...], dict[str, Any] | None]:
    """The decisions a per-call ``response_schema`` allows (each branch an object whose
    ``type`` is a decision), and the args schema of its edit branch."""
    found: set[str] = set()
    args_schema: dict[str, Any] | None = None
    for branch in _branches(_resolve(schema, schema), schema):
        props = branch.get("properties")
        if branch.get("type", "object") != "object" or not isinstance(props, dict):
            return (), None
        known, kind = _const(_resolve(props.get("type"), schema))
        if not known or kind not in DECISIONS:
            return (), None
        found.add(kind)
        if kind == "edit":
            edited = _resolve(props.get("edited_action"), schema).get("properties")
            if isinstance(edited, dict) and "args" in edited:
                args_schema = _resolve(edited["args"], schema) or None
    return _ordered(found), args_schema


def _label(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _schema_options(schema: dict[str, Any], root: dict[str, Any]) -> list[Any] | None:
    """The values a schema admits when they are a closed list, else None."""
    values: list[Any] = []
    for branch in _branches(_resolve(schema, root), root):
        known, const = _const(branch)
        if known:
            values.append(const)
        elif isinstance(branch.get("enum"), list):
            values.extend(branch["enum"])
        elif branch.get("type") == "boolean":
            values.extend([True, False])
        elif branch.get("type") == "null":
            continue  # null resumes nothing: not an answer
        else:
            return None
    values = [v for v in values if v is not None]
    return values if 0 < len(values) <= MAX_OPTIONS else None


def _question(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in _QUESTION_KEYS:
            if isinstance(value.get(key), str):
                return str(value[key])
    return None


def _unique(options: list[Option]) -> tuple[Option, ...] | None:
    seen = {json.dumps(o.value, sort_keys=True) for o in options}
    return tuple(options) if len(seen) == len(options) else None


def _schema_choices(value: Any, schema: Any) -> Choices | None:
    if not isinstance(schema, dict):
        return None
    values = _schema_options(schema, schema)
    if values is None:
        return None
    options = _unique([Option(_label(v), v) for v in values])
    return Choices(options, "response_schema", _question(value)) if options else None


def _value_choices(value: Any) -> Choices | None:
    if not isinstance(value, dict):
        return None
    listed = value.get("options", value.get("choices"))
    if not isinstance(listed, list) or not 0 < len(listed) <= MAX_OPTIONS:
        return None
    options = []
    for item in listed:
        if isinstance(item, str | int | float | bool):
            options.append(Option(_label(item), item))
        elif (
            isinstance(item, dict)
            and set(item) == {"label", "value"}
            and isinstance(item["label"], str)
            and item["value"] is not None
        ):
            options.append(Option(item["label"], item["value"]))
        else:
            return None
    unique = _unique(options)
    return Choices(unique, "value", _question(value)) if unique else None
