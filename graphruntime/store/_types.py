"""The store's value types and operations, named and shaped as LangGraph's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, NamedTuple, Protocol, TypeAlias, TypedDict, runtime_checkable

__all__ = (
    "NOT_PROVIDED",
    "AEmbeddingsFunc",
    "Embeddings",
    "EmbeddingsFunc",
    "GetOp",
    "IndexConfig",
    "Item",
    "ListNamespacesOp",
    "MatchCondition",
    "NamespaceMatchType",
    "NamespacePath",
    "NotProvided",
    "Op",
    "PutOp",
    "Result",
    "SearchItem",
    "SearchOp",
    "TTLConfig",
)


class NotProvided:
    """Sentinel: "the caller gave no value" (``put(ttl=...)`` left out), as opposed to ``None``."""

    __slots__ = ()

    def __bool__(self) -> Literal[False]:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_PROVIDED = NotProvided()


def _as_datetime(value: datetime | str) -> datetime:
    # Items revived from JSON (Item.dict()) carry ISO strings.
    return datetime.fromisoformat(value) if isinstance(value, str) else value


class Item:
    """A stored value with its namespace, key and timestamps.

    Args:
        value: the stored JSON object.
        key: the item's id inside its namespace.
        namespace: the hierarchical path holding the item, e.g. ``("users", "u1")``.
        created_at: when the item was first stored.
        updated_at: when it was last written.
    """

    __slots__ = ("created_at", "key", "namespace", "updated_at", "value")

    def __init__(
        self,
        *,
        value: dict[str, Any],
        key: str,
        namespace: tuple[str, ...],
        created_at: datetime | str,
        updated_at: datetime | str,
    ) -> None:
        self.value = value
        self.key = key
        self.namespace = tuple(namespace)
        self.created_at = _as_datetime(created_at)
        self.updated_at = _as_datetime(updated_at)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Item):
            return NotImplemented
        return (
            self.value == other.value
            and self.key == other.key
            and self.namespace == other.namespace
            and self.created_at == other.created_at
            and self.updated_at == other.updated_at
        )

    def __hash__(self) -> int:
        return hash((self.namespace, self.key))

    def dict(self) -> dict[str, Any]:
        """The item as JSON-ready data (timestamps as ISO strings)."""
        return {
            "namespace": list(self.namespace),
            "key": self.key,
            "value": self.value,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.dict().items())
        return f"{type(self).__name__}({fields})"


class SearchItem(Item):
    """An :class:`Item` found by a search, with its similarity ``score`` (``None`` unranked)."""

    __slots__ = ("score",)

    def __init__(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        created_at: datetime | str,
        updated_at: datetime | str,
        score: float | None = None,
    ) -> None:
        super().__init__(
            value=value,
            key=key,
            namespace=namespace,
            created_at=created_at,
            updated_at=updated_at,
        )
        self.score = score

    def dict(self) -> dict[str, Any]:
        result = super().dict()
        result["score"] = self.score
        return result


class GetOp(NamedTuple):
    """Read one item by namespace and key."""

    namespace: tuple[str, ...]
    key: str
    refresh_ttl: bool = True
    """Restart the item's TTL clock (when it has a TTL)."""


class SearchOp(NamedTuple):
    """Find items under a namespace prefix, by filter and/or by similarity to ``query``.

    ``filter`` maps a field of the value to a JSON value it must equal, or to
    operators: ``{"score": {"$gte": 3}, "color": "red"}``. Operators are ``$eq``,
    ``$ne``, ``$gt``, ``$gte``, ``$lt`` and ``$lte``; a nested object without
    operators matches the value's nested object field by field.
    """

    namespace_prefix: tuple[str, ...]
    filter: dict[str, Any] | None = None
    limit: int = 10
    offset: int = 0
    query: str | None = None
    refresh_ttl: bool = True


NamespacePath: TypeAlias = tuple[str, ...]
"""A namespace pattern; a ``"*"`` label matches any one label (``list_namespaces`` only)."""

NamespaceMatchType: TypeAlias = Literal["prefix", "suffix"]


class MatchCondition(NamedTuple):
    """A namespace pattern anchored at the start (``"prefix"``) or the end (``"suffix"``)."""

    match_type: NamespaceMatchType
    path: NamespacePath


class ListNamespacesOp(NamedTuple):
    """List the stored namespaces matching every condition, sorted, truncated to ``max_depth``."""

    match_conditions: tuple[MatchCondition, ...] | None = None
    max_depth: int | None = None
    limit: int = 100
    offset: int = 0


class PutOp(NamedTuple):
    """Store ``value`` at ``(namespace, key)``, or delete the item when ``value`` is ``None``.

    ``index``: ``None`` embeds the fields the store's :class:`IndexConfig` names,
    ``False`` embeds nothing, a list of paths embeds those. ``ttl``: minutes after
    the last write (or refreshing read) at which the item expires; ``None`` never.
    """

    namespace: tuple[str, ...]
    key: str
    value: Mapping[str, Any] | None
    # "index" shadows tuple.index, as in LangGraph's PutOp.
    index: Literal[False] | list[str] | None = None  # type: ignore[assignment]
    ttl: float | None = None


Op: TypeAlias = GetOp | SearchOp | PutOp | ListNamespacesOp
Result: TypeAlias = Item | list[Item] | list[SearchItem] | list[tuple[str, ...]] | None


class TTLConfig(TypedDict, total=False):
    """How a store expires items (all times in minutes)."""

    refresh_on_read: bool
    """Reads (get, search) restart the TTL clock unless told otherwise. Default ``True``."""
    omit_expired: bool
    """Reads skip expired items not yet swept. Default ``True`` here (LangGraph: ``False``)."""
    default_ttl: float | None
    """TTL of a put that gives none. Default ``None`` (never expires)."""
    sweep_interval_minutes: float | None
    """Interval :meth:`start_ttl_sweeper` uses when called without one. Default 5."""


EmbeddingsFunc: TypeAlias = Callable[[Sequence[str]], list[list[float]]]
"""A synchronous function embedding texts, one vector per text."""

AEmbeddingsFunc: TypeAlias = Callable[[Sequence[str]], Awaitable[list[list[float]]]]
"""An asynchronous function embedding texts, one vector per text."""


class IndexConfig(TypedDict, total=False):
    """Vector search settings of a store.

    ``embed`` is a sync or async function of a list of texts, or an object with
    LangChain's ``Embeddings`` methods (``embed_documents``/``embed_query``, and
    optionally ``aembed_documents``/``aembed_query``). Provider strings
    (``"openai:..."``) are not supported: they need LangChain.
    """

    dims: int
    """Length of every embedding vector."""
    embed: Embeddings | EmbeddingsFunc | AEmbeddingsFunc
    fields: list[str] | None
    """Paths of the text to embed; ``["$"]`` (the default) embeds the whole value as JSON."""


@runtime_checkable
class Embeddings(Protocol):
    """LangChain's ``Embeddings`` interface (sync half); async twins are optional."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...
