"""``stream_mode="messages"`` on the workers (the in-memory cluster): a chat model's tokens
are stored as the run's events while its node still runs, inline on the coordinator and
in task jobs alike, and a client streaming the run gets what in-process ``stream`` gives."""

from __future__ import annotations

import operator
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langchain_core", reason="stream_mode='messages' needs langchain-core")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from graphruntime.checkpoint import JsonSerializer
from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.graph import START, StateGraph
from graphruntime.graph.message import add_messages
from graphruntime.pregel import Pregel
from graphruntime.pregel.driver import StreamSink
from graphruntime.types import RetryPolicy
from workers._live_events import LiveEvents
from workers.store import InMemoryRunStore, RunPayload, RunStore
from workers.testing import InlineCluster

MakeCluster = Callable[..., InlineCluster]

TEXT = "the quick brown fox jumps"
WAIT = 10.0  # seconds a test's model waits for what it looks for (then it says so)


class State(TypedDict, total=False):
    messages: Annotated[list[BaseMessage], add_messages]
    log: Annotated[list[str], operator.add]


class Model(GenericFakeChatModel):
    """Streams ``text`` word by word (each call the same); ``pause(i)`` runs after token i
    was reported, while the model is still streaming."""

    messages: Any = None
    text: str = TEXT
    pause: Any = None

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self.text))])

    def _stream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Iterator[ChatGenerationChunk]:
        for i, chunk in enumerate(super()._stream(messages, stop, run_manager, **kw)):
            yield chunk
            if self.pause is not None:
                self.pause(i)


def _caller(name: str, model: Model) -> Callable[[State], dict[str, Any]]:
    def node(state: State) -> dict[str, Any]:
        return {"messages": [model.invoke(state.get("messages", []))]}

    return node


def _one(model: Model, **kwargs: Any) -> Pregel:
    g = StateGraph(State).add_node("ask", _caller("ask", model), **kwargs)
    return g.add_edge(START, "ask").compile()


def _two(model: Model) -> Pregel:
    g = StateGraph(State)
    g.add_node("a", _caller("a", model)).add_node("b", _caller("b", model))
    return g.add_edge(START, "a").add_edge(START, "b").compile()


@pytest.fixture
def make_cluster() -> MakeCluster:
    """In-memory clusters; tests/integration runs the same tests on Postgres."""
    return InlineCluster


def _thread() -> RunnableConfig:
    return {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}


def _stored_tokens(store: RunStore, run_id: str) -> list[str]:
    return [
        str(e.payload[0].content) for e in store.events_after(run_id, 0) if e.mode == "messages"
    ]


class StoreWatch:
    """The model's pause: after its second token, waits until the run's store holds a
    messages event (it cannot while the node runs unless tokens are stored live)."""

    def __init__(self, cluster: InlineCluster) -> None:
        self.cluster = cluster
        self.run_ids: list[str] = []
        self.seen_mid_stream: list[list[str]] = []

    def __call__(self, i: int) -> None:
        if i != 2:
            return
        done = threading.Event()
        for _ in range(int(WAIT / 0.01)):
            tokens = [t for r in self.run_ids for t in _stored_tokens(self.cluster.store, r)]
            if tokens:
                break
            done.wait(0.01)
        self.seen_mid_stream.append(tokens)


def _watched_run(
    make_cluster: MakeCluster, build: Callable[[Model], Pregel], mode: str
) -> tuple[InlineCluster, StoreWatch, str]:
    """A run whose models look into the store mid-reply, delivered to its end."""
    model = Model()
    cluster = make_cluster({"g": build(model)})
    watch = model.pause = StoreWatch(cluster)
    handle = cluster.client.submit("g", {"messages": []}, _thread(), stream_mode=mode)
    watch.run_ids.append(handle.run_id)
    cluster.deliver()
    assert handle.status() == "success"
    return cluster, watch, handle.run_id


def test_a_nodes_tokens_are_stored_while_it_runs_inline_on_the_coordinator(
    make_cluster: MakeCluster,
) -> None:
    cluster, watch, run_id = _watched_run(make_cluster, _one, "messages")
    [mid] = watch.seen_mid_stream
    assert mid
    assert TEXT.startswith("".join(mid))
    assert "".join(_stored_tokens(cluster.store, run_id)) == TEXT


def test_task_jobs_store_their_tokens_while_their_nodes_run(make_cluster: MakeCluster) -> None:
    cluster, watch, run_id = _watched_run(make_cluster, _two, "messages")
    assert [job.kind for job in cluster.broker.sent].count("execute") == 2  # ran as jobs
    assert len(watch.seen_mid_stream) == 2
    assert all(watch.seen_mid_stream)
    assert "".join(_stored_tokens(cluster.store, run_id)) == TEXT * 2


def test_a_run_that_streams_no_tokens_stores_nothing_while_nodes_run(
    make_cluster: MakeCluster,
) -> None:
    cluster, watch, run_id = _watched_run(make_cluster, _one, "updates")
    assert watch.seen_mid_stream == []  # the model did not stream: nobody asked for tokens
    modes = {e.mode for e in cluster.store.events_after(run_id, 0)}
    assert "updates" in modes
    assert "messages" not in modes


@contextmanager
def delivering(cluster: InlineCluster) -> Iterator[None]:
    """Deliver the cluster's jobs from a thread of its own, so the test's thread can read
    a run's stream with ``client.stream`` as a client would."""
    stop = threading.Event()
    failed: list[BaseException] = []

    def deliver() -> None:
        try:
            while not stop.is_set():
                if not cluster.deliver():
                    stop.wait(0.005)
        except BaseException as exc:  # noqa: BLE001 - the test's thread reports it
            failed.append(exc)

    worker = threading.Thread(target=deliver, daemon=True)
    worker.start()
    try:
        yield
    finally:
        stop.set()
        worker.join(WAIT)
    assert not failed, failed


def _shape(chunks: Sequence[Any]) -> list[Any]:
    """Stream items without what differs between two runs of one graph: the thread, the
    run and the tasks' ids (in checkpoint namespaces)."""
    volatile = {"thread_id", "run_id", "checkpoint_ns", "langgraph_checkpoint_ns"}
    shaped = []
    for item in chunks:
        *ns, (message, metadata) = item if isinstance(item[0], tuple) else ((), item)
        kept = {k: v for k, v in metadata.items() if k not in volatile}
        names = tuple(n.split(":")[0] for n in ns[0]) if ns and ns[0] else ()
        shaped.append((names, type(message).__name__, message.content, message.id, kept))
    return shaped


def _in_process(graph: Pregel, **kwargs: Any) -> list[Any]:
    local = graph.with_checkpointer(InMemorySaver())
    return list(local.stream({"messages": []}, _thread(), stream_mode="messages", **kwargs))


def _ids_dropped(chunks: list[Any]) -> list[Any]:
    return [(*c[:3], c[4]) for c in chunks]


def test_a_client_streams_the_chunks_in_process_stream_gives(make_cluster: MakeCluster) -> None:
    graph = _one(Model())
    cluster = make_cluster({"g": graph})
    with delivering(cluster):
        streamed = list(
            cluster.client.stream("g", {"messages": []}, _thread(), stream_mode="messages")
        )
    assert all(isinstance(m, AIMessageChunk) and isinstance(md, dict) for m, md in streamed)
    assert len(streamed) == len(TEXT.split(" ")) * 2 - 1  # words and the spaces between
    assert _ids_dropped(_shape(streamed)) == _ids_dropped(_shape(_in_process(graph)))
    metadata = streamed[0][1]
    assert metadata["langgraph_node"] == "ask"
    assert metadata["langgraph_step"] == 1
    assert metadata["langgraph_path"] == ("__pregel_pull", "ask")  # a tuple, as in-process


class Outer(TypedDict, total=False):
    messages: Annotated[list[BaseMessage], add_messages]


def test_a_subgraphs_tokens_stream_with_its_namespace_when_asked(make_cluster: MakeCluster) -> None:
    inner = _one(Model())
    outer = StateGraph(Outer).add_node("agent", inner).add_edge(START, "agent").compile()
    cluster = make_cluster({"g": outer})
    with delivering(cluster):
        nested = list(
            cluster.client.stream(
                "g", {"messages": []}, _thread(), stream_mode="messages", subgraphs=True
            )
        )
        flat = list(cluster.client.stream("g", {"messages": []}, _thread(), stream_mode="messages"))
    assert [ns[0].split(":")[0] for ns, _ in nested] == ["agent"] * len(nested)
    assert _ids_dropped(_shape(nested)) == _ids_dropped(_shape(_in_process(outer, subgraphs=True)))
    # without subgraphs=True: not the subgraph's tokens, only the message its node returned
    assert _ids_dropped(_shape(flat)) == _ids_dropped(_shape(_in_process(outer)))
    assert [type(m).__name__ for m, _ in flat] == ["AIMessage"]


def test_a_retried_attempts_tokens_stream_before_the_retrys_as_in_process(
    make_cluster: MakeCluster,
) -> None:
    attempts: dict[str, int] = {}

    def flaky(state: State, config: RunnableConfig) -> dict[str, Any]:
        thread = config["configurable"]["thread_id"]
        attempts[thread] = attempts.get(thread, 0) + 1
        text = "first try fails" if attempts[thread] == 1 else "second try works"
        reply = Model(text=text).invoke([])
        if attempts[thread] == 1:
            raise ConnectionError("fails on purpose")
        return {"messages": [reply]}

    policy = RetryPolicy(max_attempts=2, initial_interval=0.0, jitter=False)
    builder = StateGraph(State).add_node("ask", flaky, retry_policy=policy)
    graph = builder.add_edge(START, "ask").compile()
    cluster = make_cluster({"g": graph})
    with delivering(cluster):
        streamed = list(
            cluster.client.stream("g", {"messages": []}, _thread(), stream_mode="messages")
        )
    local = [str(m.content) for m, _ in _in_process(graph)]
    assert "".join(local) == "first try failssecond try works"
    assert [str(m.content) for m, _ in streamed] == local


STREAMED: Any = SimpleNamespace(run_id="r", payload=RunPayload(stream_modes=("messages",)))
INVOKED: Any = SimpleNamespace(run_id="r", payload=RunPayload())


class Failing(InMemoryRunStore):
    """A store whose live batches fail while ``down`` is set (an outage)."""

    down = True

    def append_events(self, run_id: str, chunks: Any) -> None:
        if self.down:
            raise ConnectionError("store away")
        super().append_events(run_id, chunks)


def test_chunks_the_store_refused_go_back_to_the_sink_in_order() -> None:
    store = Failing(JsonSerializer())
    sink = StreamSink({"messages"}, False)
    with LiveEvents(store, STREAMED, sink, interval=0.001):
        sink.put((), "messages", "a")
        sink.put((), "messages", "b")
    assert list(sink.drain()) == [((), "messages", "a"), ((), "messages", "b")]
    store.down = False
    with LiveEvents(store, STREAMED, sink, interval=0.001):
        sink.put((), "messages", "c")
    assert list(sink.drain()) == []
    assert [e.payload for e in store.events_after("r", 0)] == ["c"]


@pytest.mark.parametrize(
    ("run", "sink"),
    [
        (STREAMED, StreamSink({"updates", "values"}, False)),  # nothing comes mid-node
        (INVOKED, StreamSink({"updates", "values"}, True)),  # nobody reads it
    ],
)
def test_a_sink_nobody_reads_live_is_left_alone(run: Any, sink: StreamSink) -> None:
    store = InMemoryRunStore(JsonSerializer())
    with LiveEvents(store, run, sink, interval=0.001) as live:
        sink.put((), "updates", {"a": 1})
        assert live._thread is None
    assert list(sink.drain()) == [((), "updates", {"a": 1})]
    assert store.events_after("r", 0) == []


def test_tool_calls_stream_in_tools_mode_as_in_process(make_cluster: MakeCluster) -> None:
    from langchain_core.tools import tool

    from graphruntime.prebuilt import ToolNode

    @tool
    def shout(text: str) -> str:
        """Say it louder."""
        return text.upper()

    call = {"name": "shout", "args": {"text": "hi"}, "id": "call-1"}
    graph = StateGraph(State).add_node("tools", ToolNode([shout])).add_edge(START, "tools")
    compiled = graph.compile()
    start = {"messages": [AIMessage("", tool_calls=[call], id="ai-1")]}
    cluster = make_cluster({"g": compiled})
    with delivering(cluster):
        streamed = list(cluster.client.stream("g", start, _thread(), stream_mode="tools"))
    local = compiled.with_checkpointer(InMemorySaver())
    tools: Any = "tools"  # a mode of LangGraph's that its StreamMode literal lacks
    expected = list(local.stream(start, _thread(), stream_mode=tools))
    assert [e["event"] for e in streamed] == ["tool-started", "tool-finished"]

    def shaped(events: list[Any]) -> list[Any]:  # the tool message's id is random
        return [
            {**e, "output": e["output"].model_copy(update={"id": None})} if "output" in e else e
            for e in events
        ]

    assert shaped(streamed) == shaped(expected)
    assert streamed[1]["output"].content == "HI"
