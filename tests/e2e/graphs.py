"""Graphs the end-to-end tests register with the workers (GRAPHRUNTIME_GRAPHS).

Nodes record which worker process ran them (``pids``), so tests can show that the
tasks of one superstep ran in different processes.
"""

from __future__ import annotations

import operator
import os
import time
from datetime import timedelta
from typing import Annotated, Any, TypedDict

from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.func import entrypoint, task
from graphruntime.graph import END, START, StateGraph
from graphruntime.store.base import BaseStore
from graphruntime.store.memory import InMemoryStore
from graphruntime.types import Command, RetryPolicy, Send, interrupt


class FanState(TypedDict, total=False):
    n: int
    items: Annotated[list[str], operator.add]
    pids: Annotated[list[int], operator.add]
    decision: str


def plan(state: FanState) -> dict[str, Any]:
    return {"items": ["plan"]}


def fan_out(state: FanState) -> list[Send]:
    return [Send("work", {"i": i}) for i in range(state.get("n", 4))]


def work(arg: dict[str, Any]) -> dict[str, Any]:
    time.sleep(float(os.environ.get("E2E_WORK_SECONDS", "0.05")))
    return {"items": [f"w{arg['i']}"], "pids": [os.getpid()]}


def approve(state: FanState) -> dict[str, Any]:
    answer = interrupt({"question": "approve?", "count": len(state.get("items", []))})
    return {"decision": str(answer)}


fan = StateGraph(FanState)
fan.add_node("plan", plan)
fan.add_node("work", work)
fan.add_node("approve", approve)
fan.add_edge(START, "plan")
fan.add_conditional_edges("plan", fan_out)
fan.add_edge("work", "approve")
fan.add_edge("approve", END)
fan_graph = fan.compile()


class ChainState(TypedDict, total=False):
    steps: Annotated[list[str], operator.add]


def _step(name: str) -> Any:
    def node(state: ChainState) -> dict[str, Any]:
        return {"steps": [name]}

    return node


chain = StateGraph(ChainState)
chain.add_sequence([(f"n{i}", _step(f"n{i}")) for i in range(10)])
chain.add_edge(START, "n0")
chain_graph = chain.compile()


def boom(state: ChainState) -> dict[str, Any]:
    raise ValueError("node failed on purpose")


def goto_node(state: ChainState) -> Command[Any]:
    return Command(goto="n1", update={"steps": ["goto"]})


failing = StateGraph(ChainState)
failing.add_node("ok", _step("ok"))
failing.add_node("boom", boom)
failing.add_edge(START, "ok")
failing.add_edge(START, "boom")
failing_graph = failing.compile()


def flaky_node(state: ChainState, config: RunnableConfig) -> dict[str, Any]:
    """Fails its first two attempts; attempts are counted in Redis, across processes."""
    from tests.e2e.fault_graphs import redis_for

    key = f"e2e:flaky:{config['configurable']['thread_id']}"
    client = redis_for(os.environ["REDIS_URL"])
    client.rpush(key, os.getpid())
    if client.llen(key) < 3:
        raise ConnectionError(f"attempt {client.llen(key)} fails on purpose")
    return {"steps": ["flaky"]}


flaky = StateGraph(ChainState)
flaky.add_node(
    "flaky",
    flaky_node,
    retry_policy=RetryPolicy(max_attempts=3, initial_interval=0.2, jitter=False),
)
flaky.add_edge(START, "flaky")
flaky_graph = flaky.compile()


class PairState(TypedDict, total=False):
    note: str
    seen: Annotated[list[str], operator.add]


def _asking(name: str) -> Any:
    def node(state: PairState) -> dict[str, Any]:
        answer = interrupt(name)
        return {"seen": [f"{name}:{answer}:{state.get('note')}"]}

    return node


# two parallel nodes that both interrupt: resuming them is a step of two task jobs
pair = StateGraph(PairState)
pair.add_node("a", _asking("a"))
pair.add_node("b", _asking("b"))
pair.add_edge(START, "a")
pair.add_edge(START, "b")
pair_graph = pair.compile()


class TicketState(TypedDict, total=False):
    team: str
    ticket: str
    within: float
    decision: str


def _ledger() -> Any:
    from tests.e2e.fault_graphs import redis_for

    return redis_for(os.environ["REDIS_URL"])


def ask_ticket(state: TicketState, config: RunnableConfig) -> dict[str, Any]:
    """One approval per thread; each run of the body is counted in Redis."""
    _ledger().incr(f"e2e:ticket:{config['configurable']['thread_id']}")
    question = {"team": state["team"], "ticket": state["ticket"]}
    if "within" in state:
        answer = interrupt(
            question, deadline=timedelta(seconds=state["within"]), default="auto-approved"
        )
    else:
        answer = interrupt(question)
    return {"decision": str(answer)}


ticket = StateGraph(TicketState)
ticket.add_node("ask", ask_ticket)
ticket.add_edge(START, "ask")
ticket_graph = ticket.compile()


def slow_work(arg: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
    """Holds until the test opens the gate (or 20 s), then writes its item."""
    ledger = _ledger()
    thread_id = config["configurable"]["thread_id"]
    ledger.rpush(f"e2e:slow:{thread_id}:started", arg["i"])
    ledger.blpop([f"e2e:slow:{thread_id}:gate"], timeout=20)
    ledger.rpush(f"e2e:slow:{thread_id}:finished", arg["i"])
    return {"items": [f"w{arg['i']}"]}


def join_node(state: FanState, config: RunnableConfig) -> dict[str, Any]:
    _ledger().incr(f"e2e:slow:{config['configurable']['thread_id']}:join")
    return {"decision": "joined"}


slow_fan = StateGraph(FanState)
slow_fan.add_node("plan", plan)
slow_fan.add_node("work", slow_work)
slow_fan.add_node("join", join_node)
slow_fan.add_edge(START, "plan")
slow_fan.add_conditional_edges("plan", fan_out)
slow_fan.add_edge("work", "join")
slow_fan_graph = slow_fan.compile()


def remember(arg: dict[str, Any], store: BaseStore, config: RunnableConfig) -> dict[str, Any]:
    """A task job writes to the store the workers share; the join reads every entry."""
    thread_id = config["configurable"]["thread_id"]
    store.put(("memo", thread_id), f"w{arg['i']}", {"i": arg["i"], "pid": os.getpid()})
    return {"pids": [os.getpid()]}


def recall(state: FanState, store: BaseStore, config: RunnableConfig) -> dict[str, Any]:
    thread_id = config["configurable"]["thread_id"]
    found = sorted(item.key for item in store.search(("memo", thread_id), limit=100))
    return {"items": found}


memo = StateGraph(FanState)
memo.add_node("plan", plan)
memo.add_node("remember", remember)
memo.add_node("recall", recall)
memo.add_edge(START, "plan")
memo.add_conditional_edges("plan", lambda s: [Send("remember", {"i": i}) for i in range(s["n"])])
memo.add_edge("remember", "recall")
# compiled with an in-memory store: the workers give its nodes their shared Postgres one
memo_graph = memo.compile(store=InMemoryStore())


@task
def measure(i: int, config: RunnableConfig) -> dict[str, int]:
    """A call of ``survey``: counted in Redis on the workers (a call run twice shows), slow
    enough that a round of them spreads over both workers."""
    from tests.e2e.fault_graphs import redis_for

    if url := os.environ.get("REDIS_URL"):  # on the workers (not in the test's own run)
        thread_id = config["configurable"]["thread_id"]
        redis_for(url).hincrby(f"e2e:survey:{thread_id}", f"measure({i})", 1)
    time.sleep(0.2)
    return {"i": i, "pid": os.getpid()}


@task
def review(count: int) -> str:
    return str(interrupt({"question": "approve?", "count": count}))


@entrypoint()
def survey(n: int) -> dict[str, Any]:
    """A functional workflow: a round of ``measure`` calls, then a call that waits on a human."""
    results = [f.result() for f in [measure(i) for i in range(n)]]
    decision = review(len(results)).result()
    return {
        "total": sum(r["i"] for r in results),
        "pids": [r["pid"] for r in results],
        "decision": decision,
    }


class SubState(TypedDict, total=False):
    foo: str
    bar: str


def _prepare(state: SubState, config: RunnableConfig) -> dict[str, Any]:
    """Before the subgraph's interrupt: each run of it is counted in Redis."""
    if url := os.environ.get("REDIS_URL"):
        thread_id = config["configurable"]["thread_id"]
        from tests.e2e.fault_graphs import redis_for

        redis_for(url).incr(f"e2e:own-saver:{thread_id}")
    return {"bar": "prepared"}


def _ask(state: SubState) -> dict[str, Any]:
    return {"bar": str(interrupt("answer?"))}


_sub = StateGraph(SubState)
_sub.add_node("prepare", _prepare)
_sub.add_node("ask", _ask)
_sub.add_edge(START, "prepare")
_sub.add_edge("prepare", "ask")
# LangGraph's docs example: a subgraph compiled with a saver of its own, called in a node
own_saver_subgraph = _sub.compile(checkpointer=InMemorySaver())


def _call_subgraph(state: SubState) -> dict[str, Any]:
    out = own_saver_subgraph.invoke({"foo": state["foo"]})
    return {"bar": out["bar"]}


_parent = StateGraph(SubState)
_parent.add_node("call", _call_subgraph)
_parent.add_edge(START, "call")
own_saver_graph = _parent.compile()


GRAPHS = ",".join(
    [
        "ticket=tests.e2e.graphs:ticket_graph",
        "slowfan=tests.e2e.graphs:slow_fan_graph",
        "fan=tests.e2e.graphs:fan_graph",
        "chain=tests.e2e.graphs:chain_graph",
        "failing=tests.e2e.graphs:failing_graph",
        "flaky=tests.e2e.graphs:flaky_graph",
        "pair=tests.e2e.graphs:pair_graph",
        "memo=tests.e2e.graphs:memo_graph",
        "survey=tests.e2e.graphs:survey",
        "ownsaver=tests.e2e.graphs:own_saver_graph",
    ]
)
