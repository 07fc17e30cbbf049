"""One-dimensional array parameters in Postgres' binary array format, built in one pass.

psycopg adapts a Python list element by element through its generic dumpers, which made
the arrays of a ``put_batch`` statement cost more client CPU than the statements they
replace. Here a column whose element type is known is wrapped (:class:`TextArray`, ...) and
its dumper writes the array at once: a header, then each element's length and bytes.
The dumpers are registered on a connection's adapters when it first meets them
(:func:`register_arrays`), so nothing changes for other code's lists.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from psycopg import Connection, ProgrammingError
from psycopg.abc import AdaptContext
from psycopg.adapt import Dumper, PyFormat
from psycopg.pq import Format

__all__ = (
    "ArrayParam",
    "BoolArray",
    "ByteaArray",
    "Int4Array",
    "TextArray",
    "UuidArray",
    "register_arrays",
)

_HEAD = struct.Struct("!iiIii").pack
"""ndim (1), has-nulls flag, element oid, length, lower bound (1)."""
_LENGTH = struct.Struct("!i").pack
_INT4 = struct.Struct("!ii").pack
_NULL = _LENGTH(-1)
_TRUE, _FALSE = _LENGTH(1) + b"\x01", _LENGTH(1) + b"\x00"


class ArrayParam:
    """A column of one element type, None for NULL elements."""

    __slots__ = ("items",)

    def __init__(self, items: Sequence[Any]) -> None:
        self.items = items

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self.items)!r})"


class TextArray(ArrayParam):
    """``text[]`` of str (or None)."""


class ByteaArray(ArrayParam):
    """``bytea[]`` of bytes (or None)."""


class UuidArray(ArrayParam):
    """``uuid[]`` of uuid.UUID (or None)."""


class Int4Array(ArrayParam):
    """``integer[]`` of int (no NULL)."""


class BoolArray(ArrayParam):
    """``boolean[]`` of bool (no NULL)."""


def _elements(items: Sequence[Any], encode: Callable[[Any], bytes]) -> tuple[int, list[bytes]]:
    parts: list[bytes] = []
    nulls = 0
    for item in items:
        if item is None:
            parts.append(_NULL)
            nulls = 1
        else:
            data = encode(item)
            parts.append(_LENGTH(len(data)))
            parts.append(data)
    return nulls, parts


class _ArrayDumper(Dumper):
    format = Format.BINARY
    element_oid = 0

    def __init__(self, cls: type, context: AdaptContext | None = None) -> None:
        super().__init__(cls, context)
        encoding = self.connection.info.encoding if self.connection is not None else "utf-8"
        self._encoding = "utf-8" if encoding == "ascii" else encoding

    def encode(self, item: Any) -> bytes:
        raise NotImplementedError

    def dump(self, obj: ArrayParam) -> bytes:
        nulls, parts = _elements(obj.items, self.encode)
        return _HEAD(1, nulls, self.element_oid, len(obj.items), 1) + b"".join(parts)


class _TextDumper(_ArrayDumper):
    oid, element_oid = 1009, 25

    def encode(self, item: str) -> bytes:
        return item.encode(self._encoding)


class _ByteaDumper(_ArrayDumper):
    oid, element_oid = 1001, 17

    def encode(self, item: bytes) -> bytes:
        return item

    def dump(self, obj: ArrayParam) -> bytes:
        items = obj.items
        if None in items:
            return super().dump(obj)
        parts = [part for item in items for part in (_LENGTH(len(item)), item)]
        return _HEAD(1, 0, 17, len(items), 1) + b"".join(parts)


class _UuidDumper(_ArrayDumper):
    oid, element_oid = 2951, 2950

    def encode(self, item: uuid.UUID) -> bytes:
        return item.bytes


class _Int4Dumper(_ArrayDumper):
    oid, element_oid = 1007, 23

    def dump(self, obj: ArrayParam) -> bytes:
        items = obj.items
        return _HEAD(1, 0, 23, len(items), 1) + b"".join([_INT4(4, item) for item in items])


class _BoolDumper(_ArrayDumper):
    oid, element_oid = 1000, 16

    def dump(self, obj: ArrayParam) -> bytes:
        items = obj.items
        return _HEAD(1, 0, 16, len(items), 1) + b"".join(
            [_TRUE if item else _FALSE for item in items]
        )


_DUMPERS: tuple[tuple[type[ArrayParam], type[_ArrayDumper]], ...] = (
    (TextArray, _TextDumper),
    (ByteaArray, _ByteaDumper),
    (UuidArray, _UuidDumper),
    (Int4Array, _Int4Dumper),
    (BoolArray, _BoolDumper),
)


def register_arrays(conn: Connection[Any]) -> None:
    """Let ``conn`` adapt the array wrappers (once per connection: a dict lookup after)."""
    try:
        conn.adapters.get_dumper(TextArray, PyFormat.AUTO)
    except ProgrammingError:
        for cls, dumper in _DUMPERS:
            conn.adapters.register_dumper(cls, dumper)
