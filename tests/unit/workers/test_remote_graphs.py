"""Asking the workers what needs a graph's code: the request round trip, served graphs,
and the error for a graph nobody serves. A small in-memory stand-in for the Redis
commands used (the real round trip runs in tests/e2e/test_api_server.py)."""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from typing import Any

import pytest

from graphruntime.checkpoint import JsonSerializer
from workers.errors import RunTimeoutError, UnknownGraphError
from workers.remote_graphs import (
    GraphRequestListener,
    GraphRequests,
    announce,
    served_graphs,
    unknown_graph,
)


class FakeRedis:
    def __init__(self) -> None:
        self.lists: dict[str, deque[bytes]] = defaultdict(deque)
        self.hashes: dict[str, dict[str, str]] = defaultdict(dict)
        self.cond = threading.Condition()

    def lpush(self, key: str, value: str | bytes) -> None:
        with self.cond:
            self.lists[key].appendleft(value.encode() if isinstance(value, str) else value)
            self.cond.notify_all()

    def brpop(self, keys: list[str], timeout: int) -> tuple[str, bytes] | None:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for key in keys:
                    if self.lists[key]:
                        return key, self.lists[key].pop()
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)

    def expire(self, key: str, seconds: int) -> None:
        pass

    def hset(self, key: str, mapping: dict[str, str]) -> None:
        self.hashes[key].update(mapping)

    def hgetall(self, key: str) -> dict[bytes, bytes]:
        return {k.encode(): v.encode() for k, v in self.hashes[key].items()}

    def pipeline(self) -> Any:
        redis = self

        class Pipe:
            def __init__(self) -> None:
                self.calls: list[Any] = []

            def lpush(self, key: str, value: str) -> None:
                self.calls.append(lambda: redis.lpush(key, value))

            def expire(self, key: str, seconds: int) -> None:
                pass

            def execute(self) -> None:
                for call in self.calls:
                    call()

        return Pipe()


class Worker:
    """Stands in for the worker's own client: answers get_state, fails update_state."""

    def __init__(self) -> None:
        self.saver = type("Saver", (), {"serde": JsonSerializer()})()

    def get_state(self, graph: str, config: Any, subgraphs: bool = False) -> Any:
        return {"graph": graph, "thread": config["configurable"]["thread_id"]}

    def update_state(self, graph: str, config: Any, values: Any, as_node: Any) -> Any:
        raise ValueError("no such node: " + str(as_node))


def test_a_request_is_answered_by_a_worker_serving_the_graph() -> None:
    redis = FakeRedis()
    listener = GraphRequestListener(Worker(), redis, "q", ["approvals"], 0.1)  # type: ignore[arg-type]
    listener.start()
    try:
        requests = GraphRequests(redis, "q", JsonSerializer())
        answer = requests.call(
            "approvals", "get_state", config={"configurable": {"thread_id": "t1"}}
        )
        assert answer == {"graph": "approvals", "thread": "t1"}
        with pytest.raises(ValueError, match="no such node: x"):
            requests.call("approvals", "update_state", config={}, values={}, as_node="x")
        assert requests.served(stale=10) == ["approvals"]
        with pytest.raises(RunTimeoutError, match="No worker answered"):
            requests.call("other", "get_state", timeout=1, config={})
    finally:
        listener.stop()


def test_served_graphs_go_stale() -> None:
    redis = FakeRedis()
    announce(redis, "q", ["a", "b"])
    assert served_graphs(redis, "q", stale=10) == ["a", "b"]
    redis.hashes["q:graphs"]["a"] = str(time.time() - 60)
    assert served_graphs(redis, "q", stale=10) == ["b"]


def test_unknown_graph_suggests_the_nearest_name() -> None:
    error = unknown_graph("aproval", [], ["approval", "billing"])
    assert isinstance(error, UnknownGraphError)
    assert "Did you mean 'approval'?" in str(error)
    assert "served now: approval, billing" in str(error)
    lone = unknown_graph("x", ["a"], None)
    assert "GRAPHRUNTIME_GRAPHS (a)" in str(lone)
