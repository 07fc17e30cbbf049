"""Decisions turned into the resume value each format expects, and filters by action."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from workers.decisions._model import (
    Action,
    Choices,
    Decision,
    DecisionError,
    Request,
    Review,
    decisions_of,
)

DecisionInput = Decision | Mapping[str, Any] | str | Sequence[Decision | Mapping[str, Any] | str]
"""One decision (for every action of a wait), or one per action in order."""

_AGENT_INBOX_TYPE = {"approve": "accept", "edit": "edit", "respond": "response", "reject": "ignore"}


def answer(request: Request, decisions: DecisionInput) -> Any:
    """The resume value giving ``decisions`` to a wait that reads as ``request``.

    Raises :class:`DecisionError`, naming what the wait allows, for a decision it does
    not allow, a wrong number of decisions, or an incomplete one.
    """
    given = decisions_of(decisions)
    if isinstance(request, Review):
        return _review(request, given)
    if isinstance(request, Choices):
        return _choice(request, given)
    raise DecisionError(
        "This wait declares no decisions (a plain interrupt): answer it with a JSON value."
    )


def _names(review: Review) -> str:
    return ", ".join(a.name for a in review.actions)


def _review(review: Review, given: list[Decision]) -> Any:
    actions = review.actions
    if len(given) == 1 and len(actions) > 1:
        if given[0].type == "edit":
            raise DecisionError(
                f"An edit is for one action; this request has {len(actions)} ({_names(review)}): "
                "give one decision per action, in order."
            )
        given = given * len(actions)
    if len(given) != len(actions):
        raise DecisionError(
            f"This request has {len(actions)} action(s) ({_names(review)}): give one decision "
            f"for all, or one per action in order, not {len(given)}."
        )
    for index, (action, decision) in enumerate(zip(actions, given, strict=True)):
        what = f"Action {index + 1} ({action.name})" if len(actions) > 1 else repr(action.name)
        _check(review, what, action, decision)
    if review.format == "hitl":
        return {"decisions": [d.as_langchain(a.name) for a, d in zip(actions, given, strict=True)]}
    if review.format == "tool_approval":
        return given[0].as_langchain(actions[0].name)
    return [_agent_inbox(actions[0], given[0])]


def _check(review: Review, what: str, action: Action, decision: Decision) -> None:
    if decision.type not in action.allowed:
        allowed = ", ".join(action.allowed) or "no decision (answer it with JSON)"
        raise DecisionError(f"{what} does not allow {decision.type!r}: it allows {allowed}.")
    if decision.type == "reject" and decision.message and review.format == "agent_inbox":
        raise DecisionError(
            "An Agent Inbox request's reject (ignore) carries no message; "
            "respond to send one, where allowed."
        )
    if decision.type != "edit":
        return
    if decision.name is not None and decision.name != action.name and review.format != "hitl":
        raise DecisionError(
            f"An edit of {what} keeps its name: this request pins it to {action.name!r}."
        )
    if review.format == "agent_inbox":
        args = dict(decision.args or {})
        missing, extra = sorted(set(action.args) - set(args)), sorted(set(args) - set(action.args))
        if missing or extra:
            raise DecisionError(
                f"An Agent Inbox edit gives every argument once (missing: {missing}, "
                f"unknown: {extra})."
            )


def _agent_inbox(action: Action, decision: Decision) -> dict[str, Any]:
    args: Any = None
    if decision.type == "approve":
        args = {"action": action.name, "args": dict(action.args)}
    elif decision.type == "edit":
        edits = dict(decision.args or {})
        # Agent Inbox sends what the human typed: every argument as text
        args = {"action": action.name, "args": {k: _text(edits[k]) for k in action.args}}
    elif decision.type == "respond":
        args = decision.message
    return {"type": _AGENT_INBOX_TYPE[decision.type], "args": args}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _choice(choices: Choices, given: list[Decision]) -> Any:
    """A wait with choices takes approve or reject when one of its choices is that word."""
    decision = given[0] if len(given) == 1 else None
    option = choices.find(decision.type) if decision is not None else None
    if decision is None or decision.message is not None or option is None:
        listed = ", ".join(o.label for o in choices.options)
        what = "a list of decisions" if decision is None else f"{decision.type!r}"
        raise DecisionError(
            f"This wait's answers are its choices ({listed}); {what} is not one of them: "
            "answer with one of them."
        )
    return option.value


def action_filter(action: str | None, args: Mapping[str, Any] | None) -> list[Any]:
    """Containment filters (any of them) matching waits that ask about an action named
    ``action`` whose args contain ``args``, in every format; ``[]`` when neither is given."""
    if action is None and args is None:
        return []
    if action is not None and not isinstance(action, str):
        raise DecisionError("The action filter is an action (tool) name.")
    if args is not None and not isinstance(args, Mapping):
        raise DecisionError('The args filter is an object the args contain, e.g. {"to": "ops"}.')
    hitl: dict[str, Any] = {}
    inbox: dict[str, Any] = {}
    per_call: dict[str, Any] = {"type": "tool_approval"}
    if action is not None:
        hitl["name"] = per_call["name"] = inbox["action"] = action
    if args is not None:
        hitl["args"] = per_call["args"] = inbox["args"] = dict(args)
    return [
        {"action_requests": [hitl]},
        per_call,
        [{"action_request": inbox}],
    ]
