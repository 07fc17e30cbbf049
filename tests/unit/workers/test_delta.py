"""A DeltaChannel on the in-memory cluster: task jobs and coordinators rebuild it from history."""

from __future__ import annotations

import operator
import uuid
from collections.abc import Sequence
from typing import Annotated, TypedDict

from graphruntime.channels import DeltaChannel
from graphruntime.checkpoint import InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.graph import END, START, StateGraph
from graphruntime.pregel import Pregel
from graphruntime.types import Command, Send, interrupt
from workers.testing import InlineCluster


def _extend(current: list[str], writes: Sequence[list[str]]) -> list[str]:
    return [*current, *(item for write in writes for item in write)]


class Ledger(TypedDict, total=False):
    log: Annotated[list[str], DeltaChannel(_extend, snapshot_frequency=2)]
    plain: Annotated[list[str], operator.add]
    items: list[str]


def _review() -> Pregel:
    """A fan-out whose tasks each append, then a question, then one more append."""

    def split(state: Ledger) -> list[Send]:
        return [Send("work", item) for item in state["items"]]

    def work(item: str) -> dict[str, list[str]]:
        return {"log": [item], "plain": [item]}

    def ask(state: Ledger) -> dict[str, list[str]]:
        # what this node reads must be the whole ledger, rebuilt from history
        answer = f"{interrupt('ok?')}:{len(state['log'])}"
        return {"log": [answer], "plain": [answer]}

    g = StateGraph(Ledger)
    g.add_node("work", work)
    g.add_node("ask", ask)
    g.add_conditional_edges(START, split)
    g.add_edge("work", "ask")
    g.add_edge("ask", END)
    return g.compile()


def test_a_fan_out_finished_in_any_order_reads_back_in_step_order() -> None:
    cluster = InlineCluster({"review": _review()})
    config: RunnableConfig = {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}
    items = ["a", "b", "c", "d"]
    handle = cluster.client.submit("review", {"items": items, "log": [], "plain": []}, config)
    cluster.deliver(limit=1)  # the coordinator dispatches the fan-out
    # the task jobs finish last first
    cluster.deliver(pick=lambda waiting: waiting[-1])
    handle.wait(0)
    resumed = cluster.client.submit("review", Command(resume="yes"), config)
    cluster.deliver()
    out = resumed.wait(0)

    local = _review().with_checkpointer(InMemorySaver())
    local_config: RunnableConfig = {"configurable": {"thread_id": "local"}}
    local.invoke({"items": items, "log": [], "plain": []}, local_config)
    expected = local.invoke(Command(resume="yes"), local_config)

    assert out == expected
    assert out["log"] == out["plain"] == [*items, "yes:4"]
    graph = _review().with_checkpointer(cluster.saver)
    for state in graph.get_state_history(config):
        assert state.values.get("log", []) == state.values.get("plain", [])


def test_values_read_back_through_the_clusters_saver_match_in_process() -> None:
    cluster = InlineCluster({"review": _review()})
    config: RunnableConfig = {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}
    cluster.run("review", {"items": ["x", "y"], "log": [], "plain": []}, config)
    graph = _review().with_checkpointer(cluster.saver)
    state = graph.get_state(config)
    assert state.values["log"] == state.values["plain"] == ["x", "y"]
    assert state.next == ("ask",)
