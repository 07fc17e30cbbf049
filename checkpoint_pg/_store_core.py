"""The store's protocol, shared by PostgresStore and AsyncPostgresStore: checks, SQL,
parameters and rows, as operations (``_requests``) with no I/O.

A batch runs its ops in order in one transaction; consecutive gets (and puts) share
a statement. Texts are embedded by the shells before the batch runs (sync or async),
so the operation itself never waits on anything but the database.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, NamedTuple, TypedDict, TypeVar

import psycopg
from psycopg import sql
from psycopg.rows import DictRow
from tenacity import AsyncRetrying, Retrying, retry_if_exception, stop_after_attempt

from checkpoint_pg import _store_queries as q
from checkpoint_pg._requests import Batch, Op, Stmt
from checkpoint_pg._store_sql import filter_sql, namespace_sql, pattern_sql
from checkpoint_pg._vector import VECTOR_MIGRATIONS, VectorIndex, texts_to_embed, vector_text
from checkpoint_pg.schema import Migrations
from graphruntime.store.base import (
    GetOp,
    InvalidStoreRequestError,
    Item,
    ListNamespacesOp,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    StoreBackendError,
    TTLConfig,
    check_ttl_config,
    encode_value,
    namespace_pattern,
    parse_filter,
    validate_op,
)
from graphruntime.store.base import (
    Op as StoreOp,
)

__all__ = (
    "BATCH_CONFLICT",
    "STORE_MIGRATIONS",
    "Plan",
    "PoolConfig",
    "StoreCore",
    "aretried",
    "check_pool_config",
    "retried",
    "retryable",
)

T = TypeVar("T")

STORE_MIGRATIONS = Migrations(
    "checkpoint_pg",
    "sql/store_migrations",
    table="graphruntime_store_migrations",
    lock_key="graphruntime_store_migrations",
    component="checkpoint_pg store",
    setup_hint="run PostgresStore.setup()",
)

# list_namespaces without max_depth: a slice bound past any namespace's depth.
_NO_DEPTH_LIMIT = 2**31 - 1
# pgvector's halfvec type arrived in 0.7.0.
_HALFVEC_SINCE = (0, 7)


class Plan(NamedTuple):
    """A checked batch and what must be embedded before it runs."""

    ops: list[StoreOp]
    texts: list[str]
    """Texts of the puts to embed, in order (``embed_documents``)."""
    queries: list[str]
    """Search queries to embed, in order (``embed_query`` each)."""
    separate: bool = False
    """The ops of several callers: no transaction holds them together (each run of puts
    is still all or nothing), so concurrent batches hold few row locks at a time."""


class StoreCore:
    """The store's settings and every operation, without I/O."""

    def __init__(self, ttl: TTLConfig | None, index: VectorIndex | None, clock: Any) -> None:
        self.ttl_config = check_ttl_config(ttl)
        self.index = index
        self.clock = clock

    @property
    def omit_expired(self) -> bool:
        return bool((self.ttl_config or {}).get("omit_expired", True))

    def now(self) -> datetime | None:
        return self.clock() if self.clock is not None else None

    # -- setup -------------------------------------------------------------------

    def setup(self) -> Op[None]:
        """The store's migrations, then (with an index) pgvector's table and ANN index.

        Runs in the caller's transaction.
        """
        yield from STORE_MIGRATIONS.migrate_op()
        if self.index is None:
            return
        row = yield Stmt(q.PGVECTOR_AVAILABLE, fetch="one", prepare=False)
        version = row["installed"] or row["available"]
        if version is None:
            raise StoreBackendError(
                "PostgresStore(index=...) needs the pgvector extension (CREATE EXTENSION "
                "vector), which this Postgres server does not have: install pgvector on the "
                "server (the embedded pgserver ships it), or drop index= to store without "
                "vector search"
            )
        if self.index.vector_type == "halfvec" and _version(version) < _HALFVEC_SINCE:
            raise StoreBackendError(
                f"ann_index_config vector_type='halfvec' needs pgvector 0.7 or newer; this "
                f"server has pgvector {version}: use vector_type='vector' or upgrade pgvector"
            )
        yield from VECTOR_MIGRATIONS.migrate_op()
        ann = self.index.ann_index_sql()
        if ann is not None:
            yield Stmt(ann, prepare=False)

    # -- batches -----------------------------------------------------------------

    def plan(self, ops: Sequence[StoreOp]) -> Plan:
        """Check every op (nothing runs if one is refused) and list what to embed."""
        for op in ops:
            validate_op(op)
            if isinstance(op, SearchOp):
                parse_filter(op.filter)
            elif (
                isinstance(op, PutOp)
                and self.index is None
                and op.value is not None
                and op.index not in (None, False)
            ):
                raise InvalidStoreRequestError(
                    "put(index=[...]) names fields to embed for vector search, but this store "
                    "has no index: make it with index={'dims': ..., 'embed': ...}, or pass "
                    "index=None or False"
                )
        texts: list[str] = []
        queries: list[str] = []
        if self.index is not None:
            for op in self._final_puts(ops):
                if op.value is not None and op.index is not False:
                    paths = None if op.index is None else list(op.index)
                    texts.extend(t for _, t in texts_to_embed(self.index, op.value, paths))
            queries = [op.query for op in ops if isinstance(op, SearchOp) and op.query]
        return Plan(list(ops), texts, queries)

    def batch(
        self, plan: Plan, embeddings: list[list[float]], query_vectors: list[list[float]]
    ) -> Op[list[Result]]:
        """Run a planned batch (the shell wraps it in a transaction when :meth:`atomic`).

        Consecutive gets share a statement, consecutive puts too; consecutive searches and
        namespace listings are sent together (pipelined), one round trip for all.
        """
        results: list[Result] = [None] * len(plan.ops)
        now = self.now()
        documents = iter(embeddings)
        queries = iter(query_vectors)
        for start, run in _runs(plan.ops):
            first = run[0]
            if isinstance(first, GetOp):
                found = yield from self._get([op for op in run if isinstance(op, GetOp)], now)
                results[start : start + len(found)] = found
            elif isinstance(first, PutOp):
                puts = [op for op in run if isinstance(op, PutOp)]
                # one round trip, all or nothing (a savepoint in the batch's transaction)
                yield Batch(self._put(puts, now, documents))
            else:
                statements = [self._read_stmt(op, now, queries) for op in run]
                rows = yield Batch(statements, transaction=False)
                for offset, (op, found_rows) in enumerate(zip(run, rows, strict=True)):
                    results[start + offset] = _read_result(op, found_rows)
        return results

    @staticmethod
    def grouped(plan: Plan) -> tuple[Plan, list[int]]:
        """The ops of concurrent callers, gets first, then puts, then the reads that go
        together: any order is one they may have run in. Returns where each op went."""
        rank = {GetOp: 0, PutOp: 1, SearchOp: 2, ListNamespacesOp: 2}
        order = sorted(range(len(plan.ops)), key=lambda i: rank[type(plan.ops[i])])
        where = [0] * len(order)
        for position, i in enumerate(order):
            where[i] = position
        # a stable sort: the puts (whose texts are embedded) and the searches (whose queries
        # are) keep their order among themselves
        return Plan([plan.ops[i] for i in order], plan.texts, plan.queries, separate=True), where

    @staticmethod
    def atomic(plan: Plan) -> bool:
        """Whether the batch needs a transaction around it: a caller's batch of more than
        one run (a run of puts is all or nothing on its own)."""
        return not plan.separate and sum(1 for _ in _runs(plan.ops)) > 1

    def sweep(self) -> Op[int]:
        row = yield Stmt(q.SWEEP, {"now": self.now()}, "one")
        return int(row["swept"])

    def _get(self, ops: list[GetOp], now: datetime | None) -> Op[list[Item | None]]:
        params = {
            "prefixes": [".".join(op.namespace) for op in ops],
            "keys": [op.key for op in ops],
            "refresh": [op.refresh_ttl for op in ops],
            "omit_expired": self.omit_expired,
            "now": now,
        }
        rows = yield Stmt(q.GET, params, "all")
        found: list[Item | None] = [None] * len(ops)
        for row in rows:
            op = ops[row["ord"] - 1]
            found[row["ord"] - 1] = Item(
                value=row["value"],
                key=op.key,
                namespace=op.namespace,
                created_at=row["created_at"],
                updated_at=row["updated_at"],
            )
        return found

    @staticmethod
    def _final_puts(ops: Sequence[StoreOp]) -> list[PutOp]:
        """The last put of each item, in key order: concurrent batches then lock the rows
        they write in one order, and cannot deadlock on them."""
        final: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, PutOp):
                final[(op.namespace, op.key)] = op
        return [final[k] for k in sorted(final, key=lambda k: (".".join(k[0]), k[1]))]

    def _put(
        self, ops: list[PutOp], now: datetime | None, documents: Iterator[list[float]]
    ) -> list[Stmt]:
        statements: list[Stmt] = []
        final = self._final_puts(ops)
        upserts = [op for op in final if op.value is not None]
        deletes = [op for op in final if op.value is None]
        if len(final) > 1:
            # the items' advisory locks in one global order first (see store_lock)
            every = {
                "prefixes": [".".join(op.namespace) for op in final],
                "keys": [op.key for op in final],
            }
            statements.append(Stmt(q.LOCK, every))
        if deletes:
            gone = {
                "prefixes": [".".join(op.namespace) for op in deletes],
                "keys": [op.key for op in deletes],
            }
            statements.append(Stmt(q.DELETE, gone))
        if not upserts:
            return statements
        prefixes = [".".join(op.namespace) for op in upserts]
        keys = [op.key for op in upserts]
        params: dict[str, Any] = {
            "prefixes": prefixes,
            "keys": keys,
            "values": [encode_value(op.value) for op in upserts if op.value is not None],
            "ttls": [op.ttl for op in upserts],
            "now": now,
        }
        statements.append(Stmt(q.PUT, params))
        if self.index is None:
            return statements
        statements.append(Stmt(q.VECTORS_DELETE, {"prefixes": prefixes, "keys": keys}))
        rows: dict[str, list[str]] = {"prefixes": [], "keys": [], "fields": [], "embeddings": []}
        for op, prefix in zip(upserts, prefixes, strict=True):
            if op.index is False or op.value is None:
                continue
            paths = None if op.index is None else list(op.index)
            for field, _ in texts_to_embed(self.index, op.value, paths):
                rows["prefixes"].append(prefix)
                rows["keys"].append(op.key)
                rows["fields"].append(field)
                rows["embeddings"].append(vector_text(next(documents)))
        if rows["prefixes"]:
            statements.append(Stmt(q.VECTORS_INSERT, rows))
        return statements

    def _read_stmt(self, op: StoreOp, now: datetime | None, queries: Iterator[list[float]]) -> Stmt:
        if isinstance(op, SearchOp):
            vector = next(queries) if self.index is not None and op.query else None
            return self._search(op, now, vector)
        assert isinstance(op, ListNamespacesOp)
        return self._list_namespaces(op, now)

    def _search(self, op: SearchOp, now: datetime | None, vector: list[float] | None) -> Stmt:
        params: dict[str, Any] = {
            "omit_expired": self.omit_expired,
            "now": now,
            "limit": op.limit,
            "offset": op.offset,
            "refresh": op.refresh_ttl,
        }
        where = [namespace_sql(op.namespace_prefix, params)]
        where.extend(filter_sql(parse_filter(op.filter), params))
        joined = sql.SQL("\n        AND ").join(where)
        if vector is None or self.index is None:
            # No index (or no query text): LangGraph ignores the query and lists the
            # namespace's items newest first, with no score.
            query = sql.SQL(q.SEARCH).format(where=joined, refresh=sql.SQL(q.REFRESH_HITS))
        else:
            params["query_vector"] = vector_text(vector)
            query = sql.SQL(q.VECTOR_SEARCH).format(
                where=joined,
                refresh=sql.SQL(q.REFRESH_HITS),
                distance=self.index.distance_sql(),
                score=self.index.score_sql(sql.SQL("n.distance")),
            )
        return Stmt(query, params, "all", False)

    def _list_namespaces(self, op: ListNamespacesOp, now: datetime | None) -> Stmt:
        pattern = namespace_pattern(op.match_conditions)
        params: dict[str, Any] = {
            "omit_expired": self.omit_expired,
            "now": now,
            "max_depth": op.max_depth if op.max_depth is not None else _NO_DEPTH_LIMIT,
            "limit": op.limit,
            "offset": op.offset,
        }
        if pattern is None:  # conditions no namespace can meet
            return Stmt(q.NOTHING, None, "all", False)
        query = sql.SQL(q.LIST_NAMESPACES).format(where=pattern_sql(pattern, params))
        return Stmt(query, params, "all", False)


def _read_result(op: StoreOp, rows: list[DictRow]) -> Result:
    if isinstance(op, ListNamespacesOp):
        return [tuple(row["namespace"]) for row in rows]
    return [
        SearchItem(
            namespace=tuple(row["prefix"].split(".")),
            key=row["key"],
            value=row["value"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            score=row.get("score"),
        )
        for row in rows
    ]


_FAMILY = {GetOp: "get", PutOp: "put", SearchOp: "read", ListNamespacesOp: "read"}


class PoolConfig(TypedDict, total=False):
    """Settings of the pool ``from_conn_string`` opens."""

    min_size: int
    max_size: int | None
    kwargs: dict[str, Any]


def retryable(exc: BaseException) -> bool:
    """Whether the batch was rolled back whole by a conflict with a concurrent one (it then
    changed nothing, and runs again)."""
    return isinstance(exc, StoreBackendError) and isinstance(
        exc.__cause__, psycopg.errors.DeadlockDetected | psycopg.errors.SerializationFailure
    )


BATCH_CONFLICT: dict[str, Any] = {
    "stop": stop_after_attempt(2),
    "retry": retry_if_exception(retryable),
    "reraise": True,
}
"""The retry schedule (tenacity's arguments) of a batch that a deadlock or a
serialization failure rolled back, after its first run: it changed nothing, so it runs
again at once, twice at most (three runs in all), and the last run's error is raised.
:func:`retried` and :func:`aretried` run a batch on it; its first run is outside
tenacity, since most batches succeed at once and building a tenacity loop costs about
0.1 ms."""


def retried(batch: Callable[[], T]) -> T:
    """``batch()``, run again on :data:`BATCH_CONFLICT` if a conflict rolled it back."""
    try:
        return batch()
    except StoreBackendError as exc:
        if not retryable(exc):
            raise
    result: T = Retrying(**BATCH_CONFLICT)(batch)
    return result


async def aretried(batch: Callable[[], Awaitable[T]]) -> T:
    """``await batch()``, run again on :data:`BATCH_CONFLICT` if a conflict rolled it
    back."""
    try:
        return await batch()
    except StoreBackendError as exc:
        if not retryable(exc):
            raise

    async def run() -> T:  # a coroutine function: tenacity awaits only those
        return await batch()

    result: T = await AsyncRetrying(**BATCH_CONFLICT)(run)
    return result


def check_pool_config(pool_config: Any, pipeline: bool) -> None:
    """Refuse pool settings the store would not use."""
    if pipeline:
        raise InvalidStoreRequestError(
            "from_conn_string: pipeline=True needs one connection; it cannot go with "
            "pool_config (a pool lends a different connection to each call)"
        )
    unknown = set(pool_config) - set(PoolConfig.__annotations__)
    if unknown:
        raise InvalidStoreRequestError(
            f"Unknown pool_config keys {sorted(unknown)}: expected min_size, max_size, kwargs"
        )


def _runs(ops: Sequence[StoreOp]) -> Iterator[tuple[int, list[StoreOp]]]:
    """Consecutive ops of one family (gets, puts, reads) as one run each."""
    start = 0
    while start < len(ops):
        kind = type(ops[start])
        end = start + 1
        # gets, puts, and reads (searches and listings) each make a run
        family = _FAMILY[kind]
        while end < len(ops) and _FAMILY[type(ops[end])] == family:
            end += 1
        yield start, list(ops[start:end])
        start = end


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:2] if part.isdigit())
