"""The whole differential corpus with PostgresSaver in place of InMemorySaver.

Each scenario runs twice on graphruntime: with its in-memory saver, then with a
PostgresSaver wherever the scenario creates a saver. The transcripts must be
equal: the saver is invisible to everything a user observes. (The corpus
itself compares graphruntime with LangGraph; this only swaps the saver.)

Every ``rt.InMemorySaver()`` call gets a PostgresSaver on a schema of its own,
so savers stay as independent as in-memory ones (scenarios reuse thread ids
across savers). Nothing in tests/differential changes: the Runtime namespace
is copied with another saver factory.
"""

from __future__ import annotations

import dataclasses
import pprint
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from checkpoint_pg import PostgresSaver, migrate
from tests.differential.observe import same
from tests.differential.registry import SCENARIOS, run_scenario
from tests.differential.runtimes import Runtime, load_runtime
from tests.differential.scenarios import load_all

pytestmark = pytest.mark.integration

load_all()


@pytest.fixture(scope="module")
def memory_runtime() -> Runtime:
    return load_runtime("graphruntime")


@pytest.fixture
def pg_runtime(pg_url: str, memory_runtime: Runtime) -> Iterator[Runtime]:
    """graphruntime, with every saver a scenario creates backed by Postgres.

    Function-scoped: the scenario's connections close when it ends.
    """
    connections: list[psycopg.Connection[Any]] = []

    class IsolatedPostgresSaver(PostgresSaver):
        """A PostgresSaver on its own schema, built like InMemorySaver (scenarios subclass it)."""

        def __init__(self, *, serde: Any = None) -> None:
            schema = f"diff_{uuid.uuid4().hex[:12]}"
            conn = psycopg.connect(
                make_conninfo(pg_url, options=f"-c search_path={schema}"), autocommit=True
            )
            connections.append(conn)
            conn.execute(f'CREATE SCHEMA "{schema}"')
            migrate(conn)
            super().__init__(conn, serde=serde)

    yield dataclasses.replace(
        memory_runtime, InMemorySaver=IsolatedPostgresSaver, MemorySaver=IsolatedPostgresSaver
    )
    for conn in connections:
        conn.close()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_with_postgres_saver(
    name: str, memory_runtime: Runtime, pg_runtime: Runtime
) -> None:
    fn = SCENARIOS[name]
    expected = run_scenario(fn, memory_runtime)
    actual = run_scenario(fn, pg_runtime)
    for i, (want, got) in enumerate(zip(expected, actual, strict=False)):
        if want[0] != got[0] or not same(want[1], got[1]):
            pytest.fail(
                f"{name}: entry #{i} differs\n"
                f"  InMemorySaver [{want[0]}]:\n{pprint.pformat(want[1], width=96, indent=4)}\n"
                f"  PostgresSaver [{got[0]}]:\n{pprint.pformat(got[1], width=96, indent=4)}",
                pytrace=False,
            )
    assert len(expected) == len(actual), f"{name}: transcript lengths differ"
