"""InMemoryStore: the store contract in a dict, with TTLs and optional vector search.

    from graphruntime.store.memory import InMemoryStore

    store = InMemoryStore()
    store.put(("users", "u1"), "prefs", {"theme": "dark"})
    store.get(("users", "u1"), "prefs").value   # {"theme": "dark"}

Values are kept as JSON text, so what a caller gets back is always a fresh copy
and exactly what the Postgres store would return. The data lives as long as the
object: for tests, single processes and as the reference the other stores must
agree with (``graphruntime.testing.store_conformance``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from graphruntime.store.base import (
    BaseStore,
    Embedder,
    GetOp,
    IndexConfig,
    InvalidStoreRequestError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    TTLSweeper,
    check_index_config,
    check_ttl_config,
    cosine_similarity,
    encode_value,
    get_text_at_path,
    index_fields,
    list_matching_namespaces,
    matches_filter,
    parse_filter,
    validate_op,
)

__all__ = ("InMemoryStore",)


@dataclass(slots=True)
class _Entry:
    text: str
    value: dict[str, Any]  # parsed ``text``: filtered on, never handed out
    created_at: datetime
    updated_at: datetime
    ttl: float | None
    expires_at: datetime | None
    vectors: list[list[float]] = field(default_factory=list)


@dataclass(slots=True)
class _Embeddings:
    """What a batch must embed before it runs: texts of puts, queries of searches."""

    texts: list[str] = field(default_factory=list)
    owners: list[int] = field(default_factory=list)  # op index of each text
    queries: list[str] = field(default_factory=list)


def _utc_now() -> datetime:
    return datetime.now(UTC)


class InMemoryStore(BaseStore):
    """A thread-safe, in-process store.

    Args:
        index: vector search settings (``dims``, ``embed``, ``fields``): puts
            embed the configured fields and ``search(query=...)`` ranks by
            cosine similarity.
        ttl: TTL settings; puts take ``ttl=`` (minutes) with or without it.
        clock: the current time (timezone-aware); tests pass a fake one to
            expire items without waiting.
    """

    supports_ttl = True

    def __init__(
        self,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._data: dict[tuple[str, ...], dict[str, _Entry]] = {}
        self._lock = threading.RLock()
        self._clock = clock or _utc_now
        self.ttl_config = check_ttl_config(ttl)
        self.index_config: IndexConfig | None = None
        self.embeddings: Embedder | None = None
        if index is not None:
            self.index_config, self.embeddings = check_index_config(index)
        self._sweeper = TTLSweeper(self.sweep_ttl, "graphruntime-store-ttl-sweeper")

    # -- the contract ----------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        plan = self._plan(ops)
        vectors: list[list[float]] = []
        queries: dict[str, list[float]] = {}
        if self.embeddings is not None:
            if plan.texts:
                vectors = self.embeddings.embed_documents(plan.texts)
            queries = {q: self.embeddings.embed_query(q) for q in plan.queries}
        return self._run(ops, plan, vectors, queries)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        plan = self._plan(ops)
        vectors: list[list[float]] = []
        queries: dict[str, list[float]] = {}
        if self.embeddings is not None:
            if plan.texts:
                vectors = await self.embeddings.aembed_documents(plan.texts)
            found = await asyncio.gather(*(self.embeddings.aembed_query(q) for q in plan.queries))
            queries = dict(zip(plan.queries, found, strict=True))
        return self._run(ops, plan, vectors, queries)

    # -- TTL -------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete the expired items now; returns how many."""
        with self._lock:
            now = self._clock()
            swept = 0
            for namespace in list(self._data):
                entries = self._data[namespace]
                for key in [k for k, e in entries.items() if _expired(e, now)]:
                    del entries[key]
                    swept += 1
                if not entries:
                    del self._data[namespace]
            return swept

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Call :meth:`sweep_ttl` every ``sweep_interval_minutes`` on a daemon thread.

        The interval defaults to ``ttl_config["sweep_interval_minutes"]``, else 5.
        The future completes when :meth:`stop_ttl_sweeper` stops the thread.
        """
        configured = (self.ttl_config or {}).get("sweep_interval_minutes")
        return self._sweeper.start(60.0 * float(sweep_interval_minutes or configured or 5))

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; ``False`` if it was still running after ``timeout`` s."""
        return self._sweeper.stop(timeout)

    # -- internals -------------------------------------------------------------

    @property
    def _omit_expired(self) -> bool:
        return (self.ttl_config or {}).get("omit_expired", True)

    def _plan(self, ops: list[Op]) -> _Embeddings:
        plan = _Embeddings()
        queries: dict[str, None] = {}
        for i, op in enumerate(ops):
            validate_op(op)
            if isinstance(op, PutOp) and op.value is not None:
                encode_value(op.value)  # refuse a non-JSON value before anything runs
                for text in self._texts_to_embed(op):
                    plan.texts.append(text)
                    plan.owners.append(i)
            elif isinstance(op, SearchOp):
                parse_filter(op.filter)
                if op.query is not None:
                    if self.embeddings is None:
                        raise InvalidStoreRequestError(
                            "search(query=...) needs a store created with index={'dims': ..., "
                            "'embed': ...}; this store has no vector index"
                        )
                    queries[op.query] = None
        plan.queries = list(queries)
        return plan

    def _texts_to_embed(self, op: PutOp) -> list[str]:
        if op.index is False:
            return []
        if self.index_config is None:
            if op.index is None:
                return []
            raise InvalidStoreRequestError(
                "put(index=[...]) needs a store created with index={'dims': ..., 'embed': ...}; "
                "this store has no vector index (pass index=None or False)"
            )
        paths = index_fields(self.index_config) if op.index is None else op.index
        texts: list[str] = []
        for path in paths:
            texts.extend(get_text_at_path(op.value, path))
        return texts

    def _run(
        self,
        ops: list[Op],
        plan: _Embeddings,
        vectors: list[list[float]],
        queries: dict[str, list[float]],
    ) -> list[Result]:
        by_op: dict[int, list[list[float]]] = {}
        for owner, vector in zip(plan.owners, vectors, strict=True):
            by_op.setdefault(owner, []).append(vector)
        results: list[Result] = []
        with self._lock:
            now = self._clock()
            for i, op in enumerate(ops):
                if isinstance(op, GetOp):
                    results.append(self._get(op, now))
                elif isinstance(op, PutOp):
                    self._put(op, now, by_op.get(i, []))
                    results.append(None)
                elif isinstance(op, SearchOp):
                    query = queries.get(op.query) if op.query is not None else None
                    results.append(self._search(op, now, query))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list_namespaces(op, now))
        return results

    def _visible(self, entry: _Entry | None, now: datetime) -> bool:
        return entry is not None and not (self._omit_expired and _expired(entry, now))

    def _get(self, op: GetOp, now: datetime) -> Item | None:
        entry = self._data.get(op.namespace, {}).get(op.key)
        if entry is None or not self._visible(entry, now):
            return None
        if op.refresh_ttl:
            _refresh(entry, now)
        return Item(
            value=json.loads(entry.text),
            key=op.key,
            namespace=op.namespace,
            created_at=entry.created_at,
            updated_at=entry.updated_at,
        )

    def _put(self, op: PutOp, now: datetime, vectors: list[list[float]]) -> None:
        if op.value is None:
            entries = self._data.get(op.namespace)
            if entries is not None:
                entries.pop(op.key, None)
                if not entries:
                    del self._data[op.namespace]
            return
        text = encode_value(op.value)
        entries = self._data.setdefault(op.namespace, {})
        old = entries.get(op.key)
        created = old.created_at if old is not None and not _expired(old, now) else now
        entries[op.key] = _Entry(
            text=text,
            value=json.loads(text),
            created_at=created,
            updated_at=now,
            ttl=op.ttl,
            expires_at=None if op.ttl is None else now + timedelta(minutes=op.ttl),
            vectors=vectors,
        )

    def _search(self, op: SearchOp, now: datetime, query: list[float] | None) -> list[SearchItem]:
        conditions = parse_filter(op.filter)
        n = len(op.namespace_prefix)
        found: list[tuple[tuple[str, ...], str, _Entry]] = []
        for namespace, entries in self._data.items():
            if namespace[:n] != op.namespace_prefix:
                continue
            for key, entry in entries.items():
                if self._visible(entry, now) and matches_filter(entry.value, conditions):
                    found.append((namespace, key, entry))
        # Newest first; ties (one batch shares a timestamp) by namespace, then key.
        found.sort(key=lambda f: (f[0], f[1]))
        found.sort(key=lambda f: f[2].updated_at, reverse=True)
        ranked: list[tuple[tuple[str, ...], str, _Entry, float | None]]
        if query is None:
            ranked = [(ns, key, entry, None) for ns, key, entry in found]
        else:
            scored = [
                (ns, key, entry, max(cosine_similarity(query, v) for v in entry.vectors))
                for ns, key, entry in found
                if entry.vectors
            ]
            scored.sort(key=lambda f: f[3], reverse=True)
            unscored = [(ns, key, entry, None) for ns, key, entry in found if not entry.vectors]
            ranked = [*scored, *unscored]
        page = ranked[op.offset : op.offset + op.limit]
        results = []
        for namespace, key, entry, score in page:
            if op.refresh_ttl:
                _refresh(entry, now)
            results.append(
                SearchItem(
                    namespace=namespace,
                    key=key,
                    value=json.loads(entry.text),
                    created_at=entry.created_at,
                    updated_at=entry.updated_at,
                    score=score,
                )
            )
        return results

    def _list_namespaces(self, op: ListNamespacesOp, now: datetime) -> list[tuple[str, ...]]:
        live = (
            ns
            for ns, entries in self._data.items()
            if any(self._visible(e, now) for e in entries.values())
        )
        return list_matching_namespaces(live, op)


def _expired(entry: _Entry, now: datetime) -> bool:
    return entry.expires_at is not None and entry.expires_at <= now


def _refresh(entry: _Entry, now: datetime) -> None:
    if entry.ttl is not None:
        entry.expires_at = now + timedelta(minutes=entry.ttl)
