"""Exceptions raised by checkpoint_pg.

They extend graphruntime's tree, so ``except GraphRuntimeError`` (or
``CheckpointError``) catches them too::

    graphruntime.errors.CheckpointError
    ├── graphruntime.errors.CheckpointConflict   a fenced put lost the race for the head
    └── CheckpointStoreError                     the database refused or failed an operation
        └── SchemaVersionError                   the schema is newer than this code knows
"""

from __future__ import annotations

from graphruntime.errors import CheckpointError

__all__ = ("CheckpointStoreError", "SchemaVersionError")


class CheckpointStoreError(CheckpointError):
    """The Postgres store failed; the driver's exception is the ``__cause__``."""


class SchemaVersionError(CheckpointStoreError):
    """The database schema is newer than the newest migration this code ships.

    Upgrade checkpoint_pg (graphruntime) before running against this database.
    """
