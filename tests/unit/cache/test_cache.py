"""InMemoryCache and CachePolicy / default_cache_key."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
import sys
import threading
from datetime import UTC, datetime

import pytest
from pydantic import BaseModel

from graphruntime.cache import (
    BaseCache,
    CachePolicy,
    InMemoryCache,
    InvalidCacheRequestError,
    default_cache_key,
)
from graphruntime.errors import CheckpointError, GraphRuntimeError


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Model(BaseModel):
    a: int = 0
    b: str = ""


def test_get_set_round_trip_through_the_serde() -> None:
    cache: InMemoryCache[object] = InMemoryCache()
    value = {"when": datetime(2024, 1, 2, tzinfo=UTC), "pt": Point(1, 2), "s": {1, 2}}
    cache.set({(("node", "a"), "k1"): (value, None)})
    got = cache.get([(("node", "a"), "k1"), (("node", "a"), "missing")])
    assert got == {(("node", "a"), "k1"): value}
    hit = got[(("node", "a"), "k1")]
    assert hit is not value  # stored serialized: a hit is a copy
    assert isinstance(hit, dict)
    assert isinstance(hit["pt"], Point)


def test_values_the_serde_refuses_are_refused() -> None:
    cache: InMemoryCache[object] = InMemoryCache()
    with pytest.raises(CheckpointError):
        cache.set({(("n",), "k"): (object(), None)})
    assert cache.get([(("n",), "k")]) == {}


def test_ttl_in_seconds_expires_entries() -> None:
    clock = FakeMonotonic()
    cache: InMemoryCache[int] = InMemoryCache(clock=clock)
    cache.set({(("n",), "short"): (1, 10), (("n",), "long"): (2, None)})
    clock.now += 9.9
    assert set(cache.get([(("n",), "short"), (("n",), "long")])) == {
        (("n",), "short"),
        (("n",), "long"),
    }
    clock.now += 0.1
    assert cache.get([(("n",), "short"), (("n",), "long")]) == {(("n",), "long"): 2}


@pytest.mark.parametrize("ttl", [0, -5, float("inf"), "10", True])
def test_bad_ttls_are_refused(ttl: object) -> None:
    cache: InMemoryCache[int] = InMemoryCache()
    with pytest.raises(InvalidCacheRequestError) as info:
        cache.set({(("n",), "k"): (1, ttl)})  # type: ignore[dict-item]
    assert isinstance(info.value, GraphRuntimeError)
    assert isinstance(info.value, ValueError)


def test_clear_by_namespace_or_all() -> None:
    cache: InMemoryCache[int] = InMemoryCache()
    keys = [(("a",), "k"), (("a", "sub"), "k"), (("b",), "k")]
    cache.set({key: (i, None) for i, key in enumerate(keys)})
    cache.clear([("a",)])
    assert set(cache.get(keys)) == {(("a", "sub"), "k"), (("b",), "k")}
    cache.clear()
    assert cache.get(keys) == {}


def test_async_twins() -> None:
    cache: InMemoryCache[int] = InMemoryCache()

    async def scenario() -> None:
        await cache.aset({(("n",), "k"): (7, None)})
        assert await cache.aget([(("n",), "k")]) == {(("n",), "k"): 7}
        await cache.aclear([("n",)])
        assert await cache.aget([(("n",), "k")]) == {}

    asyncio.run(scenario())


def test_concurrent_sets() -> None:
    cache: InMemoryCache[int] = InMemoryCache()

    def writer(base: int) -> None:
        for i in range(200):
            cache.set({(("n",), f"{base}-{i}"): (i, None)})

    threads = [threading.Thread(target=writer, args=(b,)) for b in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    keys = [(("n",), f"{b}-{i}") for b in (1, 2) for i in range(200)]
    assert len(cache.get(keys)) == 400


def test_in_memory_cache_is_a_base_cache() -> None:
    assert isinstance(InMemoryCache(), BaseCache)


# -- CachePolicy / default_cache_key -------------------------------------------


def test_cache_policy_defaults() -> None:
    policy: CachePolicy = CachePolicy()  # type: ignore[type-arg]
    assert policy.ttl is None
    assert policy.key_func is default_cache_key
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.ttl = 5  # type: ignore[misc]
    assert CachePolicy(ttl=60).ttl == 60
    with pytest.raises(InvalidCacheRequestError):
        CachePolicy(ttl=0)
    with pytest.raises(TypeError):
        CachePolicy(key_func="not callable")  # type: ignore[type-var]


def test_default_cache_key_ignores_dict_and_set_order() -> None:
    assert default_cache_key({"a": 1, "b": 2}) == default_cache_key({"b": 2, "a": 1})
    assert default_cache_key({3, 1, 2}) == default_cache_key({2, 3, 1})
    assert default_cache_key({1: "x", 2: "y"}) == default_cache_key({2: "y", 1: "x"})
    assert default_cache_key(Model(b="x", a=1)) == default_cache_key(Model(a=1, b="x"))


def test_default_cache_key_tells_values_and_types_apart() -> None:
    keys = {
        default_cache_key(v)
        for v in (1, 1.0, True, "1", (1,), [1], {"a": 1}, {"a": 2}, None, Point(1, 2))
    }
    assert len(keys) == 10
    assert default_cache_key(1, 2) != default_cache_key(2, 1)
    assert default_cache_key(x=1) != default_cache_key(1)


def test_default_cache_key_is_stable_across_processes() -> None:
    value = "{'s': {'x', 'y', 'z', 'w'}, 'f': frozenset({'p', 'q'}), 'd': {'b': 1, 'a': 2}}"
    script = f"from graphruntime.cache import default_cache_key; print(default_cache_key({value}))"
    keys = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", script],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        keys.add(out.stdout.strip())
    assert len(keys) == 1
    assert len(keys.pop()) == 32


def test_default_cache_key_refuses_what_the_serde_cannot_encode() -> None:
    with pytest.raises(CheckpointError):
        default_cache_key(object())
