"""schema_classes: the classes a state schema's values can hold."""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Any, Literal, NamedTuple, NotRequired, Optional, TypedDict, Union

import pytest
from pydantic import BaseModel

from graphruntime.checkpoint import JsonSerializer, check_round_trip, schema_classes


class Mood(enum.Enum):
    HAPPY = "happy"


class Level(enum.IntEnum):
    ONE = 1


class Point(NamedTuple):
    x: int
    y: int


@dataclasses.dataclass
class Tag:
    name: str
    points: dict[str, list[Point]] = dataclasses.field(default_factory=dict)


class Address(BaseModel):
    city: str
    tags: list[Tag] = []


class Person(BaseModel):
    name: str
    home: Optional[Address] = None  # noqa: UP045 - Optional on purpose: both spellings
    mood: Mood | None = None
    friends: list[Person] = []  # recursive


class State(TypedDict):
    people: Annotated[list[Person], "reducer metadata"]
    level: NotRequired[Literal[Level.ONE]]
    anything: Any
    numbers: dict[str, tuple[int, ...]]
    either: Union[int, Missing]  # type: ignore[name-defined]  # noqa: F821, UP007 - never resolves


class Opaque:
    pass


@dataclasses.dataclass
class WithInitVar:
    x: int
    scale: dataclasses.InitVar[int]


@dataclasses.dataclass
class DataState:
    items: list[Opaque]  # not storable: not collected
    broken: WithInitVar | None = None  # cannot round-trip: left out


def test_walks_typeddicts_models_dataclasses_and_type_arguments() -> None:
    assert schema_classes(State) == {Person, Address, Tag, Point, Mood, Level}


def test_includes_model_and_dataclass_schemas_themselves() -> None:
    assert schema_classes(Address) == {Address, Tag, Point}
    assert schema_classes(DataState) == {DataState}
    assert schema_classes(Address, Mood) == {Address, Tag, Point, Mood}


def test_collected_classes_let_a_strict_serializer_store_the_state() -> None:
    serde = JsonSerializer(strict=True, allowed_classes=schema_classes(State))
    value = {
        "people": [Person(name="a", home=Address(city="x", tags=[Tag("t", {"p": [Point(1, 2)]})]))],
        "level": Level.ONE,
        "numbers": {"n": (1, 2)},
    }
    check_round_trip(value, serde)
    assert serde.loads_typed(serde.dumps_typed(value)) == value


def test_messages_state_collects_langchain_message_classes() -> None:
    message = pytest.importorskip(
        "graphruntime.graph.message", reason="langchain-core (graphruntime[messages]) missing"
    )
    names = {cls.__name__ for cls in schema_classes(message.MessagesState)}
    assert {"AIMessage", "HumanMessage", "SystemMessage", "ToolMessage", "AIMessageChunk"} <= names
