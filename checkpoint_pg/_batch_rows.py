"""A block's puts and writes as the parameters of one ``put_batch`` statement (no I/O).

Each column is one array parameter, so the statement's text and its prepared plan are the
same whatever the number of puts and writes (migration 0004 takes them apart).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from checkpoint_pg._caches import BlobKey
from graphruntime.checkpoint import ChannelVersions, Checkpoint, CheckpointMetadata
from graphruntime.config import RunnableConfig

__all__ = ("BatchPut", "BatchRows")

_WRITE_COLUMNS = (
    "write_thread_ids",
    "write_checkpoint_nss",
    "write_checkpoint_ids",
    "write_task_ids",
    "write_task_names",
    "write_task_paths",
    "write_idxs",
    "write_channels",
    "write_types",
    "write_values",
)
"""The columns of a write row, in ``SaverCore.write_params`` order."""

_NULLABLE = frozenset({"write_task_names", "write_task_paths", "parent_ids", "blob_versions"})
"""Columns often all NULL: sent as one NULL array instead of an array of NULLs."""


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

    def params(self, relaxed: bool) -> dict[str, Any]:
        """The statement's parameters; ``relaxed``: its commit need not wait for the WAL."""
        out: dict[str, Any] = {
            "relaxed": relaxed,
            "group_ends": self._group_ends or None,
            "group_upsert": self._group_upsert or None,
        }
        columns = list(zip(*self._write_rows, strict=True)) or [()] * len(_WRITE_COLUMNS)
        for name, column in zip(_WRITE_COLUMNS, columns, strict=True):
            out[name] = _array(name, column)
        puts = self._put_params
        for name, key in (
            ("thread_ids", "thread_id"),
            ("checkpoint_nss", "checkpoint_ns"),
            ("checkpoint_ids", "checkpoint_id"),
            ("parent_ids", "parent_checkpoint_id"),
            ("bodies", "body"),
            ("blob_versions", "blob_versions"),
            ("metadata", "metadata"),
        ):
            out[name] = _array(name, [p[key] for p in puts])
        out["fenced"] = [put.fenced for put in self.puts] or None
        for prefix, keys in (
            ("ref", ("ref_channels", "ref_keys")),
            ("blob", ("blob_channels", "blob_keys", "blob_types", "blob_values")),
        ):
            ends: list[int] = []
            flat: dict[str, list[Any]] = {key: [] for key in keys}
            for p in puts:
                if p[keys[0]]:
                    for key in keys:
                        flat[key].extend(p[key])
                ends.append(len(flat[keys[0]]))
            out[f"{prefix}_ends"] = ends or None
            for key in keys:
                out[key] = flat[key] or None
        return out


def _array(name: str, column: Any) -> list[Any] | None:
    """A column as an array parameter: an empty one, or one of NULLs only, is NULL."""
    if not column:
        return None
    if name in _NULLABLE and all(value is None for value in column):
        return None
    return list(column)
