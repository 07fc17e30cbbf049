"""The store contract: long-term memory shared across threads, as LangGraph's ``BaseStore``.

Items are JSON objects kept under a hierarchical namespace and a key.
A store implements :meth:`BaseStore.batch` (and :meth:`BaseStore.abatch`) over
the four operations; the convenience methods build the operations and call them.
Port LangGraph code by swapping the import prefix::

    from graphruntime.store.base import BaseStore, Item   # langgraph.store.base
    from graphruntime.store.memory import InMemoryStore   # langgraph.store.memory

A backend reuses the shared rules from here, so every store refuses and
matches alike: :func:`validate_op`, :func:`encode_value`, :func:`parse_filter` /
:func:`matches_filter`, :func:`namespace_pattern`, :class:`TTLSweeper`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Literal, cast

from graphruntime.errors import NotSupportedError
from graphruntime.store._embed import (
    Embedder,
    Embeddings,
    check_index_config,
    cosine_similarity,
    ensure_embeddings,
    get_text_at_path,
    index_fields,
    tokenize_path,
)
from graphruntime.store._errors import (
    InvalidNamespaceError,
    InvalidStoreRequestError,
    StoreBackendError,
    StoreError,
)
from graphruntime.store._filter import (
    FilterCondition,
    FilterOp,
    json_equal,
    matches_filter,
    parse_filter,
)
from graphruntime.store._namespaces import (
    NamespacePattern,
    list_matching_namespaces,
    namespace_pattern,
)
from graphruntime.store._sweeper import TTLSweeper
from graphruntime.store._types import (
    NOT_PROVIDED,
    AEmbeddingsFunc,
    EmbeddingsFunc,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NamespaceMatchType,
    NamespacePath,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from graphruntime.store._validate import (
    check_ttl_config,
    encode_value,
    ensure_refresh,
    ensure_ttl,
    validate_namespace,
    validate_namespace_labels,
    validate_op,
)

__all__ = (
    "NOT_PROVIDED",
    "AEmbeddingsFunc",
    "BaseStore",
    "Embedder",
    "Embeddings",
    "EmbeddingsFunc",
    "FilterCondition",
    "FilterOp",
    "GetOp",
    "IndexConfig",
    "InvalidNamespaceError",
    "InvalidStoreRequestError",
    "Item",
    "ListNamespacesOp",
    "MatchCondition",
    "NamespaceMatchType",
    "NamespacePath",
    "NamespacePattern",
    "NotProvided",
    "Op",
    "PutOp",
    "Result",
    "SearchItem",
    "SearchOp",
    "StoreBackendError",
    "StoreError",
    "TTLConfig",
    "TTLSweeper",
    "check_index_config",
    "check_ttl_config",
    "cosine_similarity",
    "encode_value",
    "ensure_embeddings",
    "get_text_at_path",
    "index_fields",
    "json_equal",
    "list_matching_namespaces",
    "matches_filter",
    "namespace_pattern",
    "parse_filter",
    "tokenize_path",
    "validate_namespace",
    "validate_namespace_labels",
    "validate_op",
)


def _prefix(namespace_prefix: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """A search prefix given as a list (LangGraph takes ``search(["docs"])``), as a tuple."""
    return tuple(namespace_prefix) if isinstance(namespace_prefix, list) else namespace_prefix


def _list_op(
    prefix: NamespacePath | None,
    suffix: NamespacePath | None,
    max_depth: int | None,
    limit: int,
    offset: int,
) -> ListNamespacesOp:
    conditions = []  # paths given as lists are taken as their tuples, as LangGraph takes them
    if prefix:
        conditions.append(MatchCondition(match_type="prefix", path=tuple(prefix)))
    if suffix:
        conditions.append(MatchCondition(match_type="suffix", path=tuple(suffix)))
    return ListNamespacesOp(
        match_conditions=tuple(conditions), max_depth=max_depth, limit=limit, offset=offset
    )


class BaseStore(ABC):
    """A key-value store of JSON objects under hierarchical namespaces.

    Subclasses implement :meth:`batch` and :meth:`abatch`, which must validate
    each op with :func:`validate_op` and return one result per op, in order.
    """

    supports_ttl: ClassVar[bool] = False
    ttl_config: TTLConfig | None = None

    __slots__ = ("__weakref__",)

    @abstractmethod
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; one result per op (``None`` for puts)."""

    @abstractmethod
    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch`."""

    # -- sync ------------------------------------------------------------------

    def get(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """The item at ``(namespace, key)``, or ``None``.

        ``refresh_ttl`` restarts the item's TTL clock; ``None`` uses the store's
        ``ttl_config["refresh_on_read"]`` (default ``True``).
        """
        op = GetOp(namespace, str(key), ensure_refresh(self.ttl_config, refresh_ttl))
        return cast("Item | None", self.batch([op])[0])

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """Items under ``namespace_prefix`` that match ``filter``, newest first.

        With ``query`` (stores created with ``index=``), ranked by similarity
        instead. See :class:`SearchOp` for the filter syntax. A list prefix is taken as
        its tuple, as LangGraph takes it.
        """
        op = SearchOp(
            _prefix(namespace_prefix),
            filter,
            limit,
            offset,
            query,
            ensure_refresh(self.ttl_config, refresh_ttl),
        )
        return cast("list[SearchItem]", self.batch([op])[0])

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> None:
        """Store ``value`` (a JSON object) at ``(namespace, key)``, replacing what was there.

        Args:
            index: ``None`` embeds the store's configured fields, ``False`` none,
                a list the given paths (stores created with ``index=`` only).
            ttl: minutes until the item expires, counted from this write and
                restarted by refreshing reads; ``None`` never expires; left out,
                the store's ``ttl_config["default_ttl"]``.
        """
        self._check_ttl_supported(ttl)
        op = PutOp(namespace, str(key), value, index, ensure_ttl(self.ttl_config, ttl))
        self.batch([op])

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Delete the item at ``(namespace, key)`` (nothing happens if there is none)."""
        self.batch([PutOp(namespace, str(key), None)])

    def list_namespaces(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """The namespaces holding items, sorted; ``"*"`` in a pattern matches any label.

        ``max_depth`` truncates each namespace to that many labels (duplicates merged).
        """
        return cast(
            "list[tuple[str, ...]]",
            self.batch([_list_op(prefix, suffix, max_depth, limit, offset)])[0],
        )

    # -- async -----------------------------------------------------------------

    async def aget(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """Async :meth:`get`."""
        op = GetOp(namespace, str(key), ensure_refresh(self.ttl_config, refresh_ttl))
        return cast("Item | None", (await self.abatch([op]))[0])

    async def asearch(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """Async :meth:`search`."""
        op = SearchOp(
            _prefix(namespace_prefix),
            filter,
            limit,
            offset,
            query,
            ensure_refresh(self.ttl_config, refresh_ttl),
        )
        return cast("list[SearchItem]", (await self.abatch([op]))[0])

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> None:
        """Async :meth:`put`."""
        self._check_ttl_supported(ttl)
        op = PutOp(namespace, str(key), value, index, ensure_ttl(self.ttl_config, ttl))
        await self.abatch([op])

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        """Async :meth:`delete`."""
        await self.abatch([PutOp(namespace, str(key), None)])

    async def alist_namespaces(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """Async :meth:`list_namespaces`."""
        op = _list_op(prefix, suffix, max_depth, limit, offset)
        return cast("list[tuple[str, ...]]", (await self.abatch([op]))[0])

    def _check_ttl_supported(self, ttl: float | NotProvided | None) -> None:
        if ttl is not NOT_PROVIDED and ttl is not None and not self.supports_ttl:
            raise NotSupportedError(
                f"TTL is not supported by {type(self).__name__}: use a store that supports "
                "TTL or pass ttl=None"
            )
