"""LangGraph's Agent Inbox schema: a ``HumanInterrupt`` list in, a ``HumanResponse`` list out.

A graph written for Agent Inbox pauses with ``interrupt([request])``, where ``request``
is ``{"action_request": {"action": str, "args": dict}, "config": {"allow_accept": bool,
"allow_edit": bool, "allow_respond": bool, "allow_ignore": bool}, "description": str |
None}``, and expects back a list holding one ``{"type": ..., "args": ...}``:

- ``accept``: ``args`` is the action request as it was;
- ``edit``: ``args`` is the action request with the edited arguments, each a string
  (what the human typed; a non-string argument is offered as its JSON text);
- ``response``: ``args`` is the human's text;
- ``ignore``: ``args`` is None.

As in Agent Inbox, only the first request of the list is answered, and only the
actions its ``config`` allows are offered or accepted. Pure functions, no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, get_args

Action = Literal["accept", "edit", "response", "ignore"]
ACTIONS: tuple[Action, ...] = get_args(Action)
"""Every Agent Inbox action, in the order the page shows them."""

_ALLOW: dict[Action, str] = {
    "accept": "allow_accept",
    "edit": "allow_edit",
    "response": "allow_respond",
    "ignore": "allow_ignore",
}


class AgentInboxError(ValueError):
    """An answer the request does not allow, or an incomplete one; nothing was resumed."""


@dataclass(frozen=True)
class HumanRequest:
    """The first ``HumanInterrupt`` of an interrupt value, as the page shows it."""

    action: str
    args: dict[str, Any]
    allowed: tuple[Action, ...]
    """The actions its ``config`` allows, in :data:`ACTIONS` order."""
    description: str | None
    count: int
    """How many requests the value holds (only the first is answered)."""

    def edit_fields(self) -> list[tuple[str, str]]:
        """``(argument, text)`` pairs for the edit form: strings as they are, others as JSON."""
        return [(key, _as_text(value)) for key, value in self.args.items()]


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _human_interrupt(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    request, config = item.get("action_request"), item.get("config")
    if not isinstance(request, dict) or not isinstance(config, dict):
        return False
    if not isinstance(request.get("action"), str) or not isinstance(request.get("args"), dict):
        return False
    if not all(isinstance(config.get(flag, False), bool) for flag in _ALLOW.values()):
        return False
    description = item.get("description")
    return description is None or isinstance(description, str)


def parse_request(value: Any) -> HumanRequest | None:
    """The Agent Inbox request an interrupt value holds, or None for any other value.

    The value must be a non-empty list of ``HumanInterrupt`` dicts (the shape Agent
    Inbox reads); a missing ``allow_*`` flag counts as False.
    """
    if not isinstance(value, list) or not value or not all(map(_human_interrupt, value)):
        return None
    first = value[0]
    config = first["config"]
    return HumanRequest(
        action=first["action_request"]["action"],
        args=dict(first["action_request"]["args"]),
        allowed=tuple(a for a in ACTIONS if config.get(_ALLOW[a], False)),
        description=first.get("description"),
        count=len(value),
    )


def human_response(
    request: HumanRequest,
    action: str,
    *,
    edits: dict[str, str] | None = None,
    text: str | None = None,
) -> list[dict[str, Any]]:
    """The resume value answering ``request`` with ``action``: a one-item HumanResponse list.

    ``edits`` (for ``edit``) maps every argument to its new text; ``text`` (for
    ``response``) is the reply. Raises :class:`AgentInboxError` for an action the
    request does not allow or an incomplete answer.
    """
    if action not in ACTIONS:
        raise AgentInboxError(f"Unknown action {action!r}; Agent Inbox actions are {ACTIONS}.")
    if action not in request.allowed:
        allowed = ", ".join(request.allowed) or "none"
        raise AgentInboxError(
            f"This request does not allow {action!r} (its config allows: {allowed}); "
            "nothing was resumed."
        )
    args: Any
    if action == "accept":
        args = {"action": request.action, "args": dict(request.args)}
    elif action == "edit":
        edits = edits or {}
        missing = sorted(set(request.args) - set(edits))
        extra = sorted(set(edits) - set(request.args))
        if missing or extra:
            raise AgentInboxError(
                f"An edit gives every argument of the request once (missing: {missing}, "
                f"unknown: {extra}); nothing was resumed."
            )
        args = {"action": request.action, "args": {key: edits[key] for key in request.args}}
    elif action == "response":
        if text is None or not text.strip():
            raise AgentInboxError("A response needs some text; nothing was resumed.")
        args = text
    else:
        args = None
    return [{"type": action, "args": args}]
