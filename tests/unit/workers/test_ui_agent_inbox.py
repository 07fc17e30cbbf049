"""The Agent Inbox mapping: which values are HumanInterrupt lists, and the answers they take."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import pytest

from workers.ui import human_response, parse_request
from workers.ui._actions import Answer, FormError, resume_value
from workers.ui._agent_inbox import ACTIONS, AgentInboxError

FLAGS = ("allow_accept", "allow_edit", "allow_respond", "allow_ignore")


def human_interrupt(
    on: Mapping[str, bool] | None = None,
    /,
    *,
    description: str | None = "Send **this** mail?",
    **flags: bool,
) -> dict[str, Any]:
    flags = {**(on or {}), **flags}
    return {
        "action_request": {"action": "send_email", "args": {"to": "a@b.c", "retries": 3}},
        "config": {flag: flags.get(flag, False) for flag in FLAGS},
        "description": description,
    }


@pytest.mark.parametrize("allowed", list(itertools.product([False, True], repeat=4)))
def test_a_request_offers_exactly_the_actions_its_config_allows(
    allowed: tuple[bool, ...],
) -> None:
    request = parse_request([human_interrupt(dict(zip(FLAGS, allowed, strict=True)))])
    assert request is not None
    expected = tuple(a for a, on in zip(ACTIONS, allowed, strict=True) if on)
    assert request.allowed == expected
    for action in ACTIONS:
        if action in expected:
            human_response(request, action, edits={"to": "x", "retries": "4"}, text="no")
        else:
            with pytest.raises(AgentInboxError, match="does not allow"):
                human_response(request, action, edits={"to": "x", "retries": "4"}, text="no")


def test_each_answer_is_the_human_response_list_agent_inbox_sends() -> None:
    request = parse_request([human_interrupt(dict.fromkeys(FLAGS, True))])
    assert request is not None
    original = {"action": "send_email", "args": {"to": "a@b.c", "retries": 3}}
    assert human_response(request, "accept") == [{"type": "accept", "args": original}]
    assert human_response(request, "edit", edits={"to": "d@e.f", "retries": "5"}) == [
        {"type": "edit", "args": {"action": "send_email", "args": {"to": "d@e.f", "retries": "5"}}}
    ]
    assert human_response(request, "response", text="not today") == [
        {"type": "response", "args": "not today"}
    ]
    assert human_response(request, "ignore") == [{"type": "ignore", "args": None}]


def test_an_edit_is_offered_as_text_and_must_give_every_argument() -> None:
    request = parse_request([human_interrupt(allow_edit=True)])
    assert request is not None
    assert request.edit_fields() == [("to", "a@b.c"), ("retries", "3")]
    with pytest.raises(AgentInboxError, match="missing: \\['retries'\\]"):
        human_response(request, "edit", edits={"to": "x"})
    with pytest.raises(AgentInboxError, match="unknown: \\['cc'\\]"):
        human_response(request, "edit", edits={"to": "x", "retries": "1", "cc": "y"})


def test_a_response_needs_text() -> None:
    request = parse_request([human_interrupt(allow_respond=True)])
    assert request is not None
    with pytest.raises(AgentInboxError, match="needs some text"):
        human_response(request, "response", text="   ")


@pytest.mark.parametrize(
    "value",
    [
        human_interrupt(allow_accept=True),  # not in a list: not what Agent Inbox reads
        [],
        [{"action_request": {"action": "x"}, "config": {}}],  # no args
        [{"action_request": {"action": "x", "args": {}}, "config": {"allow_accept": "yes"}}],
        [{"action_request": {"action": 1, "args": {}}, "config": {}}],
        [human_interrupt(allow_accept=True), {"question": "?"}],
        [{"action_request": {"action": "x", "args": {}}, "config": {}, "description": 3}],
        {"question": "approve?"},
        "approve?",
        True,
    ],
)
def test_other_values_are_not_agent_inbox_requests(value: Any) -> None:
    assert parse_request(value) is None


def test_only_the_first_request_of_a_list_is_answered_and_missing_flags_are_false() -> None:
    second = human_interrupt(allow_ignore=True)
    first = {"action_request": {"action": "deploy", "args": {}}, "config": {"allow_accept": True}}
    request = parse_request([first, second])
    assert request is not None
    assert (request.action, request.allowed, request.count) == ("deploy", ("accept",), 2)
    assert request.description is None


def test_plain_values_approve_with_true_and_reject_with_false() -> None:
    assert resume_value({"q": 1}, Answer("approve"), bulk=False) is True
    assert resume_value("ok?", Answer("reject"), bulk=True) is False
    assert resume_value("ok?", Answer("json", json_text='{"n": [1, 2]}'), bulk=False) == {
        "n": [1, 2]
    }
    with pytest.raises(FormError, match="Agent Inbox requests only"):
        resume_value("ok?", Answer("accept"), bulk=False)


def test_in_bulk_approve_accepts_and_reject_ignores_an_agent_inbox_request() -> None:
    value = [human_interrupt(allow_accept=True, allow_ignore=True)]
    assert resume_value(value, Answer("approve"), bulk=True)[0]["type"] == "accept"
    assert resume_value(value, Answer("reject"), bulk=True) == [{"type": "ignore", "args": None}]
    only_edit = [human_interrupt(allow_edit=True)]
    with pytest.raises(FormError, match="does not allow 'accept'"):
        resume_value(only_edit, Answer("approve"), bulk=True)
    # custom JSON is always possible, whatever the config
    assert resume_value(only_edit, Answer("json", json_text="[1]"), bulk=True) == [1]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("", "Type a resume value"),
        ("null", "null resumes nothing"),
        ("[" * 100 + "]" * 100, "nests deeper"),
    ],
)
def test_a_bad_custom_value_is_refused_clearly(text: str, message: str) -> None:
    with pytest.raises(FormError, match=message):
        resume_value("ok?", Answer("json", json_text=text), bulk=False)
