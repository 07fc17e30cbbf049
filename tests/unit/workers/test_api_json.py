"""Values in the API's JSON: LangGraph's shapes for its types."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from pydantic import BaseModel

from graphruntime.types import Command, Interrupt, Send
from workers.api._json import jsonable


class Note(BaseModel):
    text: str


@dataclasses.dataclass
class Point:
    x: int


def test_langgraph_types_and_plain_values() -> None:
    assert jsonable(Interrupt(value={"q": 1}, id="abc")) == {
        "value": {"q": 1},
        "id": "abc",
        "response_schema": None,
    }
    assert jsonable(Send("node", {"a": (1, 2)})) == {"node": "node", "arg": {"a": [1, 2]}}
    assert jsonable(Command(resume="yes", goto="n")) == {"resume": "yes", "goto": "n"}
    assert jsonable([Note(text="hi"), Point(3)]) == [{"text": "hi"}, {"x": 3}]
    assert jsonable(datetime(2026, 1, 1, tzinfo=UTC)) == "2026-01-01T00:00:00+00:00"
    assert jsonable(float("nan")) is None
    assert jsonable(b"\x00\x01") == "AAE="


def test_messages_dump_as_langchain_does() -> None:
    from langchain_core.messages import AIMessage

    dumped = jsonable(AIMessage(content="hi", id="m1"))
    assert dumped["type"] == "ai"
    assert dumped["content"] == "hi"
    assert dumped["id"] == "m1"
