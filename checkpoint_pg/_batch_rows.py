"""A block's puts and writes as the parameters of one ``put_batch`` statement (no I/O).

Each column is one array parameter, so the statement's text and its prepared plan are the
same whatever the number of puts and writes (migrations 0004 and 0005 take them apart).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple

from checkpoint_pg._arrays import (
    ArrayParam,
    BoolArray,
    ByteaArray,
    Int4Array,
    TextArray,
    UuidArray,
)
from checkpoint_pg._caches import BlobKey
from graphruntime.checkpoint import ChannelVersions, Checkpoint, CheckpointMetadata
from graphruntime.config import RunnableConfig

__all__ = ("BatchPut", "BatchRows")

_WRITE_COLUMNS: tuple[tuple[str, type[ArrayParam]], ...] = (
    ("write_thread_ids", TextArray),
    ("write_checkpoint_nss", TextArray),
    ("write_checkpoint_ids", UuidArray),
    ("write_task_ids", UuidArray),
    ("write_task_names", TextArray),
    ("write_task_paths", TextArray),
    ("write_idxs", Int4Array),
    ("write_channels", TextArray),
    ("write_types", TextArray),
    ("write_values", ByteaArray),
)
"""The columns of a write row, in ``SaverCore.write_params`` order."""

_PUT_COLUMNS: tuple[tuple[str, str, type[ArrayParam]], ...] = (
    ("thread_ids", "thread_id", TextArray),
    ("checkpoint_nss", "checkpoint_ns", TextArray),
    ("checkpoint_ids", "checkpoint_id", UuidArray),
    ("parent_ids", "parent_checkpoint_id", UuidArray),
    ("bodies", "body", ByteaArray),
    ("blob_versions", "blob_versions", TextArray),
    ("metadata", "metadata", TextArray),
)
"""A put's columns: the parameter, its key in ``SaverCore.encode_put``'s, its type."""

_BLOB_COLUMNS: tuple[tuple[str, type[ArrayParam]], ...] = (
    ("blob_channels", TextArray),
    ("blob_keys", TextArray),
    ("blob_types", TextArray),
    ("blob_values", ByteaArray),
)
_REF_COLUMNS: tuple[tuple[str, type[ArrayParam]], ...] = (
    ("ref_channels", TextArray),
    ("ref_keys", TextArray),
)


class BatchPut(NamedTuple):
    """A put of the block, as its caller made it, and the blobs it stores or references
    (known stored once it is)."""

    config: RunnableConfig
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    new_versions: ChannelVersions
    fenced: bool
    keys: list[BlobKey]


class BatchRows:
    """The puts and writes kept for one statement, in the order they were made."""

    def __init__(self) -> None:
        self.puts: list[BatchPut] = []
        self.blobs: dict[tuple[str, str, uuid.UUID], list[BlobKey]] = {}
        """The blobs each put stores or references, by (thread, namespace, checkpoint id):
        a fenced child of the put need only reference them (stored with its parent, or
        the child is refused: its parent is not the head)."""
        self._put_params: list[dict[str, Any]] = []
        self._write_rows: list[list[Any]] = []
        self._group_ends: list[int] = []
        self._group_upsert: list[bool] = []

    def __bool__(self) -> bool:
        return bool(self.puts or self._write_rows)

    def add_writes(self, upsert: bool, rows: list[list[Any]]) -> None:
        """A task's write rows (``SaverCore.write_params``). Insert-only rows join the
        group before them if it is insert-only too; a task's control writes (upserts)
        are a group of their own."""
        if not rows:
            return
        self._write_rows.extend(rows)
        if not upsert and self._group_upsert and not self._group_upsert[-1]:
            self._group_ends[-1] = len(self._write_rows)
            return
        self._group_ends.append(len(self._write_rows))
        self._group_upsert.append(upsert)

    def add_put(self, put: BatchPut, params: dict[str, Any]) -> None:
        """A put and its parameters (``SaverCore.encode_put``)."""
        self.puts.append(put)
        self._put_params.append(params)
        key = (params["thread_id"], params["checkpoint_ns"], params["checkpoint_id"])
        self.blobs[key] = put.keys

    def params(self, relaxed: bool) -> dict[str, Any]:
        """The statement's parameters; ``relaxed``: its commit need not wait for the WAL.
        An empty column, or one of NULLs only, goes as one NULL."""
        out: dict[str, Any] = {
            "relaxed": relaxed,
            "group_ends": _array(Int4Array, self._group_ends),
            "group_upsert": _array(BoolArray, self._group_upsert),
        }
        columns = list(zip(*self._write_rows, strict=True)) or [()] * len(_WRITE_COLUMNS)
        for (name, kind), column in zip(_WRITE_COLUMNS, columns, strict=True):
            out[name] = _array(kind, column)
        puts = self._put_params
        for name, key, kind in _PUT_COLUMNS:
            out[name] = _array(kind, [p[key] for p in puts])
        out["fenced"] = _array(BoolArray, [put.fenced for put in self.puts])
        for prefix, blob_columns in (("ref", _REF_COLUMNS), ("blob", _BLOB_COLUMNS)):
            ends: list[int] = []
            flat: dict[str, list[Any]] = {name: [] for name, _ in blob_columns}
            first = flat[blob_columns[0][0]]
            for p in puts:
                if p[blob_columns[0][0]]:
                    for name, _ in blob_columns:
                        flat[name].extend(p[name])
                ends.append(len(first))
            out[f"{prefix}_ends"] = _array(Int4Array, ends)
            for name, kind in blob_columns:
                out[name] = _array(kind, flat[name])
        return out


def _array(kind: type[ArrayParam], column: Sequence[Any]) -> ArrayParam | None:
    if not column or (column[0] is None and all(value is None for value in column)):
        return None
    return kind(column)
