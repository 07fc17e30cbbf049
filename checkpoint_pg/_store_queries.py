"""The named queries of ``sql/store_queries.sql`` (PostgresStore), as ``LiteralString``.

A missing name fails at import time, not at the first call.
"""

from __future__ import annotations

from checkpoint_pg.named_queries import NamedQueries

_QUERIES = NamedQueries("checkpoint_pg", "sql/store_queries.sql")

GET = _QUERIES["store_get"]
PUT = _QUERIES["store_put"]
LOCK = _QUERIES["store_lock"]
DELETE = _QUERIES["store_delete"]
SEARCH = _QUERIES["store_search"]
LIST_NAMESPACES = _QUERIES["store_list_namespaces"]
SWEEP = _QUERIES["store_sweep"]
WHERE_ALL = _QUERIES["store_where_all"]
WHERE_NAMESPACE = _QUERIES["store_where_namespace"]
WHERE_PREFIX_PATTERN = _QUERIES["store_where_prefix_pattern"]
WHERE_SUFFIX_PATTERN = _QUERIES["store_where_suffix_pattern"]
FILTER_EQ = _QUERIES["store_filter_eq"]
FILTER_NE = _QUERIES["store_filter_ne"]
FILTER_OBJECT = _QUERIES["store_filter_object"]
FILTER_NUMBER = _QUERIES["store_filter_number"]
FILTER_STRING = _QUERIES["store_filter_string"]
PGVECTOR_AVAILABLE = _QUERIES["store_pgvector_available"]
VECTORS_DELETE = _QUERIES["store_vectors_delete"]
VECTORS_INSERT = _QUERIES["store_vectors_insert"]
VECTOR_SEARCH = _QUERIES["store_vector_search"]
VECTOR_DISTANCE = _QUERIES["store_vector_distance"]
VECTOR_ANN_INDEX = _QUERIES["store_vector_ann_index"]
NOTHING = _QUERIES["store_nothing"]
REFRESH_HITS = _QUERIES["store_refresh_hits"]
