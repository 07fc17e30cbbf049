"""Fixtures shared by the checkpoint_pg integration tests of ``pipelined()`` blocks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from psycopg_pool import ConnectionPool

from checkpoint_pg import PostgresSaver


@pytest.fixture
def pool(pg_url: str) -> Iterator[ConnectionPool[Any]]:
    """A pool of one autocommit connection: a test sees (or traces) the session its
    blocks run on."""
    with ConnectionPool(pg_url, min_size=1, max_size=1, kwargs={"autocommit": True}) as pool:
        yield pool


@pytest.fixture
def saver(pool: ConnectionPool[Any]) -> PostgresSaver:
    """A saver on :func:`pool` (a module's own ``saver`` fixture takes precedence)."""
    return PostgresSaver(pool)
