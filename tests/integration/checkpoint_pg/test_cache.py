"""PostgresCache: the cache contract on Postgres, shared by every process on the database."""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any, TypedDict

import psycopg
import pytest

from checkpoint_pg import PostgresCache
from checkpoint_pg.cache import CACHE_MIGRATIONS
from graphruntime.cache.base import CacheError, InvalidCacheRequestError
from graphruntime.graph import START, StateGraph
from graphruntime.types import CachePolicy

pytestmark = pytest.mark.integration


@pytest.fixture
def cache(pg_url: str) -> Any:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        c: PostgresCache[Any] = PostgresCache(conn)
        c.setup()
        yield c


def _ns() -> tuple[str, ...]:
    return ("test", uuid.uuid4().hex[:12])


def test_set_get_and_overwrite_with_typed_values(cache: PostgresCache[Any]) -> None:
    ns = _ns()
    value = [("items", ["a"]), ("n", 1)]  # a node's writes, tuples kept
    cache.set({(ns, "k1"): (value, None), (ns, "k2"): ({"x": 1}, 60)})
    assert cache.get([(ns, "k1"), (ns, "k2"), (ns, "missing")]) == {
        (ns, "k1"): value,
        (ns, "k2"): {"x": 1},
    }
    cache.set({(ns, "k1"): ("new", None)})
    assert cache.get([(ns, "k1")]) == {(ns, "k1"): "new"}
    assert cache.get([]) == {}


def test_expired_entries_are_invisible_and_swept(cache: PostgresCache[Any], pg_url: str) -> None:
    ns = _ns()
    cache.set({(ns, "old"): (1, 60), (ns, "live"): (2, None)})
    with psycopg.connect(pg_url, autocommit=True) as conn:
        # expire it on the database's clock rather than sleeping past the TTL
        conn.execute(
            "UPDATE graphruntime_cache SET expires_at = now() - interval '1 second'"
            " WHERE namespace = %s AND key = 'old'",
            (f'["{ns[0]}", "{ns[1]}"]',),
        )
    assert cache.get([(ns, "old"), (ns, "live")]) == {(ns, "live"): 2}
    assert cache.sweep_expired() >= 1


def test_clear_namespaces_exactly_or_everything(cache: PostgresCache[Any]) -> None:
    a, b = _ns(), _ns()
    child = (*a, "child")
    cache.set({(a, "k"): (1, None), (b, "k"): (2, None), (child, "k"): (3, None)})
    cache.clear([a])
    assert cache.get([(a, "k"), (b, "k"), (child, "k")]) == {(b, "k"): 2, (child, "k"): 3}
    cache.clear([])  # no namespace: nothing
    assert cache.get([(b, "k")]) == {(b, "k"): 2}
    cache.clear()
    assert cache.get([(b, "k"), (child, "k")]) == {}


def test_a_bad_ttl_is_refused_before_anything_is_written(cache: PostgresCache[Any]) -> None:
    ns = _ns()
    with pytest.raises(InvalidCacheRequestError, match="positive"):
        cache.set({(ns, "a"): (1, None), (ns, "b"): (2, -5)})
    assert cache.get([(ns, "a")]) == {}


def test_a_missing_table_names_the_command_that_creates_it(fresh_db: str) -> None:
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        cache: PostgresCache[Any] = PostgresCache(conn)
        with pytest.raises(CacheError, match="graphrun db migrate"):
            cache.get([(("a",), "k")])
        cache.setup()
        cache.setup()  # idempotent
        assert CACHE_MIGRATIONS.schema_version(conn) == CACHE_MIGRATIONS.latest_version() == 1
        assert cache.get([(("a",), "k")]) == {}


class _State(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


def test_two_graphs_on_one_database_share_cached_node_results(pg_url: str) -> None:
    runs: list[str] = []
    tag = uuid.uuid4().hex[:8]

    def slow(state: _State) -> dict[str, Any]:
        runs.append("slow")
        return {"items": [f"slow-{tag}"]}

    def build(conn: psycopg.Connection[Any]) -> Any:
        g = StateGraph(_State).add_node("slow", slow, cache_policy=CachePolicy())
        return g.add_edge(START, "slow").compile(cache=PostgresCache(conn))

    with (
        psycopg.connect(pg_url, autocommit=True) as one,
        psycopg.connect(pg_url, autocommit=True) as two,
    ):
        first, second = build(one), build(two)
        assert first.invoke({"items": [tag]}) == {"items": [tag, f"slow-{tag}"]}
        assert second.invoke({"items": [tag]}) == {"items": [tag, f"slow-{tag}"]}
        assert runs == ["slow"]  # the second process took the first one's result
        second.clear_cache(["slow"])
        first.invoke({"items": [tag]})
        assert runs == ["slow", "slow"]
