"""Shared by the serde tests: exact comparison, value types and hypothesis strategies."""

from __future__ import annotations

import dataclasses
import enum
import math
import uuid
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any, NamedTuple

from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from graphruntime.types import Command, Interrupt, Overwrite, Send


def same(a: Any, b: Any) -> bool:
    """Equal in value *and* type, all the way down (nan equals nan, -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, Decimal):
        return str(a) == str(b)
    if isinstance(a, (datetime, time)):
        return bool(
            a == b and a.tzinfo == b.tzinfo and a.fold == b.fold and a.tzname() == b.tzname()
        )
    if isinstance(a, enum.Enum):
        return a is b
    if isinstance(a, (list, tuple)):  # NamedTuples too: their type was checked above
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (set, frozenset)):
        return len(a) == len(b) and all(any(same(x, y) for y in b) for x in a)
    if isinstance(a, dict):
        return len(a) == len(b) and all(
            same(ka, kb) and same(va, vb)
            for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    if isinstance(a, BaseModel):
        return (
            same(a.__dict__, b.__dict__)
            and a.model_fields_set == b.model_fields_set
            and same(a.__pydantic_extra__, b.__pydantic_extra__)
            and same(a.__pydantic_private__, b.__pydantic_private__)
        )
    if isinstance(a, Send):
        return same(a.node, b.node) and same(a.arg, b.arg)
    if dataclasses.is_dataclass(a):  # Box, Interrupt, Command, Overwrite, ...
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return bool(a == b)


# -- module-level value types (importable by name) ------------------------------------


class Color(enum.Enum):
    RED = 1
    GREEN = "g"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Box:
    item: Any
    label: str = ""


@dataclasses.dataclass(frozen=True)
class FrozenBox:
    item: Any


class Holder(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    item: Any = None
    note: str = ""


class Pair(NamedTuple):
    left: Any
    right: Any = None


CLASSES: list[type] = [Color, Level, Box, FrozenBox, Holder, Pair]


# -- strategies ---------------------------------------------------------------------------

_hashable_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.binary(max_size=8),
    st.uuids(),
    st.decimals(allow_nan=False),
    st.sampled_from([*Color, *Level]),
    st.dates(),
)
_timezones = st.one_of(
    st.none(),
    st.just(UTC),
    st.timedeltas(min_value=timedelta(hours=-23), max_value=timedelta(hours=23)).map(
        lambda d: timezone(timedelta(minutes=d // timedelta(minutes=1)))
    ),
    st.timezones(),
)
_scalars = st.one_of(
    _hashable_scalars,
    st.floats(),  # nan and infinities
    st.sampled_from(["__gr__", "tuple", "dict", "cls", "[[[{", '"\\']),
    st.datetimes(timezones=_timezones),
    st.times(timezones=st.one_of(st.none(), st.just(UTC))),
    st.timedeltas(),
    st.binary(max_size=8).map(bytearray),
    st.decimals(),
)
hashables = st.recursive(
    _hashable_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3).map(tuple),
        st.frozensets(children, max_size=3),
        st.tuples(children, children).map(lambda t: Pair(*t)),
    ),
    max_leaves=8,
)
_keys = st.one_of(st.text(max_size=5), st.sampled_from(["__gr__", "v", "items"]), hashables)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=5), children, max_size=4),
        st.dictionaries(_keys, children, max_size=4),
        st.sets(hashables, max_size=4),
        st.frozensets(hashables, max_size=4),
        st.builds(Box, children, st.text(max_size=3)),
        st.builds(FrozenBox, children),
        st.builds(Holder, item=children),
        st.builds(Pair, children, children),
        st.builds(Send, st.text(min_size=1, max_size=5), children),
        st.builds(Interrupt, children, st.text(max_size=5)),
        st.builds(Command, update=children, resume=children),
        st.builds(Command, goto=st.lists(st.builds(Send, st.just("n"), children), max_size=2)),
        st.builds(Overwrite, children),
    )


values = st.recursive(_scalars, _containers, max_leaves=30)
"""Nested values of every kind the serializer stores, built from the CLASSES above."""


class Opaque:
    """A plain class: no way to store it."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Opaque)

    __hash__ = object.__hash__


@dataclasses.dataclass
class NeedsInitVar:
    x: int
    scale: dataclasses.InitVar[int]

    def __post_init__(self, scale: int) -> None:
        self.x *= scale


class ShortNew(NamedTuple):
    a: int
    b: int


def _short_new(cls: type, a: int) -> Any:
    return tuple.__new__(cls, (a, 0))


ShortNew.__new__ = _short_new  # type: ignore[assignment, method-assign]


def poisons() -> list[Any]:
    """Values the serializer must refuse: none of them could be read back as they are."""
    import os
    import platform
    import time as time_module
    from collections import OrderedDict

    class MyStr(str):
        pass

    class MyUUID(uuid.UUID):
        pass

    return [
        Opaque(),
        platform.uname(),
        os.stat("."),
        time_module.gmtime(0),
        OrderedDict(a=1),
        MyStr("x"),
        MyUUID(int=1),
        NeedsInitVar(1, 2),
        ShortNew(1),  # type: ignore[call-arg]
        date.today,  # a function
    ]
