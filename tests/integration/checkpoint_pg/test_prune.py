"""prune(thread, keep_last=N) keeps exactly what it promises, and the runtime still works."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import psycopg
import pytest

from checkpoint_pg import PostgresSaver, PruneResult
from graphruntime.graph import END, START, StateGraph
from graphruntime.types import Command, interrupt
from tests.integration.checkpoint_pg.helpers import child, config, count_rows, meta, thread

pytestmark = pytest.mark.integration


@pytest.fixture
def saver(pg_conn: psycopg.Connection[Any]) -> PostgresSaver:
    return PostgresSaver(pg_conn)


def _blob_keys(conn: psycopg.Connection[Any], thread_id: str) -> set[tuple[str, str]]:
    rows = conn.execute(
        "SELECT checkpoint_ns, channel FROM graphruntime_blobs WHERE thread_id = %s", (thread_id,)
    ).fetchall()
    return {(r["checkpoint_ns"], r["channel"]) for r in rows}


def test_prune_keeps_the_newest_per_namespace_with_their_writes_and_blobs(
    saver: PostgresSaver, pg_conn: psycopg.Connection[Any]
) -> None:
    t = thread()
    # Root: 6 checkpoints. "kept_big" is written once (step 0) and used by all;
    # "old_big" changes at steps 0 and 1 only; "new_big" changes at step 5.
    cfg, prev, roots = config(t), None, []
    for step in range(6):
        values: dict[str, Any] = {"n": step}
        if step == 0:
            values |= {"kept_big": "k" * 600, "old_big": "o0" * 300}
        if step == 1:
            values["old_big"] = "o1" * 300
        if step == 5:
            values["new_big"] = "n" * 600
        prev, versions = child(saver, prev, values, step=step)
        cfg = saver.put(cfg, prev, meta(step), versions)
        saver.put_writes(cfg, [("n", step), ("big", "w" * 600)], task_id=f"task-{step}")
        roots.append(cfg)
    # A subgraph call under an old root checkpoint (goes), one under the newest
    # (stays, pruned to 2), and a persistent namespace without a task id.
    calls = {"call:old": roots[1], "call:new": roots[5], "persistent": roots[0]}
    for ns, root in calls.items():
        sub_cfg, sub_prev = config(t, ns), None
        for step in range(3):
            parents = {"": root["configurable"]["checkpoint_id"]}
            sub_prev, versions = child(saver, sub_prev, {"v": "s" * 600 + str(step)}, step=step)
            sub_cfg = saver.put(sub_cfg, sub_prev, meta(step, parents=parents), versions)
            saver.put_writes(sub_cfg, [("v", step)], task_id="sub-task")
    other = thread()
    keep_cp, versions = child(saver, None, {"big": "x" * 600}, step=-1)
    saver.put(config(other), keep_cp, meta(-1), versions)

    result = saver.prune(t, keep_last=2)

    listed = {ns: [c.config for c in saver.list(config(t, ns))] for ns in ["", *calls]}
    assert listed[""] == [roots[5], roots[4]]
    assert listed["call:old"] == []
    assert len(listed["call:new"]) == 2
    assert len(listed["persistent"]) == 2
    assert count_rows(pg_conn, "checkpoints", t) == 6
    # Writes of kept checkpoints only; blobs of kept checkpoints only.
    assert count_rows(pg_conn, "writes", t) == 2 * 2 + 2 + 2
    assert _blob_keys(pg_conn, t) == {
        ("", "kept_big"),
        ("", "old_big"),  # version 1 is still used by the kept checkpoints
        ("", "new_big"),
        ("call:new", "v"),
        ("persistent", "v"),
    }
    assert count_rows(pg_conn, "blobs", t) == 3 + 2 + 2
    # Deleted: root 4 checkpoints (8 writes, old_big's first version), call:old 3 (3 writes,
    # 3 blobs), call:new and persistent 1 each (1 write, 1 blob each).
    assert result == PruneResult(
        checkpoints=4 + 3 + 1 + 1, writes=8 + 3 + 1 + 1, blobs=1 + 3 + 1 + 1
    )

    newest = saver.get_tuple(config(t))
    assert newest is not None
    assert newest.checkpoint["channel_values"] == {
        "n": 5,
        "kept_big": "k" * 600,
        "old_big": "o1" * 300,
        "new_big": "n" * 600,
    }
    assert newest.pending_writes == [("task-5", "n", 5), ("task-5", "big", "w" * 600)]
    oldest_kept = saver.get_tuple(roots[4])
    assert oldest_kept is not None
    assert oldest_kept.parent_config is None  # its parent is gone: history ends here
    assert count_rows(pg_conn, "checkpoints", other) == 1
    # Pruning again changes nothing.
    assert saver.prune(t, keep_last=2) == PruneResult(0, 0, 0)


def test_keep_last_must_be_positive(saver: PostgresSaver) -> None:
    with pytest.raises(ValueError, match="delete_thread"):
        saver.prune(thread(), keep_last=0)
    with pytest.raises(ValueError, match="strategy"):
        saver.prune(thread(), strategy="everything")  # type: ignore[arg-type]


def test_langgraph_call_shape(saver: PostgresSaver, pg_conn: psycopg.Connection[Any]) -> None:
    threads = [thread(), thread()]
    for t in threads:
        cfg, prev = config(t), None
        for step in range(3):
            prev, versions = child(saver, prev, {"big": "b" * 600 + str(step)}, step=step)
            cfg = saver.put(cfg, prev, meta(step), versions)
    assert saver.prune(threads) == PruneResult(checkpoints=4, writes=0, blobs=4)
    assert [count_rows(pg_conn, "checkpoints", t) for t in threads] == [1, 1]
    assert saver.prune(threads, strategy="delete") == PruneResult(2, 0, 2)
    assert [count_rows(pg_conn, "checkpoints", t) for t in threads] == [0, 0]


class Chain(TypedDict):
    n: int
    log: Annotated[list[str], operator.add]
    answer: str


def _graph(saver: PostgresSaver) -> Any:
    def step(name: str) -> Any:
        def node(state: Chain) -> dict[str, Any]:
            return {"n": state["n"] + 1, "log": [name * 50]}

        return node

    def ask(state: Chain) -> dict[str, Any]:
        return {"answer": interrupt({"n": state["n"]})}

    g = StateGraph(Chain)
    g.add_node("a", step("a"))
    g.add_node("b", step("b"))
    g.add_node("ask", ask)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "ask")
    g.add_edge("ask", END)
    return g.compile(checkpointer=saver)


def test_runtime_state_and_history_survive_pruning(saver: PostgresSaver) -> None:
    app = _graph(saver)
    cfg = {"configurable": {"thread_id": thread()}}
    app.invoke({"n": 0, "log": [], "answer": ""}, cfg)
    app.invoke(Command(resume="first"), cfg)
    app.invoke({"n": 100, "log": [], "answer": ""}, cfg)  # a second run, paused again
    before = app.get_state(cfg)
    assert before.next == ("ask",)
    assert len(list(app.get_state_history(cfg))) > 3

    saver.prune(cfg["configurable"]["thread_id"], keep_last=3)

    after = app.get_state(cfg)
    assert after.values == before.values
    assert after.next == before.next
    assert [i.value for i in after.interrupts] == [i.value for i in before.interrupts]
    history = list(app.get_state_history(cfg))
    assert len(history) == 3
    assert history[0].config == after.config
    assert history[-1].parent_config is None
    # The paused run resumes from what was kept.
    done = app.invoke(Command(resume="second"), cfg)
    assert done["answer"] == "second"
    assert done["n"] == 102
    assert done["log"] == before.values["log"]
