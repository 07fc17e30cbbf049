"""PostgresSaver: graphruntime's checkpoint contract on Postgres.

Every method is one statement (one round trip, atomic on its own; the fenced
put calls a function that locks, checks and inserts) except ``put_writes_many``,
one pipelined transaction, and a put that finds a blob it relied on gone, which
sends it and tries again. Queries live in
``sql/queries.sql``; the row layout in ``_codec``; the tables in
``sql/migrations``.
"""

from __future__ import annotations

import asyncio
import builtins
import copy
import functools
import threading
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext, suppress
from typing import Any, Literal, NamedTuple

import psycopg
from psycopg import Capabilities, Connection, Cursor, sql
from psycopg.rows import DictRow, dict_row

from checkpoint_pg import _queries as q
from checkpoint_pg._codec import (
    EncodedCheckpoint,
    blob_version_key,
    decode_body,
    encode_checkpoint,
    task_key,
)
from checkpoint_pg._connection import Conn, ConnectionSource
from checkpoint_pg._held import HeldPut, verdict
from checkpoint_pg._history import HistoryRows
from checkpoint_pg.errors import (
    CheckpointStoreError,
    CheckpointStoreUnavailable,
    is_connection_error,
    missing_schema,
)
from checkpoint_pg.schema import CHECKPOINT_MIGRATIONS, migrate
from graphruntime.checkpoint import (
    NULL_TASK_ID,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    ClusterSaver,
    DeltaChannelHistory,
    HeldSave,
    JsonSerializer,
    PendingWrite,
    SerializerProtocol,
    WriteBatch,
    get_checkpoint_id,
)
from graphruntime.checkpoint.base import checkpoint_config, config_key, write_rows
from graphruntime.config import RunnableConfig
from graphruntime.errors import CheckpointConflict, CheckpointError

__all__ = ("PostgresSaver", "PruneResult")

# Rows fetched per round trip by list(): a page is read whole, so no connection
# is held while the caller consumes it (and may call the saver again).
_LIST_PAGE = 100


class PruneResult(NamedTuple):
    """How many rows :meth:`PostgresSaver.prune` deleted."""

    checkpoints: int
    writes: int
    blobs: int


class PostgresSaver(ClusterSaver):
    """Checkpoints in Postgres, with the same calls as LangGraph's ``PostgresSaver``.

    Give it a psycopg ``Connection`` opened with ``autocommit=True`` (shared by
    the threads of a process, one operation at a time) or a
    ``psycopg_pool.ConnectionPool`` (for concurrent use); the caller owns and
    closes it. Or use :meth:`from_conn_string`. Call :meth:`setup` once to create
    or upgrade the tables.

    Beyond the contract: ``put(..., fenced=True)`` (or every put of the
    :meth:`fenced` view) refuses to fork a thread, see :meth:`put`; :meth:`prune`
    bounds how much history a thread keeps.
    """

    def __init__(self, conn: Conn, *, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        if isinstance(conn, Connection) and not conn.autocommit:
            raise ValueError(
                "PostgresSaver needs a connection opened with autocommit=True, e.g. "
                "psycopg.Connection.connect(url, autocommit=True); with autocommit off "
                "its writes would stay in a transaction nobody commits"
            )
        self.conn = conn
        self._source = ConnectionSource(conn)
        # Metadata must be JSON (it is queried as JSONB), whatever serializes values.
        self._json = self.serde if isinstance(self.serde, JsonSerializer) else JsonSerializer()
        self._pipeline = Capabilities().has_pipeline()
        # Blobs known to be stored, so a put need not resend unchanged values
        # even when the caller's new_versions misses a channel. Only a hint:
        # put_checkpoint verifies every blob it does not send.
        self._known = _KnownBlobs()
        self._steps = _StepCache()
        self._fence_all = False
        self._durable_writes = True
        self._durable_puts = True
        # writes statements to send ahead of the next lazy fenced put, same round trip
        self._ahead: builtins.list[tuple[bytes, builtins.list[Any]]] = []

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, conn_string: str, *, serde: SerializerProtocol | None = None
    ) -> Iterator[PostgresSaver]:
        """A saver on a new connection to ``conn_string``, closed when the block exits."""
        with Connection.connect(
            conn_string, autocommit=True, prepare_threshold=0, row_factory=dict_row
        ) as conn:
            yield cls(conn, serde=serde)

    def fenced(self) -> PostgresSaver:
        """This saver, with every :meth:`put` fenced (same connection, serializer and caches).

        For a driver that hands the saver to code calling plain ``put`` (the
        runtime's loop) but must never fork the thread: a put whose parent is
        no longer the head raises :class:`~graphruntime.errors.CheckpointConflict`.
        """
        view = copy.copy(self)
        view._fence_all = True
        return view

    def lazy_writes(self) -> PostgresSaver:
        """This saver, with ``put_writes`` committing without waiting for the WAL flush.

        Postgres' WAL is sequential: the next commit that does wait (any checkpoint
        put, or the caller's own transaction on the same database) makes these writes
        durable too. For a driver that always follows writes with such a commit and
        re-runs the tasks otherwise, as the workers do: it saves a disk flush per step.
        A crash before that commit can lose the writes, never a checkpoint.
        """
        view = copy.copy(self)
        view._durable_writes = False
        return view

    def lazy(self) -> PostgresSaver:
        """This saver, with every write (``put`` and ``put_writes``) committing without
        waiting for the WAL flush.

        The writes are visible at once and durable with the next commit that waits (the
        WAL is sequential). For a driver that ends each unit of work with such a commit
        before anything outside the database depends on it (the workers' coordinator:
        the run's end, a step's dispatch). A crash before it loses a suffix of the
        writes, consistently: the work is redone from the last durable checkpoint.
        """
        view = copy.copy(self)
        view._durable_writes = False
        view._durable_puts = False
        return view

    def setup(self) -> None:
        """Create the tables, or apply the migrations this database lacks."""
        with self._source.connection() as conn:
            migrate(conn)

    # -- reads -----------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._get(config, None)

    def get_task_tuple(
        self, config: RunnableConfig, task_ids: Collection[str]
    ) -> CheckpointTuple | None:
        """The checkpoint with only these tasks' (and the null task's) writes.

        Task jobs read the same step checkpoint many times, so a checkpoint named
        by id (immutable once stored) is decoded once per saver and then shared:
        its values are the same objects for every caller, who must not mutate
        them (the runtime does not; a node mutating its input in place would
        leak into sibling tasks, as it does in-process). Only the writes are read
        again.
        """
        keys = [task_key(t)[0] for t in {*task_ids, NULL_TASK_ID}]
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is None or _as_uuid(checkpoint_id) is None:
            return self._get(config, keys)
        thread_id, checkpoint_ns = config_key(config)
        cache_key = (thread_id, checkpoint_ns, checkpoint_id)
        cached = self._steps.get(cache_key)
        if cached is None:
            found = self._get(config, keys)
            if found is None:
                return None
            self._steps.put(cache_key, found._replace(pending_writes=[]))
            return found
        params = {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
            "task_keys": keys,
        }
        with self._cursor("get_task_tuple") as cur:
            # unprepared: planned for these keys, never with a generic plan made while
            # the writes table was small (a seq scan per key once it is big)
            cur.execute(q.GET_TASK_WRITES, params, prepare=False)
            rows = cur.fetchall()
        loads = self.serde.loads_typed
        writes = [(r["task_id"], r["channel"], loads((r["type"], r["value"]))) for r in rows]
        return cached._replace(pending_writes=writes)

    def _get(
        self, config: RunnableConfig, task_keys: builtins.list[uuid.UUID] | None
    ) -> CheckpointTuple | None:
        thread_id, checkpoint_ns = config_key(config)
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is not None and _as_uuid(checkpoint_id) is None:
            return None  # not an id this saver could have stored
        params = {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
            "task_keys": task_keys,
        }
        with self._cursor("get_tuple") as cur:
            cur.execute(q.GET_CHECKPOINT, params, prepare=_prepare(cur))
            row = cur.fetchone()
        return None if row is None else self._load(thread_id, checkpoint_ns, row)

    def get_tuples(
        self, configs: Sequence[RunnableConfig]
    ) -> builtins.list[CheckpointTuple | None]:
        """:meth:`get_tuple` of each config, pipelined in one round trip."""
        out: builtins.list[CheckpointTuple | None] = [None] * len(configs)
        asked: builtins.list[tuple[int, str, str, dict[str, Any]]] = []
        for i, config in enumerate(configs):
            thread_id, checkpoint_ns = config_key(config)
            checkpoint_id = get_checkpoint_id(config)
            if checkpoint_id is not None and _as_uuid(checkpoint_id) is None:
                continue  # not an id this saver could have stored
            params = {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint_id,
                "task_keys": None,
            }
            asked.append((i, thread_id, checkpoint_ns, params))
        if not asked:
            return out
        rows: builtins.list[DictRow | None] = []
        with self._cursor("get_tuples") as cur:
            cur.executemany(q.GET_CHECKPOINT, [a[3] for a in asked], returning=True)
            while True:
                rows.append(cur.fetchone())
                if not cur.nextset():
                    break
        for (i, thread_id, checkpoint_ns, _), row in zip(asked, rows, strict=True):
            if row is not None:
                out[i] = self._load(thread_id, checkpoint_ns, row)
        return out

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The contract's parent-chain walk, in one statement (a recursive CTE).

        The walk of each channel stops at the nearest blob, or at the nearest
        ancestor that may hold the value inline in its body; if that one turns out
        not to, the walk goes on from there in one more statement that reads the
        remaining bodies (only for data the runtime did not write: it counts every
        DeltaChannel in every checkpoint's metadata until it stores a snapshot,
        always as a blob).
        """
        if not channels:
            return {}
        rows = HistoryRows(channels, self.serde.loads_typed, self._inline_values)
        thread_id, checkpoint_ns = config_key(config)
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is not None and _as_uuid(checkpoint_id) is None:
            return rows.result()  # not an id this saver could have stored
        continues = rows.add(
            self._delta_rows(thread_id, checkpoint_ns, checkpoint_id, channels, thorough=False)
        )
        for start, depth, walking in continues:
            found = self._delta_rows(thread_id, checkpoint_ns, start, walking, thorough=True)
            rows.add(found, depth, thorough=True)
        return rows.result()

    def _delta_rows(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str | None,
        channels: Sequence[str],
        *,
        thorough: bool,
    ) -> builtins.list[DictRow]:
        params = {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
            "channels": builtins.list(dict.fromkeys(channels)),
            "thorough": thorough,
        }
        with self._cursor("get_delta_channel_history") as cur:
            cur.execute(q.DELTA_HISTORY, params, prepare=_prepare(cur))
            return cur.fetchall()

    def _inline_values(self, checkpoint_id: str, body: bytes) -> dict[str, Any]:
        checkpoint = decode_body(
            checkpoint_id, body, None, None, None, values_serde=self.serde, json_serde=self._json
        )
        return checkpoint["channel_values"]

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        if limit is not None and limit <= 0:
            return
        params: dict[str, Any] = {
            "thread_id": None,
            "checkpoint_ns": None,
            "checkpoint_id": None,
            "before": None,
            "filter": None,
            "after_id": None,
            "after_thread_id": None,
            "after_ns": None,
        }
        if config is not None:
            params["thread_id"], _ = config_key(config)
            if "checkpoint_ns" in config["configurable"]:
                params["checkpoint_ns"] = config["configurable"]["checkpoint_ns"] or ""
            checkpoint_id = get_checkpoint_id(config)
            if checkpoint_id is not None:
                if _as_uuid(checkpoint_id) is None:
                    return
                params["checkpoint_id"] = checkpoint_id
        before_id = get_checkpoint_id(before) if before is not None else None
        if before_id is not None:
            params["before"] = _require_uuid(before_id, "before checkpoint_id")
        if filter:
            params["filter"] = self._json_text(filter, "list filter")
        remaining = limit
        while True:
            page = _LIST_PAGE if remaining is None else min(_LIST_PAGE, remaining)
            params["page_size"] = page
            with self._cursor("list") as cur:
                # Unprepared: planned with the actual values, NULL conditions fold away.
                cur.execute(q.LIST_CHECKPOINTS, params, prepare=False)
                rows = cur.fetchall()
            for row in rows:
                yield self._load(row["thread_id"], row["checkpoint_ns"], row)
            if remaining is not None:
                remaining -= len(rows)
                if remaining <= 0:
                    return
            if len(rows) < page:
                return
            last = rows[-1]
            params["after_id"] = last["checkpoint_id"]
            params["after_thread_id"] = last["thread_id"]
            params["after_ns"] = last["checkpoint_ns"]

    def _load(self, thread_id: str, checkpoint_ns: str, row: DictRow) -> CheckpointTuple:
        loads = self.serde.loads_typed
        checkpoint = decode_body(
            row["checkpoint_id"],
            row["body"],
            row["blob_channels"],
            row["blob_types"],
            row["blob_values"],
            values_serde=self.serde,
            json_serde=self._json,
        )
        metadata: CheckpointMetadata = self._json.loads_typed(
            ("json", row["metadata"].encode("utf-8"))
        )
        if row["blob_channels"]:
            versions = checkpoint["channel_versions"]
            for channel in row["blob_channels"]:
                self._known.add(
                    (thread_id, checkpoint_ns, channel, blob_version_key(versions[channel]))
                )
        pending: builtins.list[PendingWrite] = []
        if row["write_task_ids"]:
            pending = [
                (task_id, channel, loads((kind, data)))
                for task_id, channel, kind, data in zip(
                    row["write_task_ids"],
                    row["write_channels"],
                    row["write_types"],
                    row["write_values"],
                    strict=True,
                )
            ]
        parent_id = row["parent_checkpoint_id"]
        return CheckpointTuple(
            config=checkpoint_config(thread_id, checkpoint_ns, row["checkpoint_id"]),
            checkpoint=checkpoint,
            metadata=metadata,
            parent_config=(
                None
                if parent_id is None
                else checkpoint_config(thread_id, checkpoint_ns, parent_id)
            ),
            pending_writes=pending,
        )

    # -- writes ------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        *,
        fenced: bool = False,
    ) -> RunnableConfig:
        """Store ``checkpoint`` as the child of ``config``'s checkpoint.

        With ``fenced=True`` the put succeeds only if ``config``'s
        ``checkpoint_id`` is still the latest checkpoint of the namespace (no
        ``checkpoint_id``: only if the namespace has no checkpoint yet). The check
        and the insert run in one transaction under a per-thread lock, so of
        several fenced writers holding the same head exactly one wins; the
        others get :class:`~graphruntime.errors.CheckpointConflict` and nothing
        is written. Re-putting the checkpoint that already won (a retry after a
        lost reply) succeeds again. Plain puts are not checked, as in LangGraph
        (forking an old checkpoint must work), and do not take the lock.
        """
        fenced = fenced or self._fence_all
        base = self._put_base(config, checkpoint, metadata, fenced)
        thread_id, checkpoint_ns = base["thread_id"], base["checkpoint_ns"]
        resend: set[str] = set()
        for _ in range(3):
            params, keys = self._encode_put(base, checkpoint, new_versions, resend)
            row = self._write_checkpoint(params, thread_id, fenced)
            if row is not None and not row["ok"]:
                expected = get_checkpoint_id(config)
                self._raise_unless_retry(row, thread_id, checkpoint_ns, expected, checkpoint["id"])
                break
            if row is None or not row["missing"]:
                for key in keys:
                    self._known.add(key)
                break
            # A referenced blob is gone (deleted or pruned meanwhile): send it too.
            resend.update(row["missing"])
        else:
            raise CheckpointStoreError(
                f"PostgresSaver.put: blobs {sorted(resend)} kept disappearing while "
                f"storing checkpoint {checkpoint['id']}; is the thread being deleted?"
            )
        return checkpoint_config(thread_id, checkpoint_ns, checkpoint["id"])

    def _put_base(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        fenced: bool,
    ) -> dict[str, Any]:
        """A put's parameters but the encoded checkpoint's, checked."""
        thread_id, checkpoint_ns = config_key(config)
        parent_id = get_checkpoint_id(config)
        new_id = _require_uuid(checkpoint["id"], 'checkpoint["id"]')
        parent = None if parent_id is None else _require_uuid(parent_id, "parent checkpoint_id")
        if fenced and parent is not None and new_id <= parent:
            raise CheckpointError(
                f"Checkpoint id {checkpoint['id']} does not sort after its parent "
                f"{parent_id}: ids are time-ordered uuid6, is this host's clock behind "
                "the one that wrote the parent?"
            )
        return {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": new_id,
            "parent_checkpoint_id": parent,
            "metadata": self._json_text(dict(metadata), "checkpoint metadata"),
        }

    def _encode_put(
        self,
        base: dict[str, Any],
        checkpoint: Checkpoint,
        new_versions: ChannelVersions,
        resend: Collection[str],
    ) -> tuple[dict[str, Any], builtins.list[tuple[str, str, str, str]]]:
        """The put's parameters, and the blobs it stores or references (its known keys)."""
        thread_id, checkpoint_ns = base["thread_id"], base["checkpoint_ns"]

        def stored(channel: str, key: str) -> bool:
            key4 = (thread_id, checkpoint_ns, channel, key)
            return channel not in resend and key4 in self._known

        encoded = encode_checkpoint(
            checkpoint,
            new_versions,
            values_serde=self.serde,
            json_serde=self._json,
            stored=stored,
        )
        keys = [
            (thread_id, checkpoint_ns, channel, key)
            for channel, key in zip(
                encoded.blob_channels + encoded.ref_channels,
                encoded.blob_keys + encoded.ref_keys,
                strict=True,
            )
        ]
        return {**base, **_array_params(encoded)}, keys

    def _write_checkpoint(
        self, params: dict[str, Any], thread_id: str, fenced: bool
    ) -> DictRow | None:
        """Run the put statement that fits; its row says what happened (None: stored)."""
        if not self._durable_puts:
            return self._put_lazily(params, fenced)
        if fenced:
            return self._put_fenced(params, thread_id)
        with self._cursor("put") as cur:
            query = _plain_put(params)
            cur.execute(query, params, prepare=_prepare(cur))
            return cur.fetchone() if _returns_row(query) else None

    def _put_lazily(self, params: dict[str, Any], fenced: bool) -> DictRow | None:
        """The put, committed without waiting for the WAL flush: the fenced put in one
        statement; a plain one (time travel) in a pipelined transaction."""
        if fenced:
            ahead, self._ahead = self._ahead, []  # sent once, not again on a blob retry
            with (
                self._store_errors("put"),
                self._source.connection() as conn,
                conn.pipeline() if ahead else _no_pipeline(),
            ):
                prepare = None if conn.prepare_threshold is None else True
                for query, values in ahead:
                    with conn.cursor(binary=True) as ahead_cur:
                        ahead_cur.execute(_lazy(query), values, prepare=prepare)
                with conn.cursor(binary=True, row_factory=dict_row) as cur:
                    cur.execute(q.PUT_CHECKPOINT_FENCED_LAZY, params, prepare=prepare)
                    return cur.fetchone()
        plain_put = _plain_put(params)
        with (
            self._store_errors("put"),
            self._source.connection() as conn,
            conn.pipeline() if self._pipeline else _no_pipeline(),
            conn.transaction(),
            conn.cursor(row_factory=dict_row) as cur,
        ):
            cur.execute(q.ASYNC_COMMIT)
            cur.execute(plain_put, params)
            return cur.fetchone() if _returns_row(plain_put) else None

    def _put_fenced(self, params: dict[str, Any], thread_id: str) -> DictRow | None:
        # One statement: the function takes the thread's lock, then checks and inserts.
        with self._cursor("put") as cur:
            cur.execute(q.PUT_CHECKPOINT_FENCED, params, prepare=_prepare(cur))
            return cur.fetchone()

    @staticmethod
    def _raise_unless_retry(
        row: DictRow, thread_id: str, checkpoint_ns: str, expected: str | None, new_id: str
    ) -> None:
        """A refused fenced put: fine if it is a retry of the put that won, else a conflict."""
        head, head_parent = row["head_id"], row["head_parent_id"]
        if head == _canonical(new_id) and head_parent == (expected and _canonical(expected)):
            return  # this very checkpoint won earlier: a retried put is a success
        raise CheckpointConflict(
            f"Fenced put refused on thread {thread_id!r}, namespace {checkpoint_ns!r}: "
            f"expected the latest checkpoint to be {expected or 'none (a new thread)'}, "
            f"but it is {head or 'none'}. Another writer advanced the thread first; "
            "nothing was written. Reload the thread (get_tuple) and recompute the step "
            "from its latest checkpoint."
        )

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes. ``get_tuple`` returns them in insertion order;
        ``task_path`` orders a step's writes in DeltaChannel history."""
        statements = self._write_statements(config, writes, task_id, task_path)
        if not statements:
            return
        if not self._durable_writes:
            if len(statements) == 1:
                (query, params) = statements[0]
                with self._cursor("put_writes") as cur:
                    cur.execute(_lazy(query), params, prepare=_prepare(cur))
                return
            self._run_writes("put_writes", statements)
            return
        # One statement per _MAX_WRITES rows (Postgres' parameter limit), all in one
        # transaction, so a node that sends thousands of tasks stores them atomically.
        with (
            self._cursor("put_writes") as cur,
            cur.connection.transaction() if len(statements) > 1 else nullcontext(),
        ):
            for query, params in statements:
                cur.execute(query, params, prepare=_prepare(cur))

    def put_with_writes(
        self,
        batch: Sequence[tuple[RunnableConfig, Sequence[tuple[str, Any]], str, str]],
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """The writes and the checkpoint put in one pipelined round trip when this view is
        lazy and fenced (the coordinator's); otherwise one after the other."""
        statements = self._batch_statements(batch)
        if self._durable_puts or not self._fence_all or not self._pipeline:
            if statements:
                self._run_writes("put_writes_many", statements)
            return self.put(config, checkpoint, metadata, new_versions)
        view = copy.copy(self)
        view._ahead = statements
        return view.put(config, checkpoint, metadata, new_versions)

    def hold_put(
        self,
        batch: WriteBatch,
        config: RunnableConfig | None,
        checkpoint: Checkpoint | None = None,
        metadata: CheckpointMetadata | None = None,
        new_versions: ChannelVersions | None = None,
    ) -> HeldSave:
        """The writes and the put (none without ``config``), encoded now, for
        :meth:`save_held` to send with other threads' in one round trip."""
        writes = self._batch_statements(batch)
        if config is None:
            return HeldPut(None, writes)
        if checkpoint is None or metadata is None or new_versions is None:
            raise TypeError("hold_put: a put takes checkpoint, metadata and new_versions")
        fenced = self._fence_all
        base = self._put_base(config, checkpoint, metadata, fenced)
        params, keys = self._encode_put(base, checkpoint, new_versions, ())
        for key in keys:
            # the later held puts of the thread may refer to the blobs this one sends:
            # the group stores them first (a refused group forgets them again)
            self._known.add(key)
        query = q.PUT_CHECKPOINT_FENCED if fenced else _plain_put(params)
        return HeldPut(
            checkpoint_config(base["thread_id"], base["checkpoint_ns"], checkpoint["id"]),
            writes,
            query,
            params,
            expected=get_checkpoint_id(config),
            keys=keys,
        )

    def save_held(self, runs: Sequence[Sequence[HeldSave]]) -> builtins.list[Exception | None]:
        """The held saves of several runs in one transaction and one pipelined round trip
        (committed without waiting for the WAL flush if this view is :meth:`lazy`).

        A statement that fails takes the transaction with it: then each run's saves
        are stored in a transaction of their own, so that only that run fails (its
        entry is the error). Only an outage raises.
        """
        held = [[_held_put(h) for h in run if not h.stored] for run in runs]
        if not any(held):
            return [None] * len(held)
        try:
            return self._save_held(held)
        except CheckpointStoreUnavailable:
            self._forget(held)
            raise
        except CheckpointStoreError as exc:
            if len(held) == 1:
                self._forget(held)
                return [exc]
        out: builtins.list[Exception | None] = []
        for run in held:
            try:
                out.extend(self._save_held([run]))
            except CheckpointStoreUnavailable:
                self._forget(held)
                raise
            except CheckpointStoreError as exc:
                self._forget([run])
                out.append(exc)
        return out

    def _save_held(self, runs: Sequence[Sequence[HeldPut]]) -> builtins.list[Exception | None]:
        sent: builtins.list[builtins.list[tuple[HeldPut, Cursor[DictRow] | None]]] = []
        with self._store_errors("save_held"), self._source.connection() as conn:
            prepare = None if conn.prepare_threshold is None else True
            with (
                conn.pipeline() if self._pipeline else _no_pipeline(),
                conn.transaction(),
                conn.cursor(binary=True) as cur,
            ):
                if not self._durable_puts:
                    cur.execute(q.ASYNC_COMMIT)
                for run in runs:
                    saves: builtins.list[tuple[HeldPut, Cursor[DictRow] | None]] = []
                    for held in run:
                        for query, params in held.writes:
                            cur.execute(query, params, prepare=prepare)
                        put: Cursor[DictRow] | None = None
                        if held.query is not None:
                            put = conn.cursor(binary=True, row_factory=dict_row)
                            put.execute(held.query, held.params, prepare=prepare)
                        saves.append((held, put))
                    sent.append(saves)
            # the rows arrived with the commit (one round trip in pipeline mode)
            rows = [
                [
                    (h, c.fetchone() if c is not None and _returns_row(h.query) else None)
                    for h, c in saves
                ]
                for saves in sent
            ]
        out: builtins.list[Exception | None] = []
        for run_rows in rows:
            error = verdict(run_rows, self._raise_unless_retry)
            if error is not None:
                self._forget([[h for h, _ in run_rows]])
            out.append(error)
        return out

    def drop_held(self, saves: Sequence[HeldSave]) -> None:
        self._forget([[_held_put(h) for h in saves if not h.stored]])

    def _forget(self, runs: Sequence[Sequence[HeldPut]]) -> None:
        """Drop the blobs held puts vouched for: they may not be stored."""
        for run in runs:
            for held in run:
                for key in held.keys:
                    self._known.discard(key)

    def put_writes_many(
        self, batch: Sequence[tuple[RunnableConfig, Sequence[tuple[str, Any]], str, str]]
    ) -> None:
        """Several tasks' writes in one transaction and one pipelined round trip.

        Insert-only rows of all tasks share multi-row statements; control writes
        (upserts) keep a statement each, as one statement cannot upsert a row twice.
        """
        statements = self._batch_statements(batch)
        if statements:
            self._run_writes("put_writes_many", statements)

    def _batch_statements(
        self, batch: Sequence[tuple[RunnableConfig, Sequence[tuple[str, Any]], str, str]]
    ) -> builtins.list[tuple[bytes, builtins.list[Any]]]:
        inserts: builtins.list[builtins.list[Any]] = []
        statements: builtins.list[tuple[bytes, builtins.list[Any]]] = []
        for config, writes, task_id, task_path in batch:
            upsert, rows = self._write_params(config, writes, task_id, task_path)
            if upsert:  # rows keep the batch's order (their seq)
                statements.extend(_statements(False, inserts))
                statements.extend(_statements(True, rows))
                inserts = []
            else:
                inserts.extend(rows)
        statements.extend(_statements(False, inserts))
        return statements

    def _run_writes(
        self, operation: str, statements: builtins.list[tuple[bytes, builtins.list[Any]]]
    ) -> None:
        """Write statements in one pipelined transaction (not waiting for the WAL flush
        when this view's writes are not durable on their own)."""
        with (
            self._store_errors(operation),
            self._source.connection() as conn,
            conn.pipeline() if self._pipeline else _no_pipeline(),
            conn.transaction(),
            conn.cursor(binary=True) as cur,
        ):
            if not self._durable_writes:
                cur.execute(q.ASYNC_COMMIT)
            for query, params in statements:
                cur.execute(query, params, prepare=_prepare(cur))

    def _write_statements(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> builtins.list[tuple[bytes, builtins.list[Any]]]:
        upsert, rows = self._write_params(config, writes, task_id, task_path)
        return _statements(upsert, rows)

    def _write_params(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> tuple[bool, builtins.list[builtins.list[Any]]]:
        """Whether the writes are upserted, and one parameter list per row."""
        thread_id, checkpoint_ns, checkpoint_id, upsert, rows = write_rows(config, writes)
        if not rows:
            return upsert, []
        dumps = self.serde.dumps_typed
        task_uuid, task_name = task_key(task_id)
        key = (thread_id, checkpoint_ns, _require_uuid(checkpoint_id, "checkpoint_id"), task_uuid)
        path = task_path or None
        return upsert, [
            [*key, task_name, path, idx, channel, *dumps(value)]
            for idx, (channel, value) in rows.items()
        ]

    def delete_thread(self, thread_id: str) -> None:
        self._delete(str(thread_id))

    def _delete(self, thread_id: str) -> PruneResult:
        self._known.forget_thread(thread_id)
        self._steps.forget_thread(thread_id)
        with self._cursor("delete_thread") as cur:
            cur.execute(q.DELETE_THREAD, {"thread_id": thread_id}, prepare=_prepare(cur))
            row = cur.fetchone()
        assert row is not None
        return PruneResult(row["checkpoints"], row["writes"], row["blobs"])

    def prune(
        self,
        thread_ids: str | Sequence[str],
        *,
        keep_last: int = 1,
        strategy: Literal["keep_latest", "delete"] = "keep_latest",
    ) -> PruneResult:
        """Keep the ``keep_last`` newest checkpoints of each namespace of the thread(s).

        Their pending writes and the blobs they reference stay; older
        checkpoints, their writes and blobs only they referenced go. A subgraph
        call's namespace goes entirely once the root checkpoint it ran under is
        deleted. A kept checkpoint whose parent is deleted gets no parent, so
        history ends there. One statement per thread, so a thread is never seen
        half pruned. Runs appending meanwhile are safe; forking from a
        checkpoint being deleted is not (its values may be gone). A thread that
        uses a DeltaChannel is refused (CheckpointError) and left whole, as in
        LangGraph: its state is rebuilt from the writes of older checkpoints.

        LangGraph's call shape works too: ``prune(["t1", "t2"])`` keeps the
        latest checkpoint of each, ``strategy="delete"`` deletes the threads.
        Returns how many rows were deleted, summed over the threads.
        """
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"Unknown prune strategy {strategy!r}: 'keep_latest' or 'delete'")
        if keep_last < 1:
            raise ValueError(
                f"keep_last must be at least 1 (got {keep_last}); use delete_thread() "
                "to remove a whole thread"
            )
        threads = [thread_ids] if isinstance(thread_ids, str) else [str(t) for t in thread_ids]
        total = PruneResult(0, 0, 0)
        for thread_id in threads:
            if strategy == "delete":
                done = self._delete(thread_id)
            else:
                done = self._prune(thread_id, keep_last)
            total = PruneResult(*(a + b for a, b in zip(total, done, strict=True)))
        return total

    def _prune(self, thread_id: str, keep_last: int) -> PruneResult:
        self._known.forget_thread(thread_id)
        self._steps.forget_thread(thread_id)
        with self._cursor("prune") as cur:
            params = {"thread_id": thread_id, "keep_last": keep_last}
            cur.execute(q.PRUNE_THREAD, params, prepare=False)
            row = cur.fetchone()
        assert row is not None
        if row["delta_thread"]:
            raise CheckpointError(
                f"prune(keep_latest) left thread {thread_id!r} whole: it uses a DeltaChannel, "
                "whose values are rebuilt from the writes of older checkpoints, so dropping "
                "them would silently change its state. Threads listed before it were "
                "pruned. Delete it (strategy='delete') or keep its history."
            )
        return PruneResult(row["checkpoints"], row["writes"], row["blobs"])

    # -- async twins: the sync methods on a worker thread --------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        def fetch() -> builtins.list[CheckpointTuple]:
            return builtins.list(self.list(config, filter=filter, before=before, limit=limit))

        for item in await asyncio.to_thread(fetch):
            yield item

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await asyncio.to_thread(
            self.get_delta_channel_history, config=config, channels=channels
        )

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        *,
        fenced: bool = False,
    ) -> RunnableConfig:
        return await asyncio.to_thread(
            self.put, config, checkpoint, metadata, new_versions, fenced=fenced
        )

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def aprune(
        self,
        thread_ids: str | Sequence[str],
        *,
        keep_last: int = 1,
        strategy: Literal["keep_latest", "delete"] = "keep_latest",
    ) -> PruneResult:
        """Async :meth:`prune`."""
        return await asyncio.to_thread(
            self.prune, thread_ids, keep_last=keep_last, strategy=strategy
        )

    # -- helpers -----------------------------------------------------------------

    @contextmanager
    def _cursor(self, operation: str) -> Iterator[Cursor[DictRow]]:
        with self._store_errors(operation), self._source.cursor() as cur:
            yield cur

    @contextmanager
    def _store_errors(self, operation: str) -> Iterator[None]:
        try:
            yield
        except psycopg.Error as exc:
            cls = CheckpointStoreUnavailable if is_connection_error(exc) else CheckpointStoreError
            hint = ""
            if missing_schema(exc):
                hint = (
                    f" The checkpoint tables are missing: {CHECKPOINT_MIGRATIONS.setup_hint}; "
                    "with the workers, `graphrun db migrate` migrates both schemas."
                )
            raise cls(f"PostgresSaver.{operation} failed: {exc}{hint}") from exc

    def _json_text(self, value: dict[str, Any], what: str) -> str:
        kind, data = self._json.dumps_typed(value)
        if kind != "json" or not data.startswith(b"{") or data.startswith(b'{"__gr__"'):
            raise CheckpointError(f"The {what} must be a dict with str keys, got {value!r}")
        return data.decode("utf-8")


class _StepCache:
    """The last few checkpoints task jobs loaded, decoded, by (thread, ns, id)."""

    def __init__(self, capacity: int = 4) -> None:
        self.capacity = capacity
        self._items: OrderedDict[tuple[str, str, str], CheckpointTuple] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, str]) -> CheckpointTuple | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[str, str, str], value: CheckpointTuple) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def forget_thread(self, thread_id: str) -> None:
        with self._lock:
            for key in [k for k in self._items if k[0] == thread_id]:
                del self._items[key]


class _KnownBlobs:
    """A bounded set of ``(thread_id, checkpoint_ns, channel, version key)`` seen stored.

    First in, first out: good enough for the pattern it serves (a thread's
    next put reuses the blobs of the checkpoint just put or loaded).
    """

    def __init__(self, capacity: int = 16_384) -> None:
        self._keys: dict[tuple[str, str, str, str], None] = {}
        self._capacity = capacity

    def __contains__(self, key: tuple[str, str, str, str]) -> bool:
        return key in self._keys

    def add(self, key: tuple[str, str, str, str]) -> None:
        self._keys[key] = None
        if len(self._keys) > self._capacity:
            # Another thread may have trimmed it first.
            with suppress(StopIteration, KeyError, RuntimeError):
                del self._keys[next(iter(self._keys))]

    def discard(self, key: tuple[str, str, str, str]) -> None:
        self._keys.pop(key, None)

    def forget_thread(self, thread_id: str) -> None:
        for key in [k for k in builtins.list(self._keys) if k[0] == thread_id]:
            self._keys.pop(key, None)


# Postgres takes at most 65535 parameters per statement; 10 per write.
_MAX_WRITES = 65535 // 10


@functools.lru_cache(maxsize=128)
def _lazy(statement: bytes) -> bytes:
    """A single writes statement that commits without waiting for the WAL flush."""
    return statement.rstrip().rstrip(b";") + b" " + q.LAZY_RETURNING.encode()


def _statements(
    upsert: bool, rows: builtins.list[builtins.list[Any]]
) -> builtins.list[tuple[bytes, builtins.list[Any]]]:
    """Multi-row statements of at most _MAX_WRITES rows (Postgres' parameter limit)."""
    out = []
    for i in range(0, len(rows), _MAX_WRITES):
        chunk = rows[i : i + _MAX_WRITES]
        out.append((_writes_query(upsert, len(chunk)), [p for row in chunk for p in row]))
    return out


@functools.lru_cache(maxsize=128)
def _writes_query(upsert: bool, n: int) -> bytes:
    """The insert (or upsert) statement for ``n`` writes, composed once per shape."""
    if n > _MAX_WRITES:
        raise CheckpointError(f"put_writes takes at most {_MAX_WRITES} writes at once, got {n}")
    template = sql.SQL(q.UPSERT_WRITES if upsert else q.INSERT_WRITES)
    rows = sql.SQL(", ").join([sql.SQL(q.WRITE_ROW)] * n)
    return template.format(rows=rows).as_bytes(None)


def _prepare(cur: Cursor[Any]) -> bool | None:
    # Prepare the hot statements on first use, unless the connection was opened
    # with prepare_threshold=None (e.g. behind a pooler that cannot keep them).
    return None if cur.connection.prepare_threshold is None else True


@contextmanager
def _no_pipeline() -> Iterator[None]:
    yield


def _as_uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except (ValueError, TypeError, AttributeError):
        return None


def _require_uuid(value: str, what: str) -> uuid.UUID:
    parsed = _as_uuid(value)
    if parsed is None:
        raise CheckpointError(
            f"{what} must be a UUID (graphruntime's checkpoint ids are uuid6), got {value!r}"
        )
    return parsed


def _canonical(value: str) -> str:
    return str(uuid.UUID(value))


def _plain_put(params: Mapping[str, Any]) -> str:
    """The unfenced put statement for ``params``: with every value inline (no blob to
    check), a plain upsert that returns no row."""
    return q.PUT_CHECKPOINT_ROW if params["blob_versions"] is None else q.PUT_CHECKPOINT


def _returns_row(query: str | None) -> bool:
    """Whether a put statement returns its verdict row (all but the plain upsert)."""
    return query is not None and query != q.PUT_CHECKPOINT_ROW


def _held_put(held: HeldSave) -> HeldPut:
    if not isinstance(held, HeldPut):
        raise TypeError(
            f"PostgresSaver.save_held takes the saves of its own hold_put, got {held!r}"
        )
    return held


def _array_params(encoded: EncodedCheckpoint) -> dict[str, Any]:
    """The encoded checkpoint as the put statements' parameters; an empty array goes as
    NULL (the statements treat both alike), which costs the client no array dump."""
    return {k: (v if v or not isinstance(v, list) else None) for k, v in encoded._asdict().items()}
