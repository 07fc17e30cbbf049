"""The decisions module: which waits declare their answers, and the resume values decisions make.

The LangChain formats are built here as the HITL middleware builds them (plain dicts,
and for per-call requests the JSON schema pydantic makes of its decision union), so
these tests need no langchain.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired, Union

import pytest
from pydantic import Discriminator, TypeAdapter
from typing_extensions import TypedDict

from workers.decisions import (
    DECISIONS,
    Choices,
    Decision,
    DecisionError,
    Option,
    Question,
    Review,
    action_filter,
    answer,
    read_request,
)
from workers.errors import WorkerError

# --- LangChain's formats, as its middleware makes them -----------------------------------


def hitl(*actions: tuple[str, dict[str, Any], list[str]]) -> dict[str, Any]:
    """A batched HITLRequest: (name, args, allowed decisions) per gated call."""
    return {
        "action_requests": [
            {"name": name, "args": args, "description": f"Review {name}"}
            for name, args, _ in actions
        ],
        "review_configs": [
            {"action_name": name, "allowed_decisions": allowed} for name, _, allowed in actions
        ],
    }


class ApproveDecision(TypedDict):
    type: Literal["approve"]


class RejectDecision(TypedDict):
    type: Literal["reject"]
    message: NotRequired[str]


class RespondDecision(TypedDict):
    type: Literal["respond"]
    message: str


class EmailArgs(TypedDict):
    to: str
    retries: NotRequired[int]


def per_call_type(allowed: list[str], tool: str = "send_email") -> Any:
    """A per-call request's response_schema as the middleware gives it to interrupt(): the
    union of the allowed decisions, the edit's name pinned to the tool and its args the
    tool's schema (TypedDicts here, so a validated answer stays a dict)."""
    # functional syntax: the name is pinned to a value known only here
    EditedAction = TypedDict(  # noqa: UP013
        "EditedAction",
        {"name": Literal[tool], "args": EmailArgs},  # type: ignore[valid-type]
    )
    EditDecision = TypedDict(  # noqa: UP013
        "EditDecision", {"type": Literal["edit"], "edited_action": EditedAction}
    )
    by_type: dict[str, Any] = {
        "approve": ApproveDecision,
        "edit": EditDecision,
        "reject": RejectDecision,
        "respond": RespondDecision,
    }
    members = tuple(by_type[d] for d in allowed)
    if len(members) == 1:
        return members[0]
    return Annotated[Union[members], Discriminator("type")]  # noqa: UP007


def per_call_schema(allowed: list[str], tool: str = "send_email") -> dict[str, Any]:
    """The JSON schema interrupt() keeps for :func:`per_call_type`."""
    schema: dict[str, Any] = TypeAdapter(per_call_type(allowed, tool)).json_schema()
    return schema


def tool_approval(args: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "tool_approval",
        "tool_call_id": "call-1",
        "name": "send_email",
        "args": args or {"to": "a@b.c", "retries": 3},
        "description": "Send it?",
    }


FLAGS = ("allow_accept", "allow_edit", "allow_respond", "allow_ignore")


def agent_inbox(on: Mapping[str, bool] | None = None, /, **flags: bool) -> list[Any]:
    flags = {**(on or {}), **flags}
    return [
        {
            "action_request": {"action": "send_email", "args": {"to": "a@b.c", "retries": 3}},
            "config": {flag: flags.get(flag, False) for flag in FLAGS},
            "description": "Send **this** mail?",
        }
    ]


# --- reading ---------------------------------------------------------------------------


def test_a_batched_request_lists_each_action_with_the_decisions_its_config_allows() -> None:
    review = read_request(
        hitl(
            ("send_email", {"to": "a"}, ["approve", "edit", "reject", "respond"]),
            ("delete_file", {"path": "/tmp/x"}, ["reject", "approve"]),
        )
    )
    assert isinstance(review, Review)
    assert review.format == "hitl"
    assert [(a.name, a.args, a.allowed) for a in review.actions] == [
        ("send_email", {"to": "a"}, DECISIONS),
        ("delete_file", {"path": "/tmp/x"}, ("approve", "reject")),
    ]
    assert review.actions[0].description == "Review send_email"
    assert review.allowed_for_all() == ("approve", "reject")


@pytest.mark.parametrize(
    "allowed",
    [list(c) for n in range(1, 5) for c in itertools.combinations(DECISIONS, n)],
)
def test_a_per_call_request_allows_exactly_the_decisions_of_its_schema(allowed: list[str]) -> None:
    review = read_request(tool_approval(), per_call_schema(allowed))
    assert isinstance(review, Review)
    assert review.format == "tool_approval"
    (action,) = review.actions
    assert action.allowed == tuple(allowed)
    if "edit" in allowed:
        assert action.args_schema is not None
        assert action.args_schema["properties"]["retries"]["type"] == "integer"


@pytest.mark.parametrize("allowed", list(itertools.product([False, True], repeat=4)))
def test_an_agent_inbox_request_allows_what_its_config_flags(allowed: tuple[bool, ...]) -> None:
    review = read_request(agent_inbox(dict(zip(FLAGS, allowed, strict=True))))
    assert isinstance(review, Review)
    expected = {"approve", "edit", "respond", "reject"} & {
        d for d, on in zip(("approve", "edit", "respond", "reject"), allowed, strict=True) if on
    }
    assert set(review.actions[0].allowed) == expected
    assert review.label("approve") == "Accept"
    assert review.label("reject") == "Ignore"


def test_only_the_first_agent_inbox_request_is_answered() -> None:
    first = {"action_request": {"action": "deploy", "args": {}}, "config": {"allow_accept": True}}
    review = read_request([first, *agent_inbox(allow_ignore=True)])
    assert isinstance(review, Review)
    assert (review.actions[0].name, review.actions[0].allowed, review.count) == (
        "deploy",
        ("approve",),
        2,
    )


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@pytest.mark.parametrize(
    ("kind", "values"),
    [
        (Literal["approve", "reject"], ["approve", "reject"]),
        (Literal["yes"], ["yes"]),
        (bool, [True, False]),
        (Colour, ["red", "blue"]),
        (Literal["approve", "reject"] | None, ["approve", "reject"]),
        (Literal[1, 2, 3], [1, 2, 3]),
    ],
)
def test_a_closed_response_schema_is_a_list_of_choices(kind: Any, values: list[Any]) -> None:
    request = read_request({"question": "Ship it?"}, TypeAdapter(kind).json_schema())
    assert isinstance(request, Choices)
    assert [o.value for o in request.options] == values
    assert request.question == "Ship it?"


def test_an_open_response_schema_is_a_question_showing_the_schema() -> None:
    schema = TypeAdapter(dict[str, int]).json_schema()
    request = read_request("How many?", schema)
    assert request == Question("How many?", schema)


def test_a_choice_list_in_the_value_is_offered() -> None:
    request = read_request(
        {"question": "Route to?", "options": ["ops", {"label": "Sales team", "value": {"t": 2}}]}
    )
    assert request == Choices(
        (Option("ops", "ops"), Option("Sales team", {"t": 2})), "value", "Route to?"
    )
    assert read_request({"choices": [True, 1]}) == Choices(
        (Option("true", True), Option("1", 1)), "value"
    )


@pytest.mark.parametrize(
    "value",
    [
        {"options": []},
        {"options": [None]},
        {"options": ["a", "a"]},
        {"options": [{"label": "x"}]},
        {"options": [[1]]},
        {"options": "ab"},
    ],
)
def test_a_malformed_choice_list_is_a_plain_question(value: Any) -> None:
    assert isinstance(read_request(value), Question)


@pytest.mark.parametrize(
    "value",
    [
        {"question": "Do you approve?", "llm_output": "..."},  # LangGraph's docs' approve graph
        "approve?",
        True,
        [1, 2],
        {"action_requests": [], "review_configs": []},
        {"action_requests": [{"name": "x"}], "review_configs": []},  # no args
        {"type": "tool_approval", "name": "x", "args": {}},  # no response schema
        agent_inbox(allow_accept=True)[0],  # not in a list: not what Agent Inbox reads
        [{"action_request": {"action": "x", "args": {}}, "config": {"allow_accept": "yes"}}],
        [{"action_request": {"action": "x", "args": {}}, "config": {}, "description": 3}],
    ],
)
def test_anything_else_is_a_question_that_takes_json(value: Any) -> None:
    request = read_request(value)
    assert isinstance(request, Question)
    with pytest.raises(DecisionError, match="declares no decisions"):
        answer(request, "approve")


def test_the_question_heading_comes_from_the_value() -> None:
    assert read_request({"question": "Deploy?", "x": 1}) == Question("Deploy?")
    assert read_request({"prompt": "Name?"}) == Question("Name?")
    assert read_request("Why?") == Question("Why?")
    assert read_request({"n": 1}) == Question(None)


# --- answering -------------------------------------------------------------------------


def test_a_batched_request_is_answered_by_position() -> None:
    review = read_request(
        hitl(
            ("send_email", {"to": "a"}, ["approve", "edit", "reject", "respond"]),
            ("delete_file", {"path": "/x"}, ["approve", "reject"]),
        )
    )
    assert answer(review, "approve") == {"decisions": [{"type": "approve"}] * 2}
    assert answer(
        review,
        [
            {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "b"}}},
            Decision("reject", message="keep it"),
        ],
    ) == {
        "decisions": [
            {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "b"}}},
            {"type": "reject", "message": "keep it"},
        ]
    }
    # an edit keeps the action's name unless it gives another (LangChain allows it here)
    assert answer(review, [Decision("edit", args={"to": "c"}), "approve"])["decisions"][0] == {
        "type": "edit",
        "edited_action": {"name": "send_email", "args": {"to": "c"}},
    }


@pytest.mark.parametrize(
    ("decisions", "message"),
    [
        (
            [Decision("edit", args={"to": "b"}), Decision("edit", args={"path": "/y"})],
            "Action 2 \\(delete_file\\) does not allow 'edit': it allows approve, reject",
        ),
        (Decision("respond", message="hi"), "Action 2 \\(delete_file\\) does not allow 'respond'"),
        (Decision("edit", args={"to": "b"}), "An edit is for one action"),
        (["approve"] * 3, "has 2 action\\(s\\) \\(send_email, delete_file\\)"),
    ],
)
def test_a_decision_the_batched_request_does_not_allow_is_refused_naming_what_it_allows(
    decisions: Any, message: str
) -> None:
    review = read_request(
        hitl(
            ("send_email", {"to": "a"}, ["approve", "edit", "reject", "respond"]),
            ("delete_file", {"path": "/x"}, ["approve", "reject"]),
        )
    )
    with pytest.raises(DecisionError, match=message):
        answer(review, decisions)


def test_a_per_call_request_takes_one_decision_and_keeps_the_tool_name() -> None:
    review = read_request(tool_approval(), per_call_schema(["approve", "edit", "respond"]))
    assert answer(review, "approve") == {"type": "approve"}
    assert answer(review, Decision("respond", message="It is Monday.")) == {
        "type": "respond",
        "message": "It is Monday.",
    }
    assert answer(review, Decision("edit", args={"to": "x@y.z", "retries": 0})) == {
        "type": "edit",
        "edited_action": {"name": "send_email", "args": {"to": "x@y.z", "retries": 0}},
    }
    with pytest.raises(DecisionError, match="pins it to 'send_email'"):
        answer(review, Decision("edit", args={}, name="delete_file"))
    with pytest.raises(DecisionError, match="allows approve, edit, respond"):
        answer(review, "reject")
    # the answer validates against the schema the graph checks it with
    adapter = TypeAdapter(Any)
    assert adapter.validate_python(answer(review, "approve")) == {"type": "approve"}


def test_an_agent_inbox_request_takes_decisions_as_its_human_responses() -> None:
    review = read_request(agent_inbox(dict.fromkeys(FLAGS, True)))
    original = {"action": "send_email", "args": {"to": "a@b.c", "retries": 3}}
    assert answer(review, "approve") == [{"type": "accept", "args": original}]
    assert answer(review, "reject") == [{"type": "ignore", "args": None}]
    assert answer(review, Decision("respond", message="not today")) == [
        {"type": "response", "args": "not today"}
    ]
    # Agent Inbox sends every argument as the text the human typed
    assert answer(review, Decision("edit", args={"to": "d@e.f", "retries": 5})) == [
        {"type": "edit", "args": {"action": "send_email", "args": {"to": "d@e.f", "retries": "5"}}}
    ]
    with pytest.raises(DecisionError, match="missing: \\['retries'\\]"):
        answer(review, Decision("edit", args={"to": "x"}))
    with pytest.raises(DecisionError, match="unknown: \\['cc'\\]"):
        answer(review, Decision("edit", args={"to": "x", "retries": 1, "cc": "y"}))
    with pytest.raises(DecisionError, match="carries no message"):
        answer(review, Decision("reject", message="no"))
    only_edit = read_request(agent_inbox(allow_edit=True))
    with pytest.raises(DecisionError, match="does not allow 'approve': it allows edit"):
        answer(only_edit, "approve")


def test_choices_take_approve_or_reject_only_when_they_are_choices() -> None:
    words = read_request("Ship?", TypeAdapter(Literal["approve", "reject"]).json_schema())
    assert answer(words, "approve") == "approve"
    assert answer(words, "reject") == "reject"
    yes_no = read_request("Ship?", TypeAdapter(bool).json_schema())
    with pytest.raises(DecisionError, match="choices \\(true, false\\); 'approve' is not one"):
        answer(yes_no, "approve")
    with pytest.raises(DecisionError, match="not one of them"):
        answer(words, Decision("reject", message="why"))


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("maybe", "Unknown decision 'maybe'"),
        ({"type": "edit"}, "gives the action's new args"),
        ({"type": "respond"}, "needs a message"),
        ({"type": "approve", "message": "x"}, "takes no message"),
        ({"type": "approve", "args": {}}, "Unknown fields"),
        ({"type": "edit", "edited_action": {"args": {}, "tool": "x"}}, "edited_action is"),
        (3, "A decision is a type"),
        ([], "non-empty list"),
    ],
)
def test_a_malformed_decision_is_refused_clearly(raw: Any, message: str) -> None:
    with pytest.raises(DecisionError, match=message) as info:
        answer(read_request(agent_inbox(dict.fromkeys(FLAGS, True))), raw)
    assert isinstance(info.value, WorkerError)
    assert isinstance(info.value, ValueError)


def test_the_action_filter_matches_every_format() -> None:
    from workers.store.memory import _contains

    batched = hitl(("send_email", {"to": "ops", "cc": "x"}, ["approve"]), ("other", {}, []))
    per_call = tool_approval({"to": "ops"})
    inbox = agent_inbox(allow_accept=True)

    def matches(value: Any, **kw: Any) -> bool:
        return any(_contains(value, f) for f in action_filter(kw.get("action"), kw.get("args")))

    assert matches(batched, action="send_email", args={"to": "ops"})
    assert matches(batched, action="other")
    assert not matches(batched, action="other", args={"to": "ops"})  # same action only
    assert matches(per_call, action="send_email")
    assert matches(per_call, args={"to": "ops"})
    assert not matches(per_call, action="delete_file")
    assert matches(inbox, action="send_email", args={"to": "a@b.c"})
    assert not matches({"name": "send_email", "args": {}}, action="send_email")  # no type
    assert action_filter(None, None) == []
    with pytest.raises(DecisionError, match="args filter is an object"):
        action_filter("x", ["to"])  # type: ignore[arg-type]
