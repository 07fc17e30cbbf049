"""What is specific to InMemoryStore (vector search, the sweeper's future) and the shared
helpers, checked against LangGraph where it defines the same thing."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

import pytest
from langgraph.store.base import InvalidNamespaceError as LGInvalidNamespaceError
from langgraph.store.base.embed import get_text_at_path as lg_get_text_at_path
from langgraph.store.base.embed import tokenize_path as lg_tokenize_path
from langgraph.store.memory import InMemoryStore as LGInMemoryStore

from graphruntime.store import InMemoryStore as ExportedInMemoryStore
from graphruntime.store.base import (
    Embeddings,
    InvalidNamespaceError,
    InvalidStoreRequestError,
    Item,
    SearchItem,
    cosine_similarity,
    get_text_at_path,
    json_equal,
    tokenize_path,
)
from graphruntime.store.memory import InMemoryStore

VOCAB = ("cat", "dog", "fish")


def embed(texts: Sequence[str]) -> list[list[float]]:
    """A bag-of-words vector over VOCAB: similarity is word overlap."""
    return [[float(t.count(word)) for word in VOCAB] for t in texts]


async def aembed(texts: Sequence[str]) -> list[list[float]]:
    return embed(texts)


class CountingEmbeddings:
    """Duck-typed LangChain Embeddings."""

    def __init__(self) -> None:
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return embed(texts)

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return embed([text])[0]


def test_store_package_exports_the_memory_store() -> None:
    assert ExportedInMemoryStore is InMemoryStore


def test_vector_search_ranks_by_cosine_similarity() -> None:
    store = InMemoryStore(index={"dims": 3, "embed": embed, "fields": ["text"]})
    store.put(("docs",), "cats", {"text": "cat cat"})
    store.put(("docs",), "mixed", {"text": "cat dog"})
    store.put(("docs",), "dogs", {"text": "dog"})
    store.put(("docs",), "unindexed", {"text": "cat"}, index=False)
    found = store.search(("docs",), query="cat")
    assert [i.key for i in found] == ["cats", "mixed", "dogs", "unindexed"]
    assert all(isinstance(i, SearchItem) for i in found)
    assert found[0].score == pytest.approx(1.0)
    assert found[1].score == pytest.approx(1 / math.sqrt(2))
    assert found[2].score == pytest.approx(0.0)
    assert found[3].score is None
    page = store.search(("docs",), query="cat", limit=2, offset=1)
    assert [i.key for i in page] == ["mixed", "dogs"]
    filtered = store.search(("docs",), query="dog", filter={"text": {"$ne": "dog"}})
    assert [i.key for i in filtered] == ["mixed", "cats", "unindexed"]


def test_vector_search_uses_the_best_of_several_fields() -> None:
    store = InMemoryStore(index={"dims": 3, "embed": embed, "fields": ["title", "parts[*]"]})
    store.put(("d",), "a", {"title": "fish", "parts": ["dog", "cat"]})
    store.put(("d",), "b", {"title": "dog fish"})
    store.put(("d",), "c", {"title": "x"}, index=["title"])
    found = store.search(("d",), query="cat")
    assert found[0].key == "a"
    assert found[0].score == pytest.approx(1.0)


def test_put_index_paths_override_the_configured_fields() -> None:
    store = InMemoryStore(index={"dims": 3, "embed": embed, "fields": ["title"]})
    store.put(("d",), "a", {"title": "dog", "body": "cat"}, index=["body"])
    assert store.search(("d",), query="cat")[0].score == pytest.approx(1.0)


def test_duck_typed_embeddings_object_and_async_function() -> None:
    counting = CountingEmbeddings()
    assert isinstance(counting, Embeddings)
    store = InMemoryStore(index={"dims": 3, "embed": counting})
    store.put(("d",), "a", {"text": "fish"})
    assert store.search(("d",), query="fish")[0].key == "a"
    assert counting.calls == 2

    astore = InMemoryStore(index={"dims": 3, "embed": aembed, "fields": ["text"]})

    async def scenario() -> list[SearchItem]:
        await astore.aput(("d",), "a", {"text": "fish"})
        await astore.aput(("d",), "b", {"text": "dog"})
        return await astore.asearch(("d",), query="dog")

    assert [i.key for i in asyncio.run(scenario())] == ["b", "a"]
    with pytest.raises(InvalidStoreRequestError, match="async"):
        astore.put(("d",), "c", {"text": "cat"})
    assert astore.get(("d",), "c") is None
    # A put that embeds nothing needs no embed call at all.
    astore.put(("d",), "c", {"text": "cat"}, index=False)
    assert astore.get(("d",), "c") is not None


def test_sync_function_serves_the_async_methods() -> None:
    store = InMemoryStore(index={"dims": 3, "embed": embed})

    async def scenario() -> list[SearchItem]:
        await store.aput(("d",), "a", {"text": "fish"})
        return await store.asearch(("d",), query="fish")

    assert asyncio.run(scenario())[0].score == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("index", "match"),
    [
        ({"embed": embed}, "dims"),
        ({"dims": 0, "embed": embed}, "dims"),
        ({"dims": 3}, "embed"),
        ({"dims": 3, "embed": "openai:text-embedding-3-small"}, "LangChain"),
        ({"dims": 3, "embed": 42}, "function"),
        ({"dims": 3, "embed": embed, "fields": "text"}, "fields"),
        ({"dims": 3, "embed": embed, "ann_index_config": {}}, "Unknown"),
    ],
)
def test_bad_index_configs_are_refused(index: Any, match: str) -> None:
    with pytest.raises(InvalidStoreRequestError, match=match):
        InMemoryStore(index=index)


def test_wrong_vector_sizes_are_refused() -> None:
    store = InMemoryStore(index={"dims": 4, "embed": embed})
    with pytest.raises(InvalidStoreRequestError, match="dims=4"):
        store.put(("d",), "a", {"text": "x"})
    bad = InMemoryStore(index={"dims": 3, "embed": lambda texts: [[1.0, 0.0, 0.0]]})
    with pytest.raises(InvalidStoreRequestError, match="2 texts"):
        bad.put(("d",), "a", {"a": "x", "b": "y"}, index=["a", "b"])


def test_bad_ttl_config_is_refused() -> None:
    with pytest.raises(InvalidStoreRequestError, match="Unknown"):
        InMemoryStore(ttl={"default": 5})  # type: ignore[arg-type]
    with pytest.raises(InvalidStoreRequestError, match="ttl"):
        InMemoryStore(ttl={"default_ttl": -1})
    with pytest.raises(InvalidStoreRequestError, match="sweep_interval"):
        InMemoryStore(ttl={"sweep_interval_minutes": 0})
    with pytest.raises(InvalidStoreRequestError, match="omit_expired"):
        InMemoryStore(ttl={"omit_expired": "yes"})  # type: ignore[arg-type]


def test_cancelling_the_sweeper_future_stops_it() -> None:
    store = InMemoryStore()
    future = store.start_ttl_sweeper(sweep_interval_minutes=10)
    assert store.start_ttl_sweeper() is future  # already running
    assert future.cancel()
    assert store.stop_ttl_sweeper(timeout=30)
    assert store.stop_ttl_sweeper(timeout=30)  # stopping twice is fine


def test_item_shape_matches_langgraph() -> None:
    item = Item(
        value={"a": 1},
        key="k",
        namespace=["x", "y"],  # type: ignore[arg-type]
        created_at="2024-01-02T03:04:05+00:00",
        updated_at="2024-01-02T03:04:06+00:00",
    )
    assert item.namespace == ("x", "y")
    assert item.dict() == {
        "namespace": ["x", "y"],
        "key": "k",
        "value": {"a": 1},
        "created_at": "2024-01-02T03:04:05+00:00",
        "updated_at": "2024-01-02T03:04:06+00:00",
    }
    hit = SearchItem(("x",), "k", {}, item.created_at, item.updated_at, score=0.5)
    assert hit.dict()["score"] == 0.5
    assert hash(item) == hash((("x", "y"), "k"))
    assert "Item(namespace=['x', 'y']" in repr(item)


@pytest.mark.parametrize(
    "namespace",
    [(), ("langgraph",), ("a.b",), ("",), ("a", "\x00"), ("a", 1), ("fine", "too")],
)
def test_namespace_rules_match_langgraph(namespace: tuple[Any, ...]) -> None:
    lg_refused = ours_refused = False
    try:
        LGInMemoryStore().put(namespace, "k", {"v": 1})
    except LGInvalidNamespaceError:
        lg_refused = True
    try:
        InMemoryStore().put(namespace, "k", {"v": 1})
    except InvalidNamespaceError:
        ours_refused = True
    assert ours_refused == lg_refused


@pytest.mark.parametrize(
    "path",
    ["$", "a", "a.b", "a[0]", "a[-1].b", "a[*].b", "*", "a.*", "{a,b.c}", "x[*].{a,b}", "a[9]"],
)
def test_text_extraction_matches_langgraph(path: str) -> None:
    doc = {"a": [{"b": "one"}, {"b": 2}], "b": {"c": True}, "x": [{"a": "p", "b": ["q"]}]}
    assert tokenize_path(path) == lg_tokenize_path(path)
    assert get_text_at_path(doc, path) == lg_get_text_at_path(doc, path)


def test_json_equal_is_jsonb_equality() -> None:
    assert json_equal(1, 1.0)
    assert not json_equal(True, 1)
    assert not json_equal(0, False)
    assert json_equal({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]})
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})
    assert not json_equal([1, 2], [2, 1])
    assert not json_equal("1", 1)


def test_cosine_similarity() -> None:
    assert cosine_similarity([1, 0], [2, 0]) == pytest.approx(1.0)
    assert cosine_similarity([1, 0], [0, 3]) == pytest.approx(0.0)
    assert cosine_similarity([1, 0], [-1, 0]) == pytest.approx(-1.0)
    assert cosine_similarity([0, 0], [1, 1]) == 0.0
