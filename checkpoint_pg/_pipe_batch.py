"""Puts sent into the caller's pipeline without waiting for their verdicts
(``PostgresSaver.batched``): judged together once the caller's pipeline syncs."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, NamedTuple, Protocol

from psycopg import Cursor
from psycopg.rows import DictRow, dict_row

from checkpoint_pg import _queries as q
from checkpoint_pg._caches import BlobKey
from checkpoint_pg._connection import ConnectionSource
from checkpoint_pg._saver_core import SaverCore, raise_unless_retry
from checkpoint_pg._statements import Statement, composed, plain_put, returns_row
from graphruntime.checkpoint import ChannelVersions, Checkpoint, CheckpointMetadata
from graphruntime.checkpoint.base import checkpoint_config
from graphruntime.config import RunnableConfig
from graphruntime.errors import CheckpointConflict


class _Saver(Protocol):
    """What a batch needs of its saver (a PostgresSaver view)."""

    _core: SaverCore
    _source: ConnectionSource

    def _errors(self, operation: str) -> AbstractContextManager[None]: ...

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        *,
        fenced: bool = False,
    ) -> RunnableConfig: ...


__all__ = ("PipeBatch",)


class _Sent(NamedTuple):
    cursor: Cursor[DictRow]
    config: RunnableConfig
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    new_versions: ChannelVersions
    fenced: bool
    keys: list[BlobKey]


class PipeBatch:
    """The puts of one ``batched()`` block, sent and awaiting their rows."""

    def __init__(self, saver: _Saver) -> None:
        self._saver = saver
        self._sent: list[_Sent] = []
        self._inserts: list[list[Any]] = []
        """Rows of insert-only writes not sent yet: the block's tasks share statements."""

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> None:
        """Keep a task's writes: insert-only rows go with the block's other tasks' in
        multi-row statements (sent before the next put, read or sync); control writes
        (upserts) go on their own, in order, as one statement cannot upsert a row twice."""
        upsert, rows = self._saver._core.write_params(config, writes, task_id, task_path)
        if upsert:
            self.send_writes()
            self._send(composed(True, rows))
        else:
            self._inserts.extend(rows)

    def send_writes(self) -> None:
        """Send the insert-only rows kept so far (no round trip: into the pipeline)."""
        rows, self._inserts = self._inserts, []
        self._send(composed(False, rows))

    def _send(self, statements: Sequence[Statement]) -> None:
        if not statements:
            return
        with self._saver._errors("put_writes"), self._saver._source.connection() as conn:
            prepare = None if conn.prepare_threshold is None else True
            for query, values in statements:
                with conn.cursor(binary=True) as cur:
                    cur.execute(query, values, prepare=prepare)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        fenced: bool,
    ) -> RunnableConfig:
        """Queue the put's statement; its verdict is read by :meth:`finish`."""
        self.send_writes()  # the writes made before it go first
        core = self._saver._core
        base = core.put_base(config, checkpoint, metadata, fenced)
        params, keys = core.encode_put(base, checkpoint, new_versions, ())
        query = q.PUT_CHECKPOINT_FENCED if fenced else plain_put(params)
        with self._saver._errors("put"), self._saver._source.connection() as conn:
            cur = conn.cursor(binary=True, row_factory=dict_row)
            cur.execute(query, params, prepare=None if conn.prepare_threshold is None else True)
        if returns_row(query):
            self._sent.append(_Sent(cur, config, checkpoint, metadata, new_versions, fenced, keys))
        else:
            cur.close()
            for key in keys:
                core.known.add(key)
        return checkpoint_config(base["thread_id"], base["checkpoint_ns"], checkpoint["id"])

    def finish(self, refused: dict[str, CheckpointConflict] | None = None) -> None:
        """Judge every put once the pipeline has synced: raise the first conflict (with
        ``refused``: keep each thread's first there instead); a put that found a
        referenced blob gone (deleted meanwhile) is put again, sending it."""
        sent, self._sent = self._sent, []
        conflict: CheckpointConflict | None = None
        again: list[_Sent] = []
        with self._saver._errors("batched"):
            rows: list[Any] = []
            for item in sent:
                rows.append(item.cursor.fetchone())
                item.cursor.close()
        for item, row in zip(sent, rows, strict=True):
            configurable = item.config["configurable"]
            if row is not None and not row["ok"]:
                try:
                    raise_unless_retry(
                        row,
                        str(configurable["thread_id"]),
                        str(configurable.get("checkpoint_ns", "") or ""),
                        configurable.get("checkpoint_id") or None,
                        item.checkpoint["id"],
                    )
                except CheckpointConflict as exc:
                    conflict = conflict or exc
                    if refused is not None:
                        refused.setdefault(str(configurable["thread_id"]), exc)
            elif row is not None and row["missing"]:
                again.append(item)
            else:
                for key in item.keys:
                    self._saver._core.known.add(key)
        for item in again:
            for key in item.keys:
                self._saver._core.known.discard(key)
            thread_id = str(item.config["configurable"]["thread_id"])
            if refused is not None and thread_id in refused:
                continue  # an earlier put of the thread was refused: so is this one
            try:
                self._saver.put(
                    item.config,
                    item.checkpoint,
                    item.metadata,
                    item.new_versions,
                    fenced=item.fenced,
                )
            except CheckpointConflict as exc:
                if refused is None:
                    raise
                refused.setdefault(thread_id, exc)
        if conflict is not None and refused is None:
            raise conflict

    def close(self) -> None:
        for item in self._sent:
            item.cursor.close()
        self._sent = []
