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
from collections.abc import Sequence
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


def _elements(datas: Sequence[bytes | None]) -> tuple[int, bytes]:
    """The elements' part of an array, and whether one is NULL."""
    if None not in datas:
        return 0, b"".join([_LENGTH(len(data)) + data for data in datas])  # type: ignore[arg-type, operator]
    return 1, b"".join([_NULL if data is None else _LENGTH(len(data)) + data for data in datas])


class _ArrayDumper(Dumper):
    format = Format.BINARY
    element_oid = 0

    def __init__(self, cls: type, context: AdaptContext | None = None) -> None:
        super().__init__(cls, context)
        encoding = self.connection.info.encoding if self.connection is not None else "utf-8"
        self._encoding = "utf-8" if encoding == "ascii" else encoding

    def elements(self, items: Sequence[Any]) -> list[bytes | None]:
        """Each element's binary form (None: NULL)."""
        raise NotImplementedError

    def dump(self, obj: ArrayParam) -> bytes:
        nulls, elements = _elements(self.elements(obj.items))
        return _HEAD(1, nulls, self.element_oid, len(obj.items), 1) + elements


class _TextDumper(_ArrayDumper):
    oid, element_oid = 1009, 25

    def elements(self, items: Sequence[str | None]) -> list[bytes | None]:
        encoding = self._encoding
        return [None if item is None else item.encode(encoding) for item in items]


class _ByteaDumper(_ArrayDumper):
    oid, element_oid = 1001, 17

    def elements(self, items: Sequence[bytes | None]) -> list[bytes | None]:
        return list(items)


class _UuidDumper(_ArrayDumper):
    oid, element_oid = 2951, 2950

    def elements(self, items: Sequence[uuid.UUID | None]) -> list[bytes | None]:
        return [None if item is None else item.bytes for item in items]


class _Int4Dumper(_ArrayDumper):
    oid, element_oid = 1007, 23

    def dump(self, obj: ArrayParam) -> bytes:
        items = obj.items
        return _HEAD(1, 0, self.element_oid, len(items), 1) + b"".join(
            [_INT4(4, item) for item in items]
        )


class _BoolDumper(_ArrayDumper):
    oid, element_oid = 1000, 16

    def dump(self, obj: ArrayParam) -> bytes:
        items = obj.items
        return _HEAD(1, 0, self.element_oid, len(items), 1) + b"".join(
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
