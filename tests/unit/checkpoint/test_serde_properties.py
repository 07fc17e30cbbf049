"""Property tests: what the serializer writes it reads back exactly; what it cannot, it refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphruntime.checkpoint import JsonSerializer, _serde_decode, check_round_trip
from graphruntime.errors import SerializationError
from graphruntime.types import Command, Send
from tests.unit.checkpoint.serde_cases import CLASSES, Box, Holder, poisons, same, values

LEARNING = JsonSerializer()
STRICT = JsonSerializer(strict=True, allowed_classes=CLASSES)

_settings = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_settings
@given(values)
def test_every_value_round_trips_with_its_types(value: Any) -> None:
    for serde in (LEARNING, STRICT):
        kind, data = serde.dumps_typed(value)
        assert kind in ("json", "bytes", "bytearray")
        assert same(serde.loads_typed((kind, data)), value)


@_settings
@given(values)
def test_a_fresh_process_reads_what_a_strict_serializer_writes(value: Any) -> None:
    check_round_trip(value, STRICT)  # raises if a fresh, equally configured one could not
    assert same(STRICT.fresh().loads_typed(STRICT.dumps_typed(value)), value)


# -- refusals ---------------------------------------------------------------------------------

# Each wrapper puts a value one level down and says where: the path the error must name.
_WRAPPERS: list[tuple[str, Any]] = [
    ("[0]", lambda x: [x]),
    ("[1]", lambda x: ["pad", x]),
    ("['k']", lambda x: {"k": x}),
    ("[1]", lambda x: {1: x}),
    ("[(1, 'a')]", lambda x: {(1, "a"): x}),
    ("[0]", lambda x: (x,)),
    (".item", lambda x: Box(x)),
    (".item", lambda x: Holder(item=x)),
    (".arg", lambda x: Send("node", x)),
    (".update", lambda x: Command(update=x)),
]


@st.composite
def _poisoned(draw: st.DrawFn) -> tuple[Any, str, Any]:
    poison = draw(st.sampled_from(poisons()))
    value, path = poison, ""
    for segment, wrap in draw(st.lists(st.sampled_from(_WRAPPERS), max_size=6)):
        value, path = wrap(value), segment + path
    return value, path, poison


@_settings
@given(_poisoned())
def test_values_that_cannot_round_trip_are_refused_naming_where(
    case: tuple[Any, str, Any],
) -> None:
    value, path, poison = case
    for serde in (LEARNING, STRICT):
        with pytest.raises(SerializationError) as info:
            serde.dumps_typed(value)
        message = str(info.value)
        assert message.startswith(f"Cannot serialize value{path}: "), message
        assert type(poison).__qualname__ in message or "function" in message


@_settings
@given(
    st.recursive(
        st.one_of(values, st.sampled_from(poisons())),
        lambda c: st.lists(c, max_size=3),
        max_leaves=4,
    )
)
def test_nothing_written_is_unreadable(value: Any) -> None:
    for serde in (LEARNING, STRICT):
        try:
            data = serde.dumps_typed(value)
        except SerializationError:
            continue
        assert same(serde.loads_typed(data), value)


# -- the load-side nesting bound --------------------------------------------------------------


def _json_depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(_json_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_json_depth, value.values()), default=0)
    return 0


_json = st.recursive(
    st.one_of(st.none(), st.integers(), st.text(alphabet='[]{}"\\ab\n')),
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.text(max_size=3), c)),
    max_leaves=40,
)


@_settings
@given(_json, st.integers(min_value=1, max_value=6), st.booleans())
def test_depth_check_measures_json_nesting_exactly(
    value: Any, limit: int, ascii_only: bool
) -> None:
    # Brackets, quotes and backslashes inside strings must not count.
    payload = json.dumps(value, ensure_ascii=ascii_only).encode()
    original = _serde_decode.MAX_JSON_DEPTH
    _serde_decode.MAX_JSON_DEPTH = limit
    try:
        if _json_depth(value) <= limit:
            _serde_decode.check_depth(payload)
        else:
            with pytest.raises(SerializationError, match="nested deeper"):
                _serde_decode.check_depth(payload)
    finally:
        _serde_decode.MAX_JSON_DEPTH = original
