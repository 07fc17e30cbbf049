"""Search filters: parsed once into flat conditions that every store evaluates alike.

A filter maps a field to what it must hold::

    {"color": "red"}                      the field equals the JSON value "red"
    {"score": {"$gte": 3, "$lt": 5}}      operators: $eq $ne $gt $gte $lt $lte
    {"meta": {"lang": "en"}}              nested objects match field by field
    {"meta": {}}                          the field is an object

Semantics (the same in memory and in Postgres):

- Equality is JSON equality: ``1 == 1.0``, but ``true != 1``; lists compare in
  order, objects by keys. A missing field equals nothing, and ``$ne`` matches
  it (as Mongo's ``$ne`` does).
- ``$gt``/``$gte``/``$lt``/``$lte`` take a number or a string. They match only
  fields of the same kind: numbers compare numerically, strings by code point.
- A path goes through objects by key and through arrays by integer label
  (``"-1"`` is the last element), as Postgres' ``#>`` does.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, NamedTuple

from graphruntime.store._errors import InvalidStoreRequestError

__all__ = ("FilterCondition", "FilterOp", "json_equal", "matches_filter", "parse_filter")

FilterOp = Literal["eq", "ne", "gt", "gte", "lt", "lte", "object"]

_OPERATORS: dict[str, FilterOp] = {
    "$eq": "eq",
    "$ne": "ne",
    "$gt": "gt",
    "$gte": "gte",
    "$lt": "lt",
    "$lte": "lte",
}
_ORDERED = frozenset({"gt", "gte", "lt", "lte"})
_INDEX = re.compile(r"-?[0-9]+")


class FilterCondition(NamedTuple):
    """One test on the field at ``path``: ``op`` against the JSON ``value``."""

    path: tuple[str, ...]
    op: FilterOp
    value: Any


def parse_filter(spec: dict[str, Any] | None) -> tuple[FilterCondition, ...]:
    """The conditions of a search filter (all must hold).

    Raises:
        InvalidStoreRequestError: an unknown operator, operators mixed with plain
            fields, a non-JSON value, or an ordering operator on a non-scalar.
    """
    found: list[FilterCondition] = []
    if spec:
        if not isinstance(spec, dict):
            raise InvalidStoreRequestError(f"filter is a dict, got {type(spec).__name__}")
        _parse((), spec, found)
    return tuple(found)


def _parse(path: tuple[str, ...], spec: dict[Any, Any], out: list[FilterCondition]) -> None:
    for field, expected in spec.items():
        if not isinstance(field, str):
            raise InvalidStoreRequestError(f"Filter fields are strings, got {field!r}")
        if field.startswith("$"):
            where = ".".join(path) or "the top level"
            raise InvalidStoreRequestError(
                f"Operator {field!r} at {where}: operators go inside a field, "
                'e.g. {"score": {"$gt": 1}}'
            )
        at = (*path, field)
        if not isinstance(expected, dict):
            out.append(FilterCondition(at, "eq", _json(expected, at)))
        elif not expected:
            out.append(FilterCondition(at, "object", None))
        elif any(isinstance(k, str) and k.startswith("$") for k in expected):
            _parse_operators(at, expected, out)
        else:
            _parse(at, expected, out)


def _parse_operators(at: tuple[str, ...], spec: dict[Any, Any], out: list[FilterCondition]) -> None:
    for name, operand in spec.items():
        op = _OPERATORS.get(name) if isinstance(name, str) else None
        if op is None:
            raise InvalidStoreRequestError(
                f"Unsupported filter operator {name!r} on {'.'.join(at)!r}: use one of "
                f"{', '.join(_OPERATORS)} (and no plain fields beside them)"
            )
        if op in _ORDERED and (
            isinstance(operand, bool) or not isinstance(operand, int | float | str)
        ):
            raise InvalidStoreRequestError(
                f"{name} on {'.'.join(at)!r} compares with a number or a string, got {operand!r}"
            )
        out.append(FilterCondition(at, op, _json(operand, at)))


def _json(value: Any, at: tuple[str, ...]) -> Any:
    """``value`` as JSON data (tuples become lists); refuses what JSON cannot hold."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise InvalidStoreRequestError(
            f"Filter value for {'.'.join(at)!r} must be JSON: {exc}"
        ) from exc


_MISSING = object()


def _lookup(value: Any, path: tuple[str, ...]) -> Any:
    for label in path:
        if isinstance(value, dict):
            value = value.get(label, _MISSING)
        elif isinstance(value, list) and _INDEX.fullmatch(label):
            index = int(label)
            if not -len(value) <= index < len(value):
                return _MISSING
            value = value[index]
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON data as Postgres' jsonb defines it (``true`` is not ``1``)."""
    if _is_number(a):
        return _is_number(b) and bool(a == b)
    if isinstance(a, list):
        return (
            isinstance(b, list)
            and len(a) == len(b)
            and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(json_equal(v, b[k]) for k, v in a.items())
        )
    return type(a) is type(b) and bool(a == b)


def _ordered(found: Any, op: FilterOp, operand: Any) -> bool:
    if _is_number(operand):
        if not _is_number(found):
            return False
    elif not isinstance(found, str):
        return False
    if op == "gt":
        return bool(found > operand)
    if op == "gte":
        return bool(found >= operand)
    if op == "lt":
        return bool(found < operand)
    return bool(found <= operand)


def matches_filter(value: dict[str, Any], conditions: tuple[FilterCondition, ...]) -> bool:
    """Whether ``value`` meets every condition."""
    for condition in conditions:
        found = _lookup(value, condition.path)
        op = condition.op
        if op == "ne":
            if found is not _MISSING and json_equal(found, condition.value):
                return False
            continue
        if found is _MISSING:
            return False
        if op == "eq":
            if not json_equal(found, condition.value):
                return False
        elif op == "object":
            if not isinstance(found, dict):
                return False
        elif not _ordered(found, op, condition.value):
            return False
    return True
