"""Contract tests every store must pass.

Subclass :class:`StoreConformance` in a test module and provide a ``make_store``
fixture: a factory taking ``ttl`` (a :class:`TTLConfig` or ``None``) and
``clock`` (a :class:`FakeClock` or ``None``) and returning a fresh store::

    class TestInMemory(StoreConformance):
        @pytest.fixture
        def make_store(self) -> StoreFactory:
            return lambda ttl=None, clock=None: InMemoryStore(ttl=ttl, clock=clock)

Every test writes under its own random root namespace, so a store whose data
outlives one test (a shared database) passes too. TTL tests drive a fake clock;
no test waits for real time to pass, except the sweeper's (bounded polling).
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import pytest

from graphruntime.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    InvalidStoreRequestError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
    TTLConfig,
)

__all__ = ("FakeClock", "StoreConformance", "StoreFactory")


class FakeClock:
    """A clock that moves only when told to (timezone-aware, UTC)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime.now(UTC)
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            return self.now

    def advance(self, *, minutes: float = 0, seconds: float = 0) -> None:
        with self._lock:
            self.now += timedelta(minutes=minutes, seconds=seconds)


class StoreFactory(Protocol):
    def __call__(
        self, ttl: TTLConfig | None = None, clock: FakeClock | None = None
    ) -> BaseStore: ...


def _root() -> str:
    return f"conformance-{uuid.uuid4().hex[:12]}"


def _keys(items: list[Any]) -> list[str]:
    return [item.key for item in items]


class StoreConformance:
    """The store contract as tests; subclasses provide the ``make_store`` fixture."""

    @pytest.fixture
    def make_store(self) -> StoreFactory:
        raise NotImplementedError("subclass StoreConformance and define a make_store fixture")

    @pytest.fixture
    def store(self, make_store: StoreFactory) -> BaseStore:
        return make_store()

    @pytest.fixture
    def clock(self) -> FakeClock:
        return FakeClock()

    @pytest.fixture
    def root(self) -> str:
        return _root()

    # -- get / put / delete ----------------------------------------------------

    def test_put_then_get_returns_the_item(self, store: BaseStore, root: str) -> None:
        store.put((root, "u1"), "prefs", {"theme": "dark", "n": 1})
        item = store.get((root, "u1"), "prefs")
        assert isinstance(item, Item)
        assert item.value == {"theme": "dark", "n": 1}
        assert item.key == "prefs"
        assert item.namespace == (root, "u1")
        assert item.created_at.tzinfo is not None
        assert item.created_at == item.updated_at

    def test_get_of_missing_item_is_none(self, store: BaseStore, root: str) -> None:
        assert store.get((root,), "nope") is None

    def test_put_replaces_value_keeps_created_at(
        self, make_store: StoreFactory, clock: FakeClock, root: str
    ) -> None:
        store = make_store(clock=clock)
        store.put((root,), "k", {"v": 1, "old": True})
        first = store.get((root,), "k")
        clock.advance(seconds=5)
        store.put((root,), "k", {"v": 2})
        second = store.get((root,), "k")
        assert first is not None
        assert second is not None
        assert second.value == {"v": 2}
        assert second.created_at == first.created_at
        assert second.updated_at == first.updated_at + timedelta(seconds=5)

    def test_delete_removes_the_item(self, store: BaseStore, root: str) -> None:
        store.put((root,), "k", {"v": 1})
        store.delete((root,), "k")
        assert store.get((root,), "k") is None
        store.delete((root,), "k")  # deleting nothing is fine

    def test_returned_values_are_copies(self, store: BaseStore, root: str) -> None:
        value: dict[str, Any] = {"list": [1], "nested": {"a": 1}}
        store.put((root,), "k", value)
        value["list"].append(2)
        item = store.get((root,), "k")
        assert item is not None
        item.value["nested"]["a"] = 99
        again = store.get((root,), "k")
        assert again is not None
        assert again.value == {"list": [1], "nested": {"a": 1}}

    def test_json_values_round_trip_exactly(self, store: BaseStore, root: str) -> None:
        value: dict[str, Any] = {
            "int": 1,
            "float": 1.0,
            "small": 1e-7,
            "big": 2**70,
            "bool": True,
            "none": None,
            "text": 'h\u00e9llo \u2603 \U0001f600 "quoted" \\ back',
            "list": [1, "two", [3.5], {"four": False}],
            "empty": {},
            "tuple": (1, 2),
        }
        store.put((root,), "k", value)
        item = store.get((root,), "k")
        assert item is not None
        expected = {**value, "tuple": [1, 2]}
        assert item.value == expected
        for field in ("int", "big"):
            assert type(item.value[field]) is int
        assert type(item.value["float"]) is float
        assert item.value["bool"] is True

    @pytest.mark.parametrize(
        "value",
        [
            {"when": datetime(2024, 1, 1, tzinfo=UTC)},
            {"set": {1, 2}},
            {"nan": math.nan},
            {"inf": [math.inf]},
            {"nul": "a\x00b"},
            {"nul\x00key": 1},
            {"surrogate": "\ud800"},
        ],
        ids=["datetime", "set", "nan", "inf", "nul", "nul-key", "surrogate"],
    )
    def test_non_json_values_are_refused(
        self, store: BaseStore, root: str, value: dict[str, Any]
    ) -> None:
        with pytest.raises(InvalidStoreRequestError):
            store.put((root,), "k", value)
        assert store.get((root,), "k") is None

    def test_value_must_be_a_mapping(self, store: BaseStore, root: str) -> None:
        with pytest.raises(InvalidStoreRequestError, match="dict"):
            store.put((root,), "k", [1, 2])  # type: ignore[arg-type]

    def test_keys_are_strings_and_any_text(self, store: BaseStore, root: str) -> None:
        for key in ("", "a.b", "with space", "\u00fc", "x" * 300):
            store.put((root,), key, {"key": key})
            item = store.get((root,), key)
            assert item is not None
            assert item.value == {"key": key}
        with pytest.raises(InvalidStoreRequestError):
            store.put((root,), "a\x00", {})

    # -- namespaces ------------------------------------------------------------

    @pytest.mark.parametrize(
        "namespace",
        [(), ("langgraph", "x"), ("a.b",), ("",), ("ok", ""), ("a\x00",), ("ok", 1)],
        ids=["empty", "reserved-root", "period", "empty-label", "empty-inner", "nul", "non-str"],
    )
    def test_invalid_namespaces_are_refused_on_put(
        self, store: BaseStore, namespace: tuple[Any, ...]
    ) -> None:
        with pytest.raises(InvalidNamespaceError) as info:
            store.put(namespace, "k", {"v": 1})
        assert isinstance(info.value, ValueError)

    def test_reads_validate_labels(self, store: BaseStore) -> None:
        with pytest.raises(InvalidNamespaceError):
            store.get(("a.b",), "k")
        with pytest.raises(InvalidNamespaceError):
            store.search(("a", ""))
        with pytest.raises(InvalidNamespaceError):
            store.list_namespaces(prefix=("x.y",))
        with pytest.raises(InvalidNamespaceError):
            store.batch([GetOp(("a.b",), "k")])
        with pytest.raises(InvalidNamespaceError):
            store.delete(("a.b",), "k")

    def test_reading_under_langgraph_root_is_allowed(self, store: BaseStore) -> None:
        assert store.get(("langgraph",), "k") is None
        assert store.search(("langgraph",)) == []

    # -- search ------------------------------------------------------------------

    def test_search_scopes_to_the_namespace_prefix(self, store: BaseStore, root: str) -> None:
        store.put((root, "a"), "1", {"v": 1})
        store.put((root, "a", "deep"), "2", {"v": 2})
        store.put((root, "a-b"), "3", {"v": 3})
        store.put((root, "ab"), "4", {"v": 4})
        store.put((root + "x", "a"), "5", {"v": 5})
        assert sorted(_keys(store.search((root, "a")))) == ["1", "2"]
        assert sorted(_keys(store.search((root, "a", "deep")))) == ["2"]
        assert sorted(_keys(store.search((root,)))) == ["1", "2", "3", "4"]
        assert store.search((root, "zzz")) == []
        found = store.search((root, "a", "deep"))[0]
        assert found.namespace == (root, "a", "deep")
        assert found.score is None

    def test_search_orders_newest_first(
        self, make_store: StoreFactory, clock: FakeClock, root: str
    ) -> None:
        store = make_store(clock=clock)
        for key in ("old", "mid", "new"):
            store.put((root,), key, {"k": key})
            clock.advance(seconds=1)
        store.put((root,), "old", {"k": "old", "touched": True})
        assert _keys(store.search((root,))) == ["old", "new", "mid"]

    def test_search_pages_cover_every_item_once(self, store: BaseStore, root: str) -> None:
        store.batch([PutOp((root, f"ns{i % 3}"), f"k{i:02d}", {"i": i}) for i in range(23)])
        seen: list[tuple[tuple[str, ...], str]] = []
        for offset in range(0, 30, 7):
            page = store.search((root,), limit=7, offset=offset)
            seen.extend((item.namespace, item.key) for item in page)
        assert len(seen) == 23
        assert len(set(seen)) == 23
        # One batch shares a timestamp: ties go by namespace, then key.
        assert seen == sorted(seen)
        assert len(store.search((root,))) == 10  # the default limit
        assert store.search((root,), limit=0) == []

    def test_search_refuses_bad_pages(self, store: BaseStore, root: str) -> None:
        with pytest.raises(InvalidStoreRequestError, match="limit"):
            store.search((root,), limit=-1)
        with pytest.raises(InvalidStoreRequestError, match="offset"):
            store.search((root,), offset=-1)

    def test_search_without_index_refuses_query(self, store: BaseStore, root: str) -> None:
        if getattr(store, "index_config", None):
            pytest.skip("this store has a vector index")
        with pytest.raises(InvalidStoreRequestError, match="vector"):
            store.search((root,), query="anything")
        with pytest.raises(InvalidStoreRequestError, match="vector"):
            store.put((root,), "k", {"text": "x"}, index=["text"])
        store.put((root,), "k", {"text": "x"}, index=False)
        assert store.get((root,), "k") is not None

    def test_special_characters_are_literal(self, store: BaseStore, root: str) -> None:
        odd = ["a%", "a_", "a\\", "it's", "x*", "[0]", "a/b", "a b", "{}"]
        for label in odd:
            store.put((root, label), "k", {label: label, "q'\"": 1})
        for label in odd:
            assert [i.namespace for i in store.search((root, label))] == [(root, label)]
            found = store.search((root,), filter={label: label})
            assert [i.namespace for i in found] == [(root, label)]
            assert store.list_namespaces(prefix=(root, label)) == [(root, label)]
        assert len(store.search((root,), filter={"q'\"": 1}, limit=50)) == len(odd)
        # "*" is a wildcard in list_namespaces patterns only, never in search
        assert store.search((root, "*")) == []
        assert len(store.list_namespaces(prefix=(root, "*"))) == len(odd)

    # -- filters -----------------------------------------------------------------

    @pytest.fixture
    def catalog(self, store: BaseStore, root: str) -> tuple[BaseStore, tuple[str, ...]]:
        ns = (root, "catalog")
        store.batch(
            [
                PutOp(
                    ns,
                    "a",
                    {
                        "n": 1,
                        "s": "apple",
                        "flag": True,
                        "tags": ["x", "y"],
                        "meta": {"lang": "en", "rank": 3},
                    },
                ),
                PutOp(
                    ns,
                    "b",
                    {
                        "n": 2.5,
                        "s": "Banana",
                        "flag": False,
                        "tags": ["y"],
                        "meta": {"lang": "de", "rank": 1},
                    },
                ),
                PutOp(ns, "c", {"n": 10, "s": "cherry", "flag": 1, "meta": "plain"}),
                PutOp(ns, "d", {"n": "10", "s": None, "tags": []}),
                PutOp(ns, "e", {"n": 1.0}),
            ]
        )
        return store, ns

    @pytest.mark.parametrize(
        ("spec", "expected"),
        [
            ({"n": 1}, "ae"),
            ({"n": 1.0}, "ae"),
            ({"n": "10"}, "d"),
            ({"n": {"$eq": 10}}, "c"),
            ({"flag": True}, "a"),
            ({"flag": 1}, "c"),
            ({"s": None}, "d"),
            ({"missing": None}, ""),
            ({"tags": ["x", "y"]}, "a"),
            ({"tags": ["y", "x"]}, ""),
            ({"tags": []}, "d"),
            ({"tags": {"0": "y"}}, "b"),
            ({"tags": {"-1": "y"}}, "ab"),
            ({"meta": {"lang": "en"}}, "a"),
            ({"meta": {"rank": {"$gte": 2}}}, "a"),
            ({"meta": {}}, "ab"),
            ({"meta": "plain"}, "c"),
            ({"n": {"$ne": 1}}, "bcd"),
            ({"s": {"$ne": "apple"}}, "bcde"),
            ({"n": {"$gt": 1}}, "bc"),
            ({"n": {"$gte": 1}}, "abce"),
            ({"n": {"$lt": 10}}, "abe"),
            ({"n": {"$lte": 10}}, "abce"),
            ({"n": {"$gt": 1, "$lt": 10}}, "b"),
            ({"n": {"$gt": "1"}}, "d"),
            ({"s": {"$gte": "b"}}, "c"),
            ({"s": {"$lt": "a"}}, "b"),
            ({"n": {"$gte": 1}, "flag": True}, "a"),
            ({"n": {"$gt": 100}}, ""),
        ],
    )
    def test_filters(
        self,
        catalog: tuple[BaseStore, tuple[str, ...]],
        spec: dict[str, Any],
        expected: str,
    ) -> None:
        store, ns = catalog
        assert sorted(_keys(store.search(ns, filter=spec))) == list(expected)

    @pytest.mark.parametrize(
        "spec",
        [
            {"n": {"$in": [1]}},
            {"n": {"$gt": 1, "plain": 2}},
            {"$or": [{"n": 1}]},
            {"n": {"$gt": [1]}},
            {"n": {"$gt": None}},
            {"n": {"$lt": True}},
            {"n": {"$eq": {1, 2}}},
        ],
    )
    def test_bad_filters_are_refused(
        self, store: BaseStore, root: str, spec: dict[str, Any]
    ) -> None:
        with pytest.raises(InvalidStoreRequestError):
            store.search((root,), filter=spec)

    # -- list_namespaces ---------------------------------------------------------

    def test_list_namespaces(self, store: BaseStore, root: str) -> None:
        for ns in [
            (root, "a", "b", "c"),
            (root, "a", "b", "d", "e"),
            (root, "a", "b", "d", "i"),
            (root, "a", "b", "f"),
            (root, "a", "c", "f"),
            (root, "a-b"),
        ]:
            store.put(ns, "k", {"v": 1})
        assert store.list_namespaces(prefix=(root,)) == [
            (root, "a", "b", "c"),
            (root, "a", "b", "d", "e"),
            (root, "a", "b", "d", "i"),
            (root, "a", "b", "f"),
            (root, "a", "c", "f"),
            (root, "a-b"),
        ]
        assert store.list_namespaces(prefix=(root, "a", "b"), max_depth=4) == [
            (root, "a", "b", "c"),
            (root, "a", "b", "d"),
            (root, "a", "b", "f"),
        ]
        assert store.list_namespaces(prefix=(root,), max_depth=2) == [(root, "a"), (root, "a-b")]
        assert store.list_namespaces(prefix=(root,), suffix=("f",)) == [
            (root, "a", "b", "f"),
            (root, "a", "c", "f"),
        ]
        assert store.list_namespaces(prefix=(root, "*", "*", "f")) == [
            (root, "a", "b", "f"),
            (root, "a", "c", "f"),
        ]
        assert store.list_namespaces(prefix=(root,), suffix=("d", "*")) == [
            (root, "a", "b", "d", "e"),
            (root, "a", "b", "d", "i"),
        ]
        assert store.list_namespaces(prefix=(root,), limit=2, offset=1) == [
            (root, "a", "b", "d", "e"),
            (root, "a", "b", "d", "i"),
        ]
        assert store.list_namespaces(prefix=(root, "nothing")) == []

    def test_list_namespaces_merges_conditions(self, store: BaseStore, root: str) -> None:
        store.put((root, "x", "y"), "k", {})
        store.put((root, "x", "z"), "k", {})
        conditions = (
            MatchCondition("prefix", (root, "*", "y")),
            MatchCondition("prefix", ("*", "x")),
        )
        assert store.batch([ListNamespacesOp(conditions)])[0] == [(root, "x", "y")]
        clash = (MatchCondition("prefix", (root, "x")), MatchCondition("prefix", (root, "q")))
        assert store.batch([ListNamespacesOp(clash)])[0] == []

    def test_deleted_namespaces_disappear(self, store: BaseStore, root: str) -> None:
        store.put((root, "gone"), "k", {})
        store.put((root, "kept"), "k", {})
        store.delete((root, "gone"), "k")
        assert store.list_namespaces(prefix=(root,)) == [(root, "kept")]

    def test_list_namespaces_refuses_bad_arguments(self, store: BaseStore, root: str) -> None:
        with pytest.raises(InvalidStoreRequestError):
            store.list_namespaces(prefix=(root,), max_depth=0)
        with pytest.raises(InvalidStoreRequestError):
            store.list_namespaces(prefix=(root,), limit=-1)

    # -- TTL ---------------------------------------------------------------------

    def test_store_supports_ttl(self, store: BaseStore) -> None:
        assert store.supports_ttl

    def test_expired_items_are_invisible(
        self, make_store: StoreFactory, clock: FakeClock, root: str
    ) -> None:
        store = make_store(clock=clock)
        store.put((root, "t"), "short", {"v": 1}, ttl=1)
        store.put((root, "t"), "forever", {"v": 2}, ttl=None)
        clock.advance(seconds=59)
        assert store.get((root, "t"), "short", refresh_ttl=False) is not None
        clock.advance(seconds=1)
        assert store.get((root, "t"), "short") is None
        assert _keys(store.search((root,))) == ["forever"]
        store.delete((root, "t"), "forever")
        assert store.list_namespaces(prefix=(root,)) == []

    def test_reads_refresh_the_ttl(
        self, make_store: StoreFactory, clock: FakeClock, root: str
    ) -> None:
        store = make_store(clock=clock)
        store.put((root,), "got", {"v": 1}, ttl=1)
        store.put((root,), "found", {"v": 2}, ttl=1)
        store.put((root,), "untouched", {"v": 3}, ttl=1)
        clock.advance(seconds=45)
        assert store.get((root,), "got") is not None
        assert store.search((root,), filter={"v": 2}) != []
        assert store.get((root,), "untouched", refresh_ttl=False) is not None
        clock.advance(seconds=45)  # 90 s after the put, 45 s after the reads
        assert store.get((root,), "got", refresh_ttl=False) is not None
        assert store.get((root,), "found", refresh_ttl=False) is not None
        assert store.get((root,), "untouched") is None
        assert store.search((root,), filter={"v": 2}, refresh_ttl=False) != []

    def test_search_without_refresh_leaves_the_ttl(
        self, make_store: StoreFactory, clock: FakeClock, root: str
    ) -> None:
        store = make_store(clock=clock)
        store.put((root,), "k", {"v": 1}, ttl=1)
        clock.advance(seconds=45)
        assert len(store.search((root,), refresh_ttl=False)) == 1
        clock.advance(seconds=30)
        assert store.search((root,)) == []

    def test_ttl_config_defaults(
        self, make_store: StoreFactory, clock: FakeClock, root: str
    ) -> None:
        store = make_store(ttl={"default_ttl": 2, "refresh_on_read": False}, clock=clock)
        store.put((root,), "default", {"v": 1})
        store.put((root,), "never", {"v": 2}, ttl=None)
        clock.advance(minutes=1)
        assert store.get((root,), "default") is not None  # read, but no refresh
        clock.advance(minutes=1)
        assert store.get((root,), "default") is None
        assert store.get((root,), "never") is not None

    def test_omit_expired_false_shows_items_until_swept(
        self, make_store: StoreFactory, clock: FakeClock, root: str
    ) -> None:
        store = make_store(ttl={"omit_expired": False}, clock=clock)
        store.put((root,), "k", {"v": 1}, ttl=1)
        clock.advance(minutes=2)
        assert store.get((root,), "k", refresh_ttl=False) is not None
        assert store.list_namespaces(prefix=(root,)) == [(root,)]
        assert store.sweep_ttl() >= 1  # type: ignore[attr-defined]
        assert store.get((root,), "k") is None

    def test_sweep_deletes_expired_items(
        self, make_store: StoreFactory, clock: FakeClock, root: str
    ) -> None:
        store = make_store(clock=clock)
        store.put((root,), "a", {"v": 1}, ttl=1)
        store.put((root,), "b", {"v": 1}, ttl=10)
        clock.advance(minutes=2)
        swept = store.sweep_ttl()  # type: ignore[attr-defined]
        assert swept >= 1
        clock.advance(minutes=-2)  # items swept are gone, even if time ran back
        assert store.get((root,), "a") is None
        assert store.get((root,), "b") is not None

    def test_put_over_an_expired_item_is_a_new_item(
        self, make_store: StoreFactory, clock: FakeClock, root: str
    ) -> None:
        store = make_store(clock=clock)
        store.put((root,), "k", {"v": 1}, ttl=1)
        clock.advance(minutes=5)
        store.put((root,), "k", {"v": 2})
        item = store.get((root,), "k")
        assert item is not None
        assert item.created_at == item.updated_at == clock()

    @pytest.mark.parametrize("ttl", [0, -1, math.inf, math.nan, "5", True])
    def test_bad_ttls_are_refused(self, store: BaseStore, root: str, ttl: Any) -> None:
        with pytest.raises(InvalidStoreRequestError, match="ttl"):
            store.put((root,), "k", {"v": 1}, ttl=ttl)

    def test_ttl_sweeper_runs_until_stopped(
        self, make_store: StoreFactory, clock: FakeClock, root: str
    ) -> None:
        store = make_store(ttl={"sweep_interval_minutes": 0.001}, clock=clock)
        store.put((root,), "k", {"v": 1}, ttl=1)
        clock.advance(minutes=2)
        future = store.start_ttl_sweeper()  # type: ignore[attr-defined]
        try:
            # Bounded polling: the sweeper runs every 60 ms; wait for its effect.
            deadline = time.monotonic() + 30
            seen = True
            while seen and time.monotonic() < deadline:
                clock.advance(minutes=-2)
                seen = store.get((root,), "k", refresh_ttl=False) is not None
                clock.advance(minutes=2)
                if seen:
                    time.sleep(0.05)
            assert not seen, "the sweeper never deleted the expired item"
        finally:
            assert store.stop_ttl_sweeper(timeout=30)  # type: ignore[attr-defined]
        assert future.done()

    # -- batch -------------------------------------------------------------------

    def test_batch_runs_ops_in_order(self, store: BaseStore, root: str) -> None:
        results = store.batch(
            [
                GetOp((root,), "k"),
                PutOp((root,), "k", {"v": 1}),
                GetOp((root,), "k"),
                PutOp((root,), "k", {"v": 2}),
                PutOp((root,), "j", {"v": 3}),
                PutOp((root,), "j", None),
                SearchOp((root,)),
                ListNamespacesOp((MatchCondition("prefix", (root,)),)),
            ]
        )
        assert results[0] is None
        assert isinstance(results[2], Item)
        assert results[2].value == {"v": 1}
        assert results[1] is None
        assert [item.value for item in results[6]] == [{"v": 2}]  # type: ignore[union-attr]
        assert results[7] == [(root,)]
        assert store.batch([]) == []

    def test_batch_refuses_unknown_ops_before_running_any(
        self, store: BaseStore, root: str
    ) -> None:
        with pytest.raises(InvalidStoreRequestError):
            store.batch([PutOp((root,), "k", {"v": 1}), "not an op"])  # type: ignore[list-item]
        assert store.get((root,), "k") is None

    # -- async -------------------------------------------------------------------

    def test_async_methods(self, store: BaseStore, root: str) -> None:
        async def scenario() -> None:
            await store.aput((root, "x"), "k", {"v": 1})
            await store.aput((root, "y"), "k", {"v": 2})
            item = await store.aget((root, "x"), "k")
            assert item is not None
            assert item.value == {"v": 1}
            found = await store.asearch((root,), filter={"v": {"$gt": 1}})
            assert [i.namespace for i in found] == [(root, "y")]
            assert await store.alist_namespaces(prefix=(root,)) == [(root, "x"), (root, "y")]
            await store.adelete((root, "x"), "k")
            assert await store.aget((root, "x"), "k") is None
            results = await store.abatch([GetOp((root, "y"), "k"), GetOp((root, "x"), "k")])
            assert isinstance(results[0], Item)
            assert results[1] is None

        asyncio.run(scenario())

    # -- concurrency -------------------------------------------------------------

    def test_two_threads_putting(self, store: BaseStore, root: str) -> None:
        errors: list[BaseException] = []
        start = threading.Barrier(2)

        def writer(name: str) -> None:
            try:
                start.wait(timeout=30)
                for i in range(40):
                    store.put((root, "shared"), f"{name}-{i}", {"by": name, "i": i})
                    store.put((root, "shared"), "contested", {"by": name, "i": i})
            except BaseException as exc:  # noqa: BLE001 - reported by the assert below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(n,)) for n in ("left", "right")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not errors
        assert not any(thread.is_alive() for thread in threads)
        found = store.search((root, "shared"), limit=200)
        assert len(found) == 81
        contested = store.get((root, "shared"), "contested")
        assert contested is not None
        assert contested.value in ({"by": "left", "i": 39}, {"by": "right", "i": 39})
