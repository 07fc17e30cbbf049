"""What a wait says its answers mean: a review with decisions, a choice list, or a question.

Pure value types, no I/O. :func:`workers.decisions.read_request` makes them from an
interrupt's value and ``response_schema``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from workers.errors import WorkerError

DecisionType = Literal["approve", "edit", "reject", "respond"]
DECISIONS: tuple[DecisionType, ...] = get_args(DecisionType)
"""Every decision, in the order pages and messages list them."""

Format = Literal["hitl", "tool_approval", "agent_inbox"]


class DecisionError(WorkerError, ValueError):
    """A decision the wait does not allow, or an incomplete one; nothing was resumed."""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class Decision:
    """An approver's decision on one action, in LangChain's vocabulary.

    ``args`` (edit only, required): the action's new arguments; ``name`` (edit only):
    a new action name, where the request lets an edit change it; ``message``: the
    reason of a reject (optional) or the answer of a respond (required).
    """

    type: DecisionType
    args: Mapping[str, Any] | None = None
    name: str | None = None
    message: str | None = None

    def __post_init__(self) -> None:
        if self.type not in DECISIONS:
            raise DecisionError(
                f"Unknown decision {self.type!r}: decisions are {', '.join(DECISIONS)}."
            )
        if self.type == "edit":
            if not isinstance(self.args, Mapping):
                raise DecisionError("An edit decision gives the action's new args (an object).")
        elif self.args is not None or self.name is not None:
            raise DecisionError(f"Only an edit decision takes args or a name, not {self.type!r}.")
        if self.type == "respond" and not (self.message or "").strip():
            raise DecisionError("A respond decision needs a message (the answer to send).")
        if self.type in ("approve", "edit") and self.message is not None:
            raise DecisionError(f"A {self.type} decision takes no message.")
        if self.message is not None and not isinstance(self.message, str):
            raise DecisionError("A decision's message is text.")

    @classmethod
    def of(cls, raw: Decision | Mapping[str, Any] | str) -> Decision:
        """A decision from itself, a decision type, or LangChain's JSON shape
        (``{"type": "edit", "edited_action": {"name", "args"}}``, ``{"type": "reject",
        "message"}``...)."""
        if isinstance(raw, Decision):
            return raw
        if isinstance(raw, str):
            return cls(raw)  # type: ignore[arg-type]  # checked in __post_init__
        if not isinstance(raw, Mapping):
            raise DecisionError(
                f"A decision is a type ({', '.join(DECISIONS)}) or an object like "
                f'{{"type": "approve"}}, got {type(raw).__name__}.'
            )
        unknown = set(raw) - {"type", "edited_action", "message"}
        if unknown:
            raise DecisionError(f"Unknown fields in a decision: {sorted(unknown)}.")
        edited = raw.get("edited_action")
        if edited is not None:
            if not isinstance(edited, Mapping) or set(edited) - {"name", "args"}:
                raise DecisionError('edited_action is {"name": ..., "args": {...}}.')
            kind: Any = raw.get("type")  # checked in __post_init__
            return cls(kind, edited.get("args"), edited.get("name"), raw.get("message"))
        return cls(raw.get("type"), message=raw.get("message"))  # type: ignore[arg-type]

    def as_langchain(self, action: str) -> dict[str, Any]:
        """The decision as LangChain's HITL middleware reads it, for ``action``."""
        out: dict[str, Any] = {"type": self.type}
        if self.type == "edit":
            out["edited_action"] = {"name": self.name or action, "args": dict(self.args or {})}
        if self.message is not None:
            out["message"] = self.message
        return out


@dataclass(frozen=True)
class Action:
    """One action a review asks about: a tool call, with the decisions it allows."""

    name: str
    args: dict[str, Any]
    description: str | None
    allowed: tuple[DecisionType, ...]
    """In :data:`DECISIONS` order."""
    args_schema: dict[str, Any] | None = None
    """The JSON schema an edit's args must follow, when the request gives one."""

    def edit_fields(self) -> list[tuple[str, str, bool]]:
        """``(argument, text, is_text)`` for an edit form: strings as they are, the rest
        as JSON (``is_text`` False: the field is read back as JSON)."""
        return [(k, _text(v), isinstance(v, str)) for k, v in self.args.items()]


_LABELS: dict[Format, dict[DecisionType, str]] = {
    "hitl": {"approve": "Approve", "edit": "Edit", "reject": "Reject", "respond": "Respond"},
    "tool_approval": {
        "approve": "Approve",
        "edit": "Edit",
        "reject": "Reject",
        "respond": "Respond",
    },
    "agent_inbox": {"approve": "Accept", "edit": "Edit", "reject": "Ignore", "respond": "Respond"},
}


@dataclass(frozen=True)
class Review:
    """A wait that declares its decisions: LangChain's HITL middleware (``hitl``:
    batched, answered by position; ``tool_approval``: one call) or an Agent Inbox
    request (``agent_inbox``)."""

    format: Format
    actions: tuple[Action, ...]
    count: int = 1
    """Agent Inbox: how many requests the value holds (only the first is answered)."""

    def allowed_for_all(self) -> tuple[DecisionType, ...]:
        """The decisions every action allows (what one decision for all may be)."""
        return tuple(d for d in DECISIONS if all(d in a.allowed for a in self.actions))

    def label(self, decision: DecisionType) -> str:
        return _LABELS[self.format][decision]


@dataclass(frozen=True)
class Option:
    """One declared answer: what the page shows, and the exact resume value."""

    label: str
    value: Any


@dataclass(frozen=True)
class Choices:
    """A wait whose answers are a closed list (a ``response_schema`` enum, const or
    boolean, or an ``options``/``choices`` list in the value)."""

    options: tuple[Option, ...]
    source: Literal["response_schema", "value"]
    question: str | None = None

    def find(self, value: Any) -> Option | None:
        canonical = _canonical(value)
        return next((o for o in self.options if _canonical(o.value) == canonical), None)


@dataclass(frozen=True)
class Question:
    """Any other wait: it takes a JSON answer. ``schema``: its ``response_schema``,
    shown to the approver (the graph checks the answer against it)."""

    question: str | None = None
    schema: Any = field(default=None)


Request = Review | Choices | Question


def _canonical(value: Any) -> str:
    # True and 1 are different answers; json.dumps tells them apart
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def decisions_of(raw: Decision | Mapping[str, Any] | str | Sequence[Any]) -> list[Decision]:
    """One decision, or a list of them (by position), as :class:`Decision` objects."""
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        return [Decision.of(raw)]
    if not raw:
        raise DecisionError("Give a decision, or a non-empty list of them (one per action).")
    return [Decision.of(d) for d in raw]
