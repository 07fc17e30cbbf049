"""What a form post resumes: the chosen action turned into resume values, then resume_many.

Every resume the inbox makes goes through :meth:`GraphClient.resume_many` with
``items=``, under a key made of the form's submission key and the value: posting the
same form twice resumes each thread once (the second post reports "already applied").

Plain values (anything but an Agent Inbox request):

- ``approve`` resumes with ``true``, ``reject`` with ``false`` (what
  ``if interrupt(...):`` reads);
- ``json`` resumes with the JSON the approver typed.

Agent Inbox requests (see :mod:`workers.ui._agent_inbox`) take ``accept``, ``edit``,
``response`` and ``ignore``, as their config allows, and ``json`` too; in a bulk
post ``approve`` means ``accept`` and ``reject`` means ``ignore`` for them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workers.approvals import ResumeOutcome
from workers.client import GraphClient
from workers.messages import MAX_DEPTH, nesting_depth
from workers.ui._agent_inbox import AgentInboxError, human_response, parse_request

PLAIN_ACTIONS = ("approve", "reject", "json")
FORM_ACTIONS = (*PLAIN_ACTIONS, "accept", "edit", "response", "ignore")
_BULK_AGENT_INBOX = {"approve": "accept", "reject": "ignore"}


class FormError(ValueError):
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
    edits: Mapping[str, str] | None = None
    text: str | None = None


def parse_json(text: str | None) -> Any:
    """The custom resume value, checked: JSON, not null, not absurdly nested."""
    if text is None or not text.strip():
        raise FormError("Type a resume value as JSON (a string must be quoted).")
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise FormError(f"The resume value is not valid JSON: {exc}. Nothing was resumed.") from exc
    if value is None:
        raise FormError("null resumes nothing: type another JSON value.")
    if nesting_depth(value) > MAX_DEPTH:
        raise FormError(f"The resume value nests deeper than {MAX_DEPTH} levels.")
    return value


def resume_value(value: Any, answer: Answer, *, bulk: bool) -> Any:
    """The resume value ``answer`` gives a wait whose interrupt value is ``value``."""
    if answer.action not in FORM_ACTIONS:
        raise FormError(f"Unknown action {answer.action!r}.")
    if answer.action == "json":
        return parse_json(answer.json_text)
    request = parse_request(value)
    if request is None:
        if answer.action not in PLAIN_ACTIONS:
            raise FormError(
                f"{answer.action!r} answers Agent Inbox requests only; this wait takes "
                "approve, reject or JSON."
            )
        return answer.action == "approve"
    action = _BULK_AGENT_INBOX.get(answer.action, answer.action) if bulk else answer.action
    try:
        return human_response(request, action, edits=dict(answer.edits or {}), text=answer.text)
    except AgentInboxError as exc:
        raise FormError(str(exc)) from exc


def _digest(graph: str, value: Any) -> str:
    canonical = json.dumps([graph, value], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def apply(
    client: GraphClient,
    items: Sequence[Item],
    answer: Answer,
    *,
    submission: str,
    actor: str,
    note: str | None,
    bulk: bool,
) -> list[ResumeOutcome]:
    """Resume ``items`` with ``answer``; one outcome per thread (and per wait not found).

    Every value is worked out before anything is resumed: a form that is wrong for one
    item resumes none. A wait no longer pending is reported, not resumed.
    """
    if not items:
        raise FormError("Select at least one wait.")
    pending: dict[tuple[str, str], dict[str, Any]] = {}
    for graph, thread_id in dict.fromkeys((i.graph, i.thread_id) for i in items):
        state = client.get_state(graph, {"configurable": {"thread_id": thread_id}})
        pending[(graph, thread_id)] = {i.id: i.value for i in state.interrupts}
    groups: dict[tuple[str, str], tuple[Any, list[tuple[str, str]]]] = {}
    per_thread: dict[tuple[str, str], str] = {}
    missing: list[ResumeOutcome] = []
    for item in dict.fromkeys(items):
        waits = pending[(item.graph, item.thread_id)]
        if item.interrupt_id not in waits:
            missing.append(
                ResumeOutcome(
                    item.thread_id,
                    (item.interrupt_id,),
                    "not pending",
                    detail="no longer waiting (answered already, or cancelled)",
                )
            )
            continue
        value = resume_value(waits[item.interrupt_id], answer, bulk=bulk)
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
            )
        )
    return outcomes + missing
