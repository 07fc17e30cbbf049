"""The puts and writes of a ``batched()`` or ``pipelined()`` block: kept, encoded, until
the block ends (or reads), then stored with one ``put_batch`` statement, whose rows are
the verdicts of the puts not stored cleanly, judged once the block has committed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from psycopg import Cursor
from psycopg.rows import DictRow, dict_row

from checkpoint_pg import _queries as q
from checkpoint_pg._arrays import register_arrays
from checkpoint_pg._batch_rows import BatchPut, BatchRows
from checkpoint_pg._cluster import SaverShell
from checkpoint_pg._saver_core import raise_unless_retry
from graphruntime.checkpoint import ChannelVersions, Checkpoint, CheckpointMetadata
from graphruntime.checkpoint.base import checkpoint_config
from graphruntime.config import RunnableConfig
from graphruntime.errors import CheckpointConflict

__all__ = ("PipeBatch",)


class PipeBatch:
    """The puts and writes of one block, and the statements sent for them.

    ``relaxed``: the statements' transaction commits without waiting for the WAL flush.
    ``begin``: called before a statement that is not the block's last (a read follows it),
    to open the transaction that makes the block all or nothing; without it, the caller's
    transaction does. ``operation``: the block's name in errors.
    """

    def __init__(
        self,
        saver: SaverShell,
        *,
        relaxed: bool = False,
        begin: Callable[[], object] | None = None,
        operation: str = "batched",
    ) -> None:
        self._saver = saver
        self._operation = operation
        self._relaxed = relaxed
        self._begin = begin
        self._rows = BatchRows()
        self._sent: list[tuple[Cursor[DictRow], list[BatchPut]]] = []

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> None:
        """Keep a task's writes (encoded now)."""
        self._rows.add_writes(*self._saver._core.write_params(config, writes, task_id, task_path))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        fenced: bool,
    ) -> RunnableConfig:
        """Keep a put (encoded now); its verdict is judged by :meth:`finish`."""
        core = self._saver._core
        base = core.put_base(config, checkpoint, metadata, fenced)
        parent = (base["thread_id"], base["checkpoint_ns"], base["parent_checkpoint_id"])
        sent = self._rows.blobs.get(parent, ()) if fenced else ()
        params, keys = core.encode_put(base, checkpoint, new_versions, (), sent)
        put = BatchPut(config, checkpoint, metadata, new_versions, fenced, keys)
        self._rows.add_put(put, params)
        return checkpoint_config(base["thread_id"], base["checkpoint_ns"], checkpoint["id"])

    def before_read(self) -> None:
        """Send what is kept (a read in the block sees it), in the block's transaction."""
        if self._rows and self._begin is not None:
            begin, self._begin = self._begin, None
            begin()
        self.send()

    def send(self) -> None:
        """Send what is kept as one statement (in a caller's pipeline: without waiting)."""
        rows, self._rows = self._rows, BatchRows()
        if not rows:
            return
        with self._saver._errors(self._operation), self._saver._source.connection() as conn:
            register_arrays(conn)  # before the cursor, which copies the adapters
            cur = conn.cursor(binary=True, row_factory=dict_row)
            self._sent.append((cur, rows.puts))
            prepare = None if conn.prepare_threshold is None else True
            cur.execute(q.PUT_BATCH, rows.params(self._relaxed), prepare=prepare)

    def finish(self, refused: dict[str, CheckpointConflict] | None = None) -> None:
        """Judge every put once the block has committed: raise the first conflict (with
        ``refused``: keep each thread's first there instead); a put that found a
        referenced blob gone (deleted meanwhile) is put again, sending it."""
        sent, self._sent = self._sent, []
        verdicts: list[tuple[BatchPut, DictRow | None]] = []
        with self._saver._errors(self._operation):
            for cur, puts in sent:
                rows = {row["put_index"]: row for row in cur.fetchall()}
                cur.close()
                verdicts.extend((put, rows.get(i)) for i, put in enumerate(puts, 1))
        known = self._saver._core.known
        conflict: CheckpointConflict | None = None
        again: list[BatchPut] = []
        for put, row in verdicts:
            if row is None:
                for key in put.keys:
                    known.add(key)
                continue
            configurable = put.config["configurable"]
            if not row["ok"]:
                try:
                    raise_unless_retry(
                        row,
                        str(configurable["thread_id"]),
                        str(configurable.get("checkpoint_ns", "") or ""),
                        configurable.get("checkpoint_id") or None,
                        put.checkpoint["id"],
                    )
                except CheckpointConflict as exc:
                    conflict = conflict or exc
                    if refused is not None:
                        refused.setdefault(str(configurable["thread_id"]), exc)
            else:
                again.append(put)
        for put in again:
            for key in put.keys:
                known.discard(key)
            thread_id = str(put.config["configurable"]["thread_id"])
            if refused is not None and thread_id in refused:
                continue  # an earlier put of the thread was refused: so is this one
            try:
                self._saver.put(
                    put.config, put.checkpoint, put.metadata, put.new_versions, fenced=put.fenced
                )
            except CheckpointConflict as exc:
                if refused is None:
                    raise
                refused.setdefault(thread_id, exc)
        if conflict is not None and refused is None:
            raise conflict

    def close(self) -> None:
        for cur, _ in self._sent:
            cur.close()
        self._sent = []
