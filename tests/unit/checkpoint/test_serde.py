"""JsonSerializer: exact round-trips, wire format, security and error messages."""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import sys
import textwrap
import uuid
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, RootModel

from graphruntime.checkpoint import JsonSerializer, SerializerProtocol
from graphruntime.errors import CheckpointError
from graphruntime.types import Command, Interrupt, Overwrite, Send

SERDE = JsonSerializer()


def roundtrip(value: Any, serde: JsonSerializer = SERDE) -> Any:
    return serde.loads_typed(serde.dumps_typed(value))


def same(a: Any, b: Any) -> bool:
    """Equal in value *and* type, all the way down (nan equals nan, -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return len(a) == len(b) and all(
            same(ka, kb) and same(va, vb)
            for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    return bool(a == b)


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


def test_self_referencing_value_is_a_checkpoint_error() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(CheckpointError, match="nested too deeply"):
        SERDE.dumps_typed(loop)


def test_unknown_serialized_type_and_corrupt_data() -> None:
    with pytest.raises(CheckpointError, match="'pickle'"):
        SERDE.loads_typed(("pickle", b"\x80\x04"))
    with pytest.raises(CheckpointError, match="Corrupt"):
        SERDE.loads_typed(("json", b"{not json"))
    with pytest.raises(CheckpointError, match="Unknown tag"):
        SERDE.loads_typed(("json", b'{"__gr__":"nope"}'))


# -- security ---------------------------------------------------------------------------


def _payload(tag: str, cls: str, v: Any) -> tuple[str, bytes]:
    return "json", json.dumps({"__gr__": tag, "cls": cls, "v": v, "set": []}).encode()


def test_refuses_to_import_modules_named_by_stored_data() -> None:
    module = "gr_never_imported_module"
    with pytest.raises(CheckpointError) as info:
        SERDE.loads_typed(_payload("dataclass", f"{module}:Thing", {}))
    message = str(info.value)
    assert module in message
    assert "allowed_modules" in message
    assert module not in sys.modules


@pytest.mark.parametrize(
    ("tag", "cls"),
    [
        ("dataclass", "collections:OrderedDict"),  # a class, but not an allowed kind
        ("namedtuple", "builtins:tuple"),
        ("pydantic", "os:system"),  # not a class at all
        ("dataclass", f"{__name__}:Color"),  # allowed kind, wrong tag
        ("enum", f"{__name__}:Point"),
    ],
)
def test_refuses_classes_that_are_not_data_types(tag: str, cls: str) -> None:
    with pytest.raises(CheckpointError, match="Refusing"):
        SERDE.loads_typed(_payload(tag, cls, {}))


def test_allowed_modules_may_be_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "gr_allowed_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(
        textwrap.dedent(
            """
            import dataclasses

            @dataclasses.dataclass
            class Thing:
                n: int
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    data = _payload("dataclass", "gr_allowed_pkg.models:Thing", {"n": 3})
    with pytest.raises(CheckpointError, match="Refusing"):
        JsonSerializer().loads_typed(data)
    assert "gr_allowed_pkg.models" not in sys.modules
    # A prefix must end at a dot: "gr_allowed" does not allow "gr_allowed_pkg".
    with pytest.raises(CheckpointError, match="Refusing"):
        JsonSerializer(allowed_modules=["gr_allowed"]).loads_typed(data)
    try:
        thing = JsonSerializer(allowed_modules=["gr_allowed_pkg"]).loads_typed(data)
        assert type(thing).__qualname__ == "Thing"
        assert thing.n == 3
    finally:
        sys.modules.pop("gr_allowed_pkg.models", None)
        sys.modules.pop("gr_allowed_pkg", None)


def test_local_classes_load_in_the_process_that_dumped_them() -> None:
    @dataclasses.dataclass
    class Local:
        value: int

    data = SERDE.dumps_typed(Local(1))
    assert JsonSerializer().loads_typed(data) == Local(1)


def test_unknown_local_class_says_why() -> None:
    name = f"{__name__}:test_unknown_local_class_says_why.<locals>.Gone"
    with pytest.raises(CheckpointError, match="module level"):
        SERDE.loads_typed(_payload("dataclass", name, {}))


# -- property test ------------------------------------------------------------------------

_keys = st.one_of(
    st.text(max_size=5),
    st.sampled_from(["__gr__", "v", "items", "cls"]),
    st.integers(),
    st.tuples(st.integers(), st.text(max_size=3)),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.binary(max_size=20),
    st.sampled_from(["__gr__", "tuple", "dict"]),
)
_hashables = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5))
_values = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.lists(children, max_size=5).map(tuple),
        st.dictionaries(_keys, children, max_size=5),
        st.frozensets(_hashables, max_size=5),
        st.sets(_hashables, max_size=5),
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(_values)
def test_property_nested_values_round_trip(value: Any) -> None:
    kind, data = SERDE.dumps_typed(value)
    assert kind in ("json", "bytes")
    assert same(SERDE.loads_typed((kind, data)), value)
