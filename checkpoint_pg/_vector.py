"""Vector search for PostgresStore on pgvector: LangGraph's ``index=`` settings, checked,
and the SQL fragments they select. No I/O.

Embeddings live in ``graphruntime_store_vectors`` (``sql/store_vector_migrations``), one
row per embedded text, as untyped ``vector`` values: a store's ``dims`` and
``vector_type`` apply as casts in its queries and its ANN index (an expression index),
so stores with different settings may share a database.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict

from psycopg import sql

from checkpoint_pg import _store_queries as q
from checkpoint_pg.schema import Migrations
from graphruntime.store.base import (
    Embedder,
    IndexConfig,
    InvalidStoreRequestError,
    check_index_config,
    get_text_at_path,
    index_fields,
    tokenize_path,
)

__all__ = (
    "VECTOR_MIGRATIONS",
    "ANNIndexConfig",
    "PostgresIndexConfig",
    "VectorIndex",
    "texts_to_embed",
)

VECTOR_MIGRATIONS = Migrations(
    "checkpoint_pg",
    "sql/store_vector_migrations",
    table="graphruntime_store_vector_migrations",
    lock_key="graphruntime_store_vector_migrations",
    component="checkpoint_pg store vectors",
    setup_hint="run PostgresStore.setup() with index=",
)

_DISTANCES = {
    # operator (ascending: nearest first), score from the distance d (higher is nearer)
    "cosine": ("<=>", "1 - {d}", "cosine_ops"),
    "inner_product": ("<#>", "-({d})", "ip_ops"),
    "l2": ("<->", "-({d})", "l2_ops"),
}
_KINDS = {"hnsw": ("m", "ef_construction"), "ivfflat": ("lists", "nlist"), "flat": ()}


class ANNIndexConfig(TypedDict, total=False):
    """The approximate-nearest-neighbour index (LangGraph's ``ann_index_config``)."""

    kind: Literal["hnsw", "ivfflat", "flat"]
    vector_type: Literal["vector", "halfvec"]
    m: int
    ef_construction: int
    nlist: int
    lists: int


class PostgresIndexConfig(IndexConfig, total=False):
    """``IndexConfig`` with pgvector's settings, as LangGraph's store takes them."""

    ann_index_config: NotRequired[ANNIndexConfig]
    distance_type: NotRequired[Literal["l2", "inner_product", "cosine"]]


class VectorIndex:
    """A store's checked ``index=`` settings: what to embed and how to compare."""

    def __init__(self, config: PostgresIndexConfig) -> None:
        if not isinstance(config, dict):
            raise InvalidStoreRequestError(
                f"index is a PostgresIndexConfig dict, got {type(config).__name__}"
            )
        base: Any = {
            k: v for k, v in config.items() if k not in ("ann_index_config", "distance_type")
        }
        checked, self.embedder = check_index_config(base)
        self.dims: int = checked["dims"]
        self.fields = index_fields(checked)
        for field in self.fields:
            if field != "$":
                tokenize_path(field)  # a bad path fails now, not at the first put
        distance = config.get("distance_type", "cosine")
        if distance not in _DISTANCES:
            raise InvalidStoreRequestError(
                f"index distance_type {distance!r}: use 'cosine', 'inner_product' or 'l2'"
            )
        self.distance: str = distance
        ann: dict[str, Any] = dict(config.get("ann_index_config") or {})
        self.vector_type: str = ann.pop("vector_type", "vector")
        if self.vector_type not in ("vector", "halfvec"):
            raise InvalidStoreRequestError(
                f"ann_index_config vector_type {self.vector_type!r}: use 'vector' or 'halfvec'"
            )
        self.kind: str = ann.pop("kind", "hnsw")
        if self.kind not in _KINDS:
            raise InvalidStoreRequestError(
                f"ann_index_config kind {self.kind!r}: use 'hnsw', 'ivfflat' or 'flat'"
            )
        unknown = set(ann) - set(_KINDS[self.kind])
        if unknown:
            raise InvalidStoreRequestError(
                f"ann_index_config for kind {self.kind!r} takes {sorted(_KINDS[self.kind])}, "
                f"not {sorted(unknown)}"
            )
        self.params: dict[str, int] = {}
        for key, value in ann.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidStoreRequestError(
                    f"ann_index_config {key} must be a positive int, got {value!r}"
                )
            self.params["lists" if key == "nlist" else key] = value
        self.config: PostgresIndexConfig = {**config, "fields": self.fields}

    @property
    def embed(self) -> Embedder:
        return self.embedder

    def _cast(self) -> sql.Composable:
        return sql.SQL("{}({})").format(sql.SQL(self.vector_type), sql.Literal(self.dims))

    def distance_sql(self) -> sql.Composable:
        """Distance of a stored embedding to ``%(query_vector)s``: ascending, nearest first."""
        operator = _DISTANCES[self.distance][0]
        return sql.SQL(q.VECTOR_DISTANCE).format(cast=self._cast(), op=sql.SQL(operator))

    def score_sql(self, distance: sql.Composable) -> sql.Composable:
        """The similarity LangGraph reports for a distance (higher is nearer)."""
        template = _DISTANCES[self.distance][1].replace("{d}", "{distance}")
        return sql.SQL(template).format(distance=distance)

    def ann_index_sql(self) -> sql.Composed | None:
        """The statement creating this store's ANN index (None for ``kind="flat"``)."""
        if self.kind == "flat":
            return None
        ops = f"{self.vector_type}_{_DISTANCES[self.distance][2]}"
        name = f"graphruntime_store_vectors_{self.kind}_{self.vector_type}_{self.dims}_{ops}"
        with_params: sql.Composable = sql.SQL("")
        if self.params:
            with_params = sql.SQL(" WITH ({})").format(
                sql.SQL(", ").join(
                    sql.SQL("{} = {}").format(sql.SQL(k), sql.Literal(v))
                    for k, v in sorted(self.params.items())
                )
            )
        return sql.SQL(q.VECTOR_ANN_INDEX).format(
            name=sql.Identifier(name),
            method=sql.SQL(self.kind),
            cast=self._cast(),
            ops=sql.SQL(ops),
            params=with_params,
        )


def texts_to_embed(
    index: VectorIndex, value: Mapping[str, Any], paths: list[str] | None
) -> list[tuple[str, str]]:
    """``(field name, text)`` of each text of ``value`` to embed, as LangGraph names them:
    the path, or ``path.i`` when the path yields several texts."""
    out: list[tuple[str, str]] = []
    for path in paths if paths is not None else index.fields:
        texts = get_text_at_path(value, path)
        for i, text in enumerate(texts):
            out.append((f"{path}.{i}" if len(texts) > 1 else path, text))
    return out


def vector_text(vector: list[float]) -> str:
    """pgvector's text form of an embedding."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"
