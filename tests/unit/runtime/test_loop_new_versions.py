"""The loop tells the saver exactly which channel versions each checkpoint adds.

A saver that stores a value once per (channel, version) — checkpoint_pg, or
LangGraph's Postgres saver — relies on ``new_versions``; an empty one loses values.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.graph import START, StateGraph


class State(TypedDict, total=False):
    a: int
    log: Annotated[list[str], operator.add]


class RecordingSaver(InMemorySaver):
    def __init__(self) -> None:
        super().__init__()
        self.puts: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        self.puts.append((dict(checkpoint["channel_versions"]), dict(new_versions)))
        return super().put(config, checkpoint, metadata, new_versions)


def test_every_put_lists_the_versions_changed_since_the_previous_put() -> None:
    g = StateGraph(State)
    g.add_node("one", lambda s: {"a": 1, "log": ["one"]})
    g.add_node("two", lambda s: {"log": ["two"]})
    g.add_edge(START, "one")
    g.add_edge("one", "two")
    saver = RecordingSaver()
    g.compile(checkpointer=saver).invoke({"log": []}, {"configurable": {"thread_id": "t"}})
    previous: dict[str, Any] = {}
    for versions, new_versions in saver.puts:
        changed = {k: v for k, v in versions.items() if previous.get(k) != v}
        assert new_versions == changed
        previous = versions
    # the step that ran "one" changed "a" and "log": both must be announced
    assert any({"a", "log"} <= set(nv) for _, nv in saver.puts)
