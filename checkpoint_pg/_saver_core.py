"""The saver's protocol, shared by PostgresSaver and AsyncPostgresSaver: statements,
parameters and the decoding of rows, as operations (``_requests``) with no I/O.

Every operation is one statement (one round trip, atomic on its own; the fenced put
calls a function that locks, checks and inserts) except a task's writes beyond one
statement's parameter limit (one transaction), and a put that finds a blob it relied
on gone, which sends it and tries again.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from typing import Any, NamedTuple

import psycopg
from psycopg.rows import DictRow

from checkpoint_pg import _queries as q
from checkpoint_pg._caches import BlobKey, KnownBlobs, StepCache
from checkpoint_pg._codec import (
    blob_version_key,
    decode_body,
    decode_row_body,
    encode_checkpoint,
    task_key,
)
from checkpoint_pg._history import HistoryRows
from checkpoint_pg._requests import Batch, Op, Stmt
from checkpoint_pg._statements import (
    composed,
    plain_put,
    returns_row,
)
from checkpoint_pg.errors import (
    CheckpointStoreError,
    CheckpointStoreUnavailable,
    is_connection_error,
    missing_schema,
)
from checkpoint_pg.schema import CHECKPOINT_MIGRATIONS
from graphruntime.checkpoint import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    JsonSerializer,
    PendingWrite,
    SerializerProtocol,
    get_checkpoint_id,
)
from graphruntime.checkpoint.base import (
    EXCLUDED_METADATA_KEYS,
    checkpoint_config,
    config_key,
    write_rows,
)
from graphruntime.config import RunnableConfig
from graphruntime.errors import CheckpointConflict, CheckpointError, InvalidArgumentError

__all__ = (
    "LIST_PAGE",
    "PruneResult",
    "SaverCore",
    "as_uuid",
    "raise_unless_retry",
    "require_uuid",
    "store_error",
)

# Rows fetched per round trip by list(): a page is read whole, so no connection
# is held while the caller consumes it (and may call the saver again).
LIST_PAGE = 100


class PruneResult(NamedTuple):
    """How many rows :meth:`PostgresSaver.prune` deleted."""

    checkpoints: int
    writes: int
    blobs: int


class SaverCore:
    """Serializers, caches and every operation of the saver, without I/O.

    Args:
        serde: serializes channel values and writes; metadata is always JSON (it is
            queried as JSONB).
    """

    def __init__(self, serde: SerializerProtocol) -> None:
        self.serde = serde
        self.json = serde if isinstance(serde, JsonSerializer) else JsonSerializer()
        # Blobs known to be stored, so a put need not resend unchanged values even
        # when the caller's new_versions misses a channel. Only a hint: the put
        # statement verifies every blob it does not send.
        self.known = KnownBlobs()
        self.steps = StepCache()

    # -- reads -----------------------------------------------------------------

    def get(
        self, config: RunnableConfig, task_keys: list[uuid.UUID] | None = None
    ) -> Op[CheckpointTuple | None]:
        """One checkpoint with its pending writes (of ``task_keys`` only, if given)."""
        thread_id, checkpoint_ns = config_key(config)
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is not None and as_uuid(checkpoint_id) is None:
            return None  # not an id this saver could have stored
        params = {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
            "task_keys": task_keys,
        }
        row = yield Stmt(q.GET_CHECKPOINT, params, "one")
        return None if row is None else self.load(thread_id, checkpoint_ns, row)

    def list_params(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
    ) -> dict[str, Any] | None:
        """The parameters of ``list_checkpoints`` (None: nothing can match)."""
        params: dict[str, Any] = dict.fromkeys(
            (
                "thread_id",
                "checkpoint_ns",
                "checkpoint_id",
                "before",
                "filter",
                "after_id",
                "after_thread_id",
                "after_ns",
            )
        )
        if config is not None:
            params["thread_id"], _ = config_key(config)
            if "checkpoint_ns" in config["configurable"]:
                params["checkpoint_ns"] = config["configurable"]["checkpoint_ns"] or ""
            checkpoint_id = get_checkpoint_id(config)
            if checkpoint_id is not None:
                if as_uuid(checkpoint_id) is None:
                    return None
                params["checkpoint_id"] = checkpoint_id
        before_id = get_checkpoint_id(before) if before is not None else None
        if before_id is not None:
            params["before"] = require_uuid(before_id, "before checkpoint_id")
        if filter:
            params["filter"] = self.json_text(filter, "list filter")
        return params

    def list_page(self, params: dict[str, Any], page: int) -> Op[list[CheckpointTuple]]:
        """One page of ``list``; ``params`` then continue after its last row."""
        # Unprepared: planned with the actual values, NULL conditions fold away.
        rows = yield Stmt(q.LIST_CHECKPOINTS, {**params, "page_size": page}, "all", False)
        if rows:
            last = rows[-1]
            params["after_id"] = last["checkpoint_id"]
            params["after_thread_id"] = last["thread_id"]
            params["after_ns"] = last["checkpoint_ns"]
        return [self.load(r["thread_id"], r["checkpoint_ns"], r) for r in rows]

    def load(self, thread_id: str, checkpoint_ns: str, row: DictRow) -> CheckpointTuple:
        """The tuple of a ``get_checkpoint`` / ``list_checkpoints`` row."""
        loads = self.serde.loads_typed
        checkpoint, parent_text = decode_row_body(
            row["checkpoint_id"],
            row["body"],
            row["blob_channels"],
            row["blob_types"],
            row["blob_values"],
            values_serde=self.serde,
            json_serde=self.json,
        )
        metadata: CheckpointMetadata = self.json.loads_typed(
            ("json", row["metadata"].encode("utf-8"))
        )
        if row["blob_channels"]:
            versions = checkpoint["channel_versions"]
            for channel in row["blob_channels"]:
                self.known.add(
                    (thread_id, checkpoint_ns, channel, blob_version_key(versions[channel]))
                )
        pending: list[PendingWrite] = []
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
        parent_id = row["parent_checkpoint_id"] or parent_text
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

    def delta_history(
        self, config: RunnableConfig, channels: Sequence[str]
    ) -> Op[Mapping[str, DeltaChannelHistory]]:
        """The contract's parent-chain walk, in one statement (a recursive CTE).

        The walk of each channel stops at the nearest blob, or at the nearest ancestor
        that may hold the value inline in its body; if that one turns out not to, the
        walk goes on from there in one more statement that reads the remaining bodies
        (only for data the runtime did not write: it counts every DeltaChannel in
        every checkpoint's metadata until it stores a snapshot, always as a blob).
        """
        if not channels:
            return {}
        rows = HistoryRows(channels, self.serde.loads_typed, self._inline_values)
        thread_id, checkpoint_ns = config_key(config)
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is not None and as_uuid(checkpoint_id) is None:
            return rows.result()  # not an id this saver could have stored
        params = {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
            "channels": list(dict.fromkeys(channels)),
            "thorough": False,
        }
        continues = rows.add((yield Stmt(q.DELTA_HISTORY, params, "all")))
        for start, depth, walking in continues:
            more = {**params, "checkpoint_id": start, "channels": walking, "thorough": True}
            rows.add((yield Stmt(q.DELTA_HISTORY, more, "all")), depth, thorough=True)
        return rows.result()

    def _inline_values(self, checkpoint_id: str, body: bytes) -> dict[str, Any]:
        checkpoint = decode_body(
            checkpoint_id, body, None, None, None, values_serde=self.serde, json_serde=self.json
        )
        return checkpoint["channel_values"]

    # -- puts ------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        *,
        fenced: bool = False,
    ) -> Op[RunnableConfig]:
        """Store ``checkpoint`` as the child of ``config``'s checkpoint.

        ``fenced``: only if ``config``'s checkpoint is still the namespace's latest
        (else :class:`CheckpointConflict`, nothing written).
        """
        base = self.put_base(config, checkpoint, metadata, fenced)
        thread_id, checkpoint_ns = base["thread_id"], base["checkpoint_ns"]
        resend: set[str] = set()
        for _ in range(3):
            params, keys = self.encode_put(base, checkpoint, new_versions, resend)
            row = yield from self._write_checkpoint(params, fenced)
            if row is not None and not row["ok"]:
                expected = get_checkpoint_id(config)
                raise_unless_retry(row, thread_id, checkpoint_ns, expected, checkpoint["id"])
                break
            if row is None or not row["missing"]:
                for key in keys:
                    self.known.add(key)
                break
            # A referenced blob is gone (deleted or pruned meanwhile): send it too.
            resend.update(row["missing"])
        else:
            raise CheckpointStoreError(
                f"PostgresSaver.put: blobs {sorted(resend)} kept disappearing while "
                f"storing checkpoint {checkpoint['id']}; is the thread being deleted?"
            )
        return checkpoint_config(thread_id, checkpoint_ns, checkpoint["id"])

    def put_base(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        fenced: bool,
    ) -> dict[str, Any]:
        """A put's parameters but the encoded checkpoint's, checked."""
        thread_id, checkpoint_ns = config_key(config)
        parent_id = get_checkpoint_id(config)
        new_id = require_uuid(checkpoint["id"], 'checkpoint["id"]')
        parent = None if parent_id is None else as_uuid(parent_id)
        if fenced and parent_id is not None and parent is None:
            require_uuid(parent_id, "a fenced put's parent checkpoint_id")
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
            # a parent id that is not a UUID (LangGraph's tests use "1") is kept in the body
            "parent_text": parent_id if parent is None else None,
            "metadata": self.json_text(_with_config_metadata(config, metadata), "metadata"),
        }

    def encode_put(
        self,
        base: dict[str, Any],
        checkpoint: Checkpoint,
        new_versions: ChannelVersions,
        resend: Collection[str],
        sent: Collection[BlobKey] = (),
    ) -> tuple[dict[str, Any], list[BlobKey]]:
        """The put's parameters, and the blobs it stores or references (its known keys).
        ``sent``: blobs the statement's earlier put of the parent stores (referenced, not
        sent again: the statement stores its puts in order)."""
        thread_id, checkpoint_ns = base["thread_id"], base["checkpoint_ns"]

        def stored(channel: str, key: str) -> bool:
            if channel in resend:
                return False
            blob = (thread_id, checkpoint_ns, channel, key)
            return blob in self.known or blob in sent

        encoded = encode_checkpoint(
            checkpoint,
            new_versions,
            values_serde=self.serde,
            json_serde=self.json,
            stored=stored,
            parent_text=base["parent_text"],
        )
        keys = [
            (thread_id, checkpoint_ns, channel, key)
            for channel, key in zip(
                encoded.blob_channels + encoded.ref_channels,
                encoded.blob_keys + encoded.ref_keys,
                strict=True,
            )
        ]
        # an empty array goes as NULL (the statements treat both alike): no array dump
        params = {
            k: (v if v or not isinstance(v, list) else None) for k, v in encoded._asdict().items()
        }
        return {**base, **params}, keys

    def _write_checkpoint(self, params: dict[str, Any], fenced: bool) -> Op[DictRow | None]:
        """Run the put statement that fits; its row says what happened (None: stored)."""
        query = q.PUT_CHECKPOINT_FENCED if fenced else plain_put(params)
        row = yield Stmt(query, params, "one" if returns_row(query) else "none")
        return row  # type: ignore[no-any-return]

    def shallow_put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Op[RunnableConfig]:
        """A put that leaves the namespace only this checkpoint (ShallowPostgresSaver)."""
        if "counters_since_delta_snapshot" in metadata:
            raise CheckpointError(
                "ShallowPostgresSaver keeps no history, and a DeltaChannel's value is rebuilt "
                "from the writes of older checkpoints: use PostgresSaver for this graph"
            )
        saved = yield from self.put(config, checkpoint, metadata, new_versions)
        thread_id, checkpoint_ns = config_key(saved)
        self.steps.forget_thread(thread_id)
        params = {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": require_uuid(checkpoint["id"], 'checkpoint["id"]'),
        }
        yield Stmt(q.SHALLOW_TRIM, params, prepare=False)
        return saved

    # -- writes ----------------------------------------------------------------

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> Op[None]:
        """A task's writes: one statement, or one transaction beyond the parameter limit."""
        upsert, rows = self.write_params(config, writes, task_id, task_path)
        statements = composed(upsert, rows)
        if not statements:
            return
        if len(statements) == 1:
            query, values = statements[0]
            yield Stmt(query, values)
            return
        # One statement per _MAX_WRITES rows, all in one transaction, so a node that
        # sends thousands of tasks stores them atomically.
        yield Batch([Stmt(s, v) for s, v in statements])

    def write_params(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> tuple[bool, list[list[Any]]]:
        """Whether the writes are upserted, and one parameter list per row."""
        thread_id, checkpoint_ns, checkpoint_id, upsert, rows = write_rows(config, writes)
        if not rows:
            return upsert, []
        dumps = self.serde.dumps_typed
        task_uuid, task_name = task_key(task_id)
        key = (thread_id, checkpoint_ns, require_uuid(checkpoint_id, "checkpoint_id"), task_uuid)
        path = task_path or None
        return upsert, [
            [*key, task_name, path, idx, channel, *dumps(value)]
            for idx, (channel, value) in rows.items()
        ]

    # -- deletes ---------------------------------------------------------------

    def delete(self, thread_id: str) -> Op[PruneResult]:
        self.known.forget_thread(thread_id)
        self.steps.forget_thread(thread_id)
        row = yield Stmt(q.DELETE_THREAD, {"thread_id": thread_id}, "one")
        return PruneResult(row["checkpoints"], row["writes"], row["blobs"])

    def prune(
        self, thread_ids: str | Sequence[str], keep_last: int, strategy: str
    ) -> Op[PruneResult]:
        """Keep the ``keep_last`` newest checkpoints of each namespace of the thread(s),
        or delete the threads (``strategy="delete"``); one statement per thread."""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidArgumentError(
                f"Unknown prune strategy {strategy!r}: 'keep_latest' or 'delete'"
            )
        if keep_last < 1:
            raise InvalidArgumentError(
                f"keep_last must be at least 1 (got {keep_last}); use delete_thread() "
                "to remove a whole thread"
            )
        threads = [thread_ids] if isinstance(thread_ids, str) else [str(t) for t in thread_ids]
        total = PruneResult(0, 0, 0)
        for thread_id in threads:
            if strategy == "delete":
                done = yield from self.delete(thread_id)
            else:
                done = yield from self._prune(thread_id, keep_last)
            total = PruneResult(*(a + b for a, b in zip(total, done, strict=True)))
        return total

    def _prune(self, thread_id: str, keep_last: int) -> Op[PruneResult]:
        self.known.forget_thread(thread_id)
        self.steps.forget_thread(thread_id)
        params = {"thread_id": thread_id, "keep_last": keep_last}
        row = yield Stmt(q.PRUNE_THREAD, params, "one", False)
        if row["delta_thread"]:
            raise CheckpointError(
                f"prune(keep_latest) left thread {thread_id!r} whole: it uses a DeltaChannel, "
                "whose values are rebuilt from the writes of older checkpoints, so dropping "
                "them would silently change its state. Threads listed before it were "
                "pruned. Delete it (strategy='delete') or keep its history."
            )
        return PruneResult(row["checkpoints"], row["writes"], row["blobs"])

    def json_text(self, value: dict[str, Any], what: str) -> str:
        kind, data = self.json.dumps_typed(value)
        if kind != "json" or not data.startswith(b"{") or data.startswith(b'{"__gr__"'):
            raise CheckpointError(f"The {what} must be a dict with str keys, got {value!r}")
        return data.decode("utf-8")


def store_error(exc: psycopg.Error, operation: str) -> CheckpointStoreError:
    """The package's error for a driver error of ``operation`` (the cause stays attached)."""
    cls = CheckpointStoreUnavailable if is_connection_error(exc) else CheckpointStoreError
    hint = ""
    if missing_schema(exc):
        hint = (
            f" The checkpoint tables are missing: {CHECKPOINT_MIGRATIONS.setup_hint}; "
            "with the workers, `graphrun db migrate` migrates both schemas."
        )
    return cls(f"PostgresSaver.{operation} failed: {exc}{hint}")


def raise_unless_retry(
    row: DictRow, thread_id: str, checkpoint_ns: str, expected: str | None, new_id: str
) -> None:
    """A refused fenced put: fine if it is a retry of the put that won, else a conflict."""
    head, head_parent = row["head_id"], row["head_parent_id"]
    if head == str(uuid.UUID(new_id)) and head_parent == (expected and str(uuid.UUID(expected))):
        return  # this very checkpoint won earlier: a retried put is a success
    raise CheckpointConflict(
        f"Fenced put refused on thread {thread_id!r}, namespace {checkpoint_ns!r}: "
        f"expected the latest checkpoint to be {expected or 'none (a new thread)'}, "
        f"but it is {head or 'none'}. Another writer advanced the thread first; "
        "nothing was written. Reload the thread (get_tuple) and recompute the step "
        "from its latest checkpoint."
    )


def _with_config_metadata(config: RunnableConfig, metadata: CheckpointMetadata) -> dict[str, Any]:
    """The metadata stored with a checkpoint, as LangGraph's savers store it: the run's
    ``config["metadata"]`` and plain ``configurable`` values join the step's (keys the
    step set win; private ``__`` keys and the addressing keys stay out), and NUL
    characters leave top-level strings (JSONB cannot hold them)."""
    out: dict[str, Any] = {
        k: v.replace("\u0000", "") if isinstance(v, str) else v for k, v in metadata.items()
    }
    for extra in (config.get("metadata"), config.get("configurable")):
        for key, value in (extra or {}).items():
            if key in out or key in EXCLUDED_METADATA_KEYS or key.startswith("__"):
                continue
            if isinstance(value, str):
                out[key] = value.replace("\u0000", "")
            elif isinstance(value, int | bool | float):
                out[key] = value
    return out


def as_uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except (ValueError, TypeError, AttributeError):
        return None


def require_uuid(value: str, what: str) -> uuid.UUID:
    parsed = as_uuid(value)
    if parsed is None:
        raise CheckpointError(
            f"{what} must be a UUID (graphruntime's checkpoint ids are uuid6), got {value!r}"
        )
    return parsed
