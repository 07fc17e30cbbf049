"""JsonSerializer: exact round-trips, wire format, security and error messages."""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import os
import platform
import time as time_module
import uuid
from collections import OrderedDict, defaultdict
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from decimal import Decimal
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

import pytest
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, RootModel

from graphruntime.checkpoint import JsonSerializer, SerializerProtocol
from graphruntime.checkpoint.serde import MAX_DEPTH
from graphruntime.errors import CheckpointError, SerializationError
from graphruntime.types import Command, Interrupt, Overwrite, Send
from tests.unit.checkpoint.serde_cases import Box, Opaque, same

SERDE = JsonSerializer()


def roundtrip(value: Any, serde: JsonSerializer = SERDE) -> Any:
    return serde.loads_typed(serde.dumps_typed(value))


# -- module-level types (resolvable by name) ---------------------------------


class Color(enum.Enum):
    RED = 1
    GREEN = (2, "g")


class Level(enum.IntEnum):
    LOW = 1


class Mode(enum.StrEnum):
    FAST = "fast"


class Perm(enum.Flag):
    R = 4
    W = 2


class Address(BaseModel):
    city: str
    since: datetime | None = None


class Person(BaseModel):
    name: str
    address: Address
    tags: set[str] = Field(default_factory=set)
    nickname: str | None = None


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")
    a: int


class Aliased(BaseModel):
    value: int = Field(alias="Value")


class Scores(RootModel[list[int]]):
    pass


@dataclasses.dataclass
class Point:
    x: int
    y: float = 0.0
    label: str = dataclasses.field(init=False, default="")

    def __post_init__(self) -> None:
        self.label = f"{self.x},{self.y}"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Frozen:
    when: date
    points: tuple[Point, ...] = ()
    computed: int = dataclasses.field(init=False, default=0)


class Pair(NamedTuple):
    left: Any
    right: Any = None


class _MyUUID(uuid.UUID):
    pass


class _FixedTz(tzinfo):
    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(hours=2)

    def tzname(self, dt: datetime | None) -> str:
        return "X"

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)


@dataclasses.dataclass
class _NeedsScale:
    x: int
    scale: dataclasses.InitVar[int]

    def __post_init__(self, scale: int) -> None:
        self.x *= scale


@dataclasses.dataclass(init=False)
class _CustomInit:
    x: int

    def __init__(self, unit: int) -> None:
        self.x = unit


@dataclasses.dataclass(init=False)
class _NoInit:
    x: int = 0


class _WithPrivate(BaseModel):
    a: int
    _cache: dict[str, Any] = PrivateAttr(default_factory=dict)


# -- round trips ---------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        -(2**70),
        1.5,
        -0.0,
        float("inf"),
        float("-inf"),
        "",
        "héllo ☃ \x00 \n",
        "\ud800 lone surrogate",
        [],
        [1, [2, [3]]],
        (),
        (1, "a", (2,)),
        {1, 2},
        frozenset({"a", (1, 2)}),
        {},
        {"b": 1, "a": 2},
        {1: "int", None: "none", (1, 2): "tuple", False: "bool", 2.5: "float"},
        b"",
        b"\x00\xff",
        bytearray(b"ab"),
        [b"inside", bytearray(b"x")],
        datetime(2024, 1, 2, 3, 4, 5, 678901),
        datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
        datetime(2024, 1, 2, tzinfo=timezone(timedelta(hours=-3, minutes=-30))),
        date(2024, 2, 29),
        time(23, 59, 59, 999999),
        time(1, 2, tzinfo=timezone(timedelta(hours=2))),
        timedelta(days=-3, seconds=5, microseconds=7),
        uuid.UUID("12345678-1234-5678-1234-567812345678"),
        Decimal("1.10"),
        Decimal("-0"),
        Decimal("1E+3"),
        Decimal("sNaN"),
    ],
    # Not repr: set order varies between xdist workers (hash randomization).
    ids=lambda v: type(v).__name__,
)
def test_builtin_values_round_trip_exactly(value: Any) -> None:
    loaded = roundtrip(value)
    if isinstance(value, Decimal) and value.is_nan():
        assert type(loaded) is Decimal
        assert str(loaded) == str(value)
    else:
        assert same(loaded, value)


def test_nan_round_trips() -> None:
    loaded = roundtrip([float("nan")])
    assert math.isnan(loaded[0])


def test_zoneinfo_datetime_keeps_zone_and_fold() -> None:
    zone = ZoneInfo("Europe/Paris")
    ambiguous = datetime(2024, 10, 27, 2, 30, tzinfo=zone, fold=1)
    loaded = roundtrip(ambiguous)
    assert loaded.tzinfo == zone
    assert loaded.fold == 1
    assert loaded.utcoffset() == ambiguous.utcoffset()
    assert loaded == ambiguous


@pytest.mark.parametrize(
    "value", [Color.RED, Color.GREEN, Level.LOW, Mode.FAST, Perm.R | Perm.W], ids=repr
)
def test_enum_members_round_trip(value: enum.Enum) -> None:
    assert roundtrip(value) is value


def test_pydantic_models_keep_nested_types_and_fields_set() -> None:
    person = Person(
        name="ann",
        address=Address(city="Paris", since=datetime(2020, 1, 1, tzinfo=UTC)),
        tags={"x"},
    )
    loaded = roundtrip(person)
    assert type(loaded) is Person
    assert loaded == person
    assert type(loaded.address) is Address
    assert type(loaded.address.since) is datetime
    assert type(loaded.tags) is set
    assert loaded.model_fields_set == {"name", "address", "tags"}
    assert loaded.address.model_fields_set == {"city", "since"}


def test_pydantic_extra_alias_and_root_models() -> None:
    loose = Loose(a=1, extra_field=(1, 2))  # type: ignore[call-arg]
    loaded = roundtrip(loose)
    assert loaded == loose
    assert loaded.__pydantic_extra__ == {"extra_field": (1, 2)}
    aliased = Aliased(Value=3)
    assert roundtrip(aliased) == aliased
    scores = Scores([3, 1])
    assert roundtrip(scores) == scores


def test_dataclasses_round_trip_with_init_false_fields() -> None:
    point = Point(1, 2.5)
    point.label = "custom"  # overwritten after __post_init__: must survive
    loaded = roundtrip(point)
    assert type(loaded) is Point
    assert loaded == point
    assert loaded.label == "custom"
    frozen = Frozen(when=date(2024, 1, 1), points=(Point(1),))
    object.__setattr__(frozen, "computed", 42)
    loaded_frozen = roundtrip(frozen)
    assert loaded_frozen == frozen
    assert loaded_frozen.computed == 42
    assert type(loaded_frozen.points) is tuple


def test_namedtuples_round_trip() -> None:
    pair = Pair(Pair(1), {"k": (2,)})
    loaded = roundtrip(pair)
    assert same(loaded, pair)
    assert type(loaded.left) is Pair


def test_runtime_types_round_trip() -> None:
    values = [
        Send("node", {"arg": (1, 2)}),
        Interrupt(value={"question": "?"}, id="abc"),
        Interrupt("v", response_schema={"type": "string"}),
        Command(update={"a": 1}, resume={"id": "yes"}, goto=[Send("n", 1), "other"]),
        Command(graph=Command.PARENT, goto="x"),
        Overwrite([1, 2]),
    ]
    loaded = roundtrip(values)
    assert loaded == values
    assert [type(v) for v in loaded] == [type(v) for v in values]
    assert type(loaded[3].goto[0]) is Send


def test_exceptions_become_their_repr() -> None:
    assert roundtrip(ValueError("boom")) == "ValueError('boom')"
    assert roundtrip({"error": KeyError("k")}) == {"error": "KeyError('k')"}


def test_dict_key_order_is_preserved() -> None:
    value = {"z": 1, "a": 2, 3: "x", "m": 4}
    assert list(roundtrip(value)) == ["z", "a", 3, "m"]


# -- the __gr__ escape -----------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        {"__gr__": "tuple", "v": [1, 2]},
        {"__gr__": None},
        {"outer": {"__gr__": "pydantic", "cls": "os:system", "v": {}}},
        [{"__gr__": {"__gr__": "dict", "items": []}}],
    ],
    ids=repr,
)
def test_user_dicts_that_look_tagged_round_trip_as_dicts(value: Any) -> None:
    assert same(roundtrip(value), value)


# -- wire format ---------------------------------------------------------------------


def test_wire_format() -> None:
    assert isinstance(SERDE, SerializerProtocol)
    assert SERDE.dumps_typed(b"raw") == ("bytes", b"raw")
    assert SERDE.dumps_typed(bytearray(b"raw")) == ("bytearray", b"raw")
    assert SERDE.dumps_typed(None) == ("json", b"null")
    assert SERDE.dumps_typed({"a": [1, "é"]}) == ("json", '{"a":[1,"é"]}'.encode())
    kind, data = SERDE.dumps_typed({"t": (1,), 2: 3.0})
    assert kind == "json"
    assert json.loads(data) == {
        "__gr__": "dict",
        "items": [["t", {"__gr__": "tuple", "v": [1]}], [2, 3.0]],
    }
    _, model = SERDE.dumps_typed(Address(city="x"))
    assert json.loads(model) == {
        "__gr__": "pydantic",
        "cls": f"{__name__}:Address",
        "v": {"city": "x", "since": None},
        "set": ["city"],
    }
    # Strict JSON: no NaN/Infinity literals, so any JSON parser (or JSONB) accepts it.
    _, special = SERDE.dumps_typed([float("nan"), float("inf")])
    assert b"NaN" not in special
    assert b"Infinity" not in special


def test_plain_json_passes_through_unchanged() -> None:
    value = {"list": list(range(100)), "nested": [{"k": "v", "n": None, "f": 1.25}] * 10}
    _, data = SERDE.dumps_typed(value)
    assert data == json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    assert roundtrip(value) == value


def test_reads_null_tag() -> None:
    assert SERDE.loads_typed(("null", b"")) is None


# -- errors ---------------------------------------------------------------------------


def test_unknown_type_on_dump_names_type_and_supported_types() -> None:
    class Opaque:
        pass

    with pytest.raises(CheckpointError) as info:
        SERDE.dumps_typed({"nested": [Opaque()]})
    message = str(info.value)
    assert "Opaque" in message
    assert "pydantic" in message
    assert "dataclasses" in message


def test_self_referencing_value_is_refused_with_its_path() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(SerializationError) as info:
        SERDE.dumps_typed({"a": loop})
    message = str(info.value)
    assert message.startswith("Cannot serialize value['a'][0][0]")
    assert f"nested more than {MAX_DEPTH} levels deep (or contains itself)" in message


def test_unknown_serialized_type_and_corrupt_data() -> None:
    with pytest.raises(CheckpointError, match="'pickle'"):
        SERDE.loads_typed(("pickle", b"\x80\x04"))
    with pytest.raises(CheckpointError, match="Corrupt"):
        SERDE.loads_typed(("json", b"{not json"))
    with pytest.raises(CheckpointError, match="Unknown tag"):
        SERDE.loads_typed(("json", b'{"__gr__":"nope"}'))


# -- refused at write time: what could not be read back -----------------------------------


@dataclasses.dataclass
class Doc:
    meta: list[Any]


@pytest.mark.parametrize(
    ("value", "path", "reason"),
    [
        (
            {"doc": Doc(meta=[1, 2, platform.uname()])},
            "value['doc'].meta[2]",
            "platform:uname_result (a NamedTuple) has 6 fields",
        ),
        ([os.stat(".")], "value[0]", "C struct sequence"),
        ((1, time_module.gmtime(0)), "value[1]", "C struct sequence"),
        ({"a": OrderedDict(x=1)}, "value['a']", "subclass of dict"),
        ({"a": {1: defaultdict(list)}}, "value['a'][1]", "subclass of dict"),
        ([Send("n", {"k": [Opaque()]})], "value[0].arg['k'][0]", "serde_cases.Opaque"),
        (Command(update={"x": Opaque()}), "value.update['x']", "Opaque"),
        (Command(goto=[Send("n", Opaque())]), "value.goto[0].arg", "Opaque"),
        (Interrupt(value=[Opaque()]), "value.value[0]", "Opaque"),
        (Overwrite(Opaque()), "value.value", "Opaque"),
        ({"s": frozenset({Opaque()})}, "value['s'] (an element of a frozenset)", "Opaque"),
        ({Opaque(): 1}, "value<key ", "Opaque"),
        ({"u": _MyUUID(int=1)}, "value['u']", "subclass of"),
        ({"when": datetime(2024, 1, 1, tzinfo=_FixedTz())}, "value['when']", "fixed offset"),
        (Address.model_construct(city=Opaque()), "value.city", "Opaque"),  # type: ignore[arg-type]
        (_NeedsScale(1, 2), "value", "__init__ requires 'scale'"),
        (_CustomInit(1), "value", "__init__ requires 'unit'"),
    ],
    ids=lambda v: v if isinstance(v, str) and v.startswith("value") else "",
)
def test_values_that_could_not_be_read_back_are_refused(value: Any, path: str, reason: str) -> None:
    with pytest.raises(SerializationError) as info:
        SERDE.dumps_typed(value)
    message = str(info.value)
    assert message.startswith(f"Cannot serialize {path}"), message
    assert reason in message


class _Label(str):
    pass


def test_langchains_message_text_is_stored_as_the_str_it_stands_for() -> None:
    from langchain_core.messages import AIMessage

    text = AIMessage(content="ship it").text
    assert isinstance(text, str)
    assert type(text) is not str  # langchain_core's TextAccessor
    loaded = roundtrip({"answer": text})
    assert loaded == {"answer": "ship it"}
    assert type(loaded["answer"]) is str  # as LangGraph's serializer stores it
    with pytest.raises(SerializationError, match="subclass of str"):
        SERDE.dumps_typed({"answer": _Label("ship it")})  # any other str subclass


def test_named_fixed_timezones_and_init_false_dataclasses_round_trip() -> None:
    cet = timezone(timedelta(hours=1), "CET")
    no_init = _NoInit()
    no_init.x = 5
    value = [datetime(2024, 1, 1, tzinfo=cet), time(1, tzinfo=cet), no_init]
    loaded = roundtrip(value)
    assert loaded[0].tzname() == "CET"
    assert loaded[1].tzname() == "CET"
    assert same(loaded[:2], value[:2])
    assert type(loaded[2]) is _NoInit
    assert loaded[2].x == 5


def test_pydantic_private_attributes_round_trip() -> None:
    model = _WithPrivate(a=1)
    model._cache = {"k": (1, 2)}
    loaded = roundtrip(model)
    assert loaded._cache == {"k": (1, 2)}
    assert loaded == model


# -- nesting bounds ----------------------------------------------------------------------------


def _nest(kind: str, levels: int) -> Any:
    value: Any = 0
    for _ in range(levels):
        if kind == "list":
            value = [value]
        elif kind == "tuple":
            value = (value,)
        elif kind == "dict":
            value = {"k": value}
        elif kind == "keys":  # the widest encoding: three JSON levels per level
            value = {1: value}
        elif kind == "dataclass":
            value = Box(value)
        else:
            value = Send("n", value)
    return value


@pytest.mark.parametrize("kind", ["list", "tuple", "dict", "keys", "dataclass", "send"])
def test_values_up_to_max_depth_round_trip_and_deeper_ones_are_refused(kind: str) -> None:
    assert same(roundtrip(_nest(kind, MAX_DEPTH)), _nest(kind, MAX_DEPTH))
    with pytest.raises(SerializationError, match=f"nested more than {MAX_DEPTH} levels"):
        SERDE.dumps_typed(_nest(kind, MAX_DEPTH + 1))


@pytest.mark.parametrize("levels", [3 * MAX_DEPTH + 2, 100_000])
def test_loading_refuses_forged_deep_json(levels: int) -> None:
    forged = b"[" * levels + b"]" * levels
    with pytest.raises(SerializationError, match="nested deeper than"):
        SERDE.loads_typed(("json", forged))
    with pytest.raises(SerializationError, match="nested deeper than"):
        SERDE.loads_typed(("json", b'{"a": "[[[", "b": ' + forged + b"}"))


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = '"\\' + "[{" * 1000 + '"'
    value = {"s": [text, "]" * 700], "t": [[["x"]]]}
    assert roundtrip(value) == value
