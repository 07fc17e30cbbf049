"""The named queries of ``sql/queries.sql``, as ``LiteralString`` constants.

Loaded by :class:`~checkpoint_pg.named_queries.NamedQueries`; a missing name fails at
import time, not at the first call.
"""

from __future__ import annotations

from checkpoint_pg.named_queries import NamedQueries

__all__ = (
    "ASYNC_COMMIT",
    "CREATE_MIGRATIONS_TABLE",
    "DELETE_THREAD",
    "DELTA_HISTORY",
    "GET_CHECKPOINT",
    "GET_TASK_WRITES",
    "INSERT_WRITES",
    "LIST_CHECKPOINTS",
    "LOCK_MIGRATIONS",
    "MIGRATIONS_TABLE_EXISTS",
    "PRUNE_THREAD",
    "PUT_BATCH",
    "PUT_CHECKPOINT",
    "PUT_CHECKPOINT_FENCED",
    "PUT_CHECKPOINT_ROW",
    "RECORD_MIGRATION",
    "SCHEMA_VERSION",
    "SHALLOW_TRIM",
    "UPSERT_WRITES",
    "WRITE_ROW",
)

_QUERIES = NamedQueries("checkpoint_pg", "sql/queries.sql")

LOCK_MIGRATIONS = _QUERIES["lock_migrations"]
CREATE_MIGRATIONS_TABLE = _QUERIES["create_migrations_table"]
MIGRATIONS_TABLE_EXISTS = _QUERIES["migrations_table_exists"]
SCHEMA_VERSION = _QUERIES["schema_version"]
RECORD_MIGRATION = _QUERIES["record_migration"]
ASYNC_COMMIT = _QUERIES["async_commit"]
GET_CHECKPOINT = _QUERIES["get_checkpoint"]
GET_TASK_WRITES = _QUERIES["get_task_writes"]
LIST_CHECKPOINTS = _QUERIES["list_checkpoints"]
PUT_CHECKPOINT = _QUERIES["put_checkpoint"]
PUT_CHECKPOINT_ROW = _QUERIES["put_checkpoint_row"]
PUT_CHECKPOINT_FENCED = _QUERIES["put_checkpoint_fenced"]
PUT_BATCH = _QUERIES["put_batch"]
INSERT_WRITES = _QUERIES["insert_writes"]
UPSERT_WRITES = _QUERIES["upsert_writes"]
WRITE_ROW = _QUERIES["write_row"]
DELETE_THREAD = _QUERIES["delete_thread"]
DELTA_HISTORY = _QUERIES["delta_history"]
PRUNE_THREAD = _QUERIES["prune_thread"]
SHALLOW_TRIM = _QUERIES["shallow_trim"]
