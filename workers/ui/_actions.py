"""What a form post resumes: the approver's answer turned into each wait's resume value.

A wait is answered only as it says it may be (:mod:`workers.decisions`):

- ``approve`` / ``reject`` (one decision for every action of a review; for a wait with
  choices, the choice of that name): only where the wait declares them;
- ``decide``: a review's decisions per action, from the fields ``decision:I``,
  ``message:I`` and the edited arguments ``arg:I:NAME`` (the text as typed for a string
  argument, JSON for any other);
- ``choice``: one of the wait's declared choices (its JSON in the ``choice`` field);
- ``json``: any wait, with the JSON the approver typed.

Every value is worked out before anything is resumed: a form that is wrong for one
selected wait, or that answers a wait another approver has claimed, resumes none. Each
resume goes through :meth:`GraphClient.resume_many` with ``items=`` and route ``ui``,
under a key made of the form's submission key and the value: posting the same form
twice resumes each thread once (the second post reports "already applied").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workers.approvals import ResumeOutcome, Wait
from workers.client import GraphClient
from workers.decisions import (
    Choices,
    Decision,
    DecisionError,
    Question,
    Request,
    Review,
    answer,
    read_request,
)
from workers.errors import InvalidRequestError
from workers.messages import MAX_DEPTH, nesting_depth

ACTIONS = ("approve", "reject", "decide", "choice", "json")


class FormError(InvalidRequestError):
    """The form cannot be applied as sent; nothing was resumed."""


@dataclass(frozen=True)
class Item:
    """One selected wait: ``(graph, thread_id, interrupt_id)``."""

    graph: str
    thread_id: str
    interrupt_id: str

    @property
    def key(self) -> str:
        """The form field value naming it."""
        return json.dumps([self.graph, self.thread_id, self.interrupt_id])

    @classmethod
    def parse(cls, raw: str) -> Item:
        try:
            parts = json.loads(raw)
        except ValueError:
            parts = None
        if not (
            isinstance(parts, list) and len(parts) == 3 and all(isinstance(p, str) for p in parts)
        ):
            raise FormError(f"Bad item {raw[:100]!r}: reload the inbox and select again.")
        return cls(*parts)


@dataclass(frozen=True)
class Answer:
    """What the approver chose, as posted."""

    action: str
    json_text: str | None = None
    choice: str | None = None
    fields: Mapping[str, str] = field(default_factory=dict)
    """``decision:I``, ``message:I`` and ``arg:I:NAME`` of a ``decide`` post."""


def parse_json(text: str | None, what: str = "The resume value") -> Any:
    """Posted JSON, checked: valid, not null, not absurdly nested."""
    if text is None or not text.strip():
        raise FormError("Type a resume value as JSON (a string must be quoted).")
    try:
        value = json.loads(text)
    except RecursionError as exc:
        raise FormError(f"{what} nests deeper than {MAX_DEPTH} levels.") from exc
    except ValueError as exc:
        raise FormError(f"{what} is not valid JSON: {exc}. Nothing was resumed.") from exc
    if value is None:
        raise FormError("null resumes nothing: type another JSON value.")
    if nesting_depth(value) > MAX_DEPTH:
        raise FormError(f"{what} nests deeper than {MAX_DEPTH} levels.")
    return value


def _decisions(review: Review, fields: Mapping[str, str]) -> list[Decision]:
    """A review's decisions, one per action, from a ``decide`` post."""
    out = []
    for index, action in enumerate(review.actions):
        kind = fields.get(f"decision:{index}", "")
        if not kind:
            raise FormError(f"Choose a decision for {action.name!r} (action {index + 1}).")
        message = fields.get(f"message:{index}", "").strip() or None
        if kind == "edit":
            args: dict[str, Any] = {}
            for name, _, is_text in action.edit_fields():
                text = fields.get(f"arg:{index}:{name}")
                if text is None:
                    raise FormError(f"The edit of {action.name!r} lacks its argument {name!r}.")
                args[name] = text if is_text else parse_json(text, f"Argument {name!r}")
            out.append(_decision(kind, args=args))
        else:
            out.append(_decision(kind, message=message if kind in ("reject", "respond") else None))
    return out


def _decision(kind: str, **kw: Any) -> Decision:
    try:
        return Decision(kind, **kw)  # type: ignore[arg-type]  # checked in __post_init__
    except DecisionError as exc:
        raise FormError(str(exc)) from exc


def resume_value(request: Request, given: Answer) -> Any:
    """The resume value ``given`` gives a wait that reads as ``request``."""
    if given.action not in ACTIONS:
        raise FormError(f"Unknown action {given.action!r}.")
    if given.action == "json":
        return parse_json(given.json_text)
    if given.action == "choice":
        chosen = parse_json(given.choice, "The choice")
        option = request.find(chosen) if isinstance(request, Choices) else None
        if option is None:
            raise FormError(f"{json.dumps(chosen)[:100]} is not one of this wait's choices.")
        return option.value
    if isinstance(request, Question):
        raise FormError(
            f"This wait does not say what {given.action!r} means (it is a plain question"
            f"{': ' + repr(request.question[:80]) if request.question else ''}): answer it "
            "with JSON."
        )
    try:
        if given.action == "decide":
            if not isinstance(request, Review):
                raise FormError("Only a review takes a decision per action.")
            return answer(request, _decisions(request, given.fields))
        return answer(request, given.action)
    except DecisionError as exc:
        raise FormError(str(exc)) from exc


def _digest(graph: str, value: Any) -> str:
    canonical = json.dumps([graph, value], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _pending(client: GraphClient, graph: str, thread_id: str) -> dict[str, Wait]:
    page = client.inbox(graph, thread=thread_id, limit=1000)
    return {w.interrupt_id: w for w in page.items}


def apply(
    client: GraphClient,
    items: Sequence[Item],
    given: Answer,
    *,
    submission: str,
    actor: str,
    note: str | None,
) -> list[ResumeOutcome]:
    """Resume ``items`` with ``given``; one outcome per thread (and per wait not found)."""
    if not items:
        raise FormError("Select at least one wait.")
    pending = {
        (graph, thread_id): _pending(client, graph, thread_id)
        for graph, thread_id in dict.fromkeys((i.graph, i.thread_id) for i in items)
    }
    groups: dict[tuple[str, str], tuple[Any, list[tuple[str, str]]]] = {}
    per_thread: dict[tuple[str, str], str] = {}
    missing: list[ResumeOutcome] = []
    for item in dict.fromkeys(items):
        wait = pending[(item.graph, item.thread_id)].get(item.interrupt_id)
        if wait is None:
            missing.append(
                ResumeOutcome(
                    item.thread_id,
                    (item.interrupt_id,),
                    "not pending",
                    detail="no longer waiting (answered already, or cancelled)",
                )
            )
            continue
        if wait.claimed_by is not None and wait.claimed_by != actor:
            raise FormError(
                f"Thread {item.thread_id!r} is claimed by {wait.claimed_by!r}: take it over "
                "on its row first, or leave it to them."
            )
        try:
            value = resume_value(read_request(wait.value, wait.response_schema), given)
        except FormError as exc:
            raise FormError(f"Thread {item.thread_id!r}: {exc}") from exc
        digest = _digest(item.graph, value)
        # one resume run per thread: its selected waits must take the same value
        if per_thread.setdefault((item.graph, item.thread_id), digest) != digest:
            raise FormError(
                f"Thread {item.thread_id!r} has several selected waits needing different "
                "answers: answer them one at a time on the thread's page."
            )
        groups.setdefault((item.graph, digest), (value, []))[1].append(
            (item.thread_id, item.interrupt_id)
        )
    outcomes: list[ResumeOutcome] = []
    for (graph, digest), (value, targets) in groups.items():
        outcomes.extend(
            client.resume_many(
                graph,
                value=value,
                idempotency_key=f"ui:{submission}:{digest}",
                items=targets,
                actor=actor,
                note=note,
                route="ui",
            )
        )
    return outcomes + missing
