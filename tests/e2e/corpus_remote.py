"""The test side of the distributed corpus: a ``remote`` runtime for the harness.

Its ``StateGraph`` builds the real graph locally (builder and compile errors raise
exactly as in-process), but its k-th ``compile()`` returns a :class:`RemoteGraph`
bound to ``corpus.<scenario>.<k>``, which the workers loaded from
:mod:`tests.e2e.corpus_graphs`. Every call goes through the session's
:class:`~workers.client.GraphClient`; when it returns (or raises), the ledger rows
the nodes wrote on the workers are merged into the :class:`RemoteRecorder`'s
transcript, so they precede whatever the scenario records about the call's result,
as in-process.

A graph compiled without a checkpointer has no state between calls: each of its
runs gets a fresh throwaway thread on the workers, and its state API raises locally
exactly as in-process.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from tests.differential.observe import normalize
from tests.differential.registry import Scenario
from tests.differential.runtimes import Runtime, load_runtime
from tests.e2e import corpus_graphs
from tests.e2e.corpus_support import (
    SERDE,
    GraphSession,
    TaggedRecorder,
    db,
    graph_signature,
    pull_cells,
    push_cells,
    tracking_functional,
    tracking_state_graph,
)
from workers.client import GraphClient

# How long each remote call took (for the suite's timing report).
CALL_SECONDS: list[float] = []

# Per remote call: a hung run fails its scenario instead of the whole suite.
REMOTE_TIMEOUT = 30.0  # generous: CI machines are slow; a hung run still fails the test


class RemoteRecorder(TaggedRecorder):
    """A Recorder whose node-side observations come from the workers' ledger."""

    def __init__(self, scenario: str) -> None:
        super().__init__()
        self.scenario = scenario
        self._seen: set[int] = set()
        self.extra_threads: list[str] = []
        self.rows: list[dict[str, Any]] = []  # every ledger row merged, for tests

    def throwaway_thread(self) -> str:
        """A fresh thread for a run of a graph that has no checkpointer."""
        thread_id = f"nocp-{len(self.extra_threads) + 1}-{self.tag}"
        self.extra_threads.append(thread_id)
        return thread_id

    def sync(self) -> None:
        """Merge the ledger rows of this run's threads not merged yet, in ledger order."""
        threads = [*self.thread_ids, *self.extra_threads]
        if not threads:
            return
        with db() as d:
            rows = d.execute(
                "SELECT seq, thread_id, kind, label, payload_type, payload, pid, node, step,"
                " checkpoint_ns FROM e2e_ledger WHERE thread_id = ANY(%s) ORDER BY seq",
                (threads,),
            )
        for seq, thread_id, kind, label, ptype, payload, pid, node, step, ns in rows:
            if seq in self._seen:
                continue
            self._seen.add(seq)
            self.rows.append(
                {
                    "seq": seq,
                    "thread_id": thread_id,
                    "kind": kind,
                    "label": label,
                    "pid": pid,
                    "node": node,
                    "step": step,
                    "checkpoint_ns": ns,
                }
            )
            if kind == "count":
                with self._lock:
                    self.counts[label] += 1
            else:
                value = SERDE.loads_typed((ptype, bytes(payload)))
                self.entries.append((label, normalize(value, self.roles)))

    def finish(self) -> list[tuple[str, Any]]:
        self.sync()
        return super().finish()


class _Call:
    """Around one remote call: push shared cells first; afterwards pull them, merge the ledger."""

    def __init__(self, session: RemoteSession) -> None:
        self.session = session

    def __enter__(self) -> None:
        self.started = time.monotonic()
        push_cells(self.session.rec.tag, self.session.graphs.cells)

    def __exit__(self, *exc: object) -> None:
        pull_cells(self.session.rec.tag, self.session.graphs.cells)
        self.session.rec.sync()
        CALL_SECONDS.append(time.monotonic() - self.started)


class RemoteSession:
    """One scenario run on the workers: its recorder, its graphs, the client."""

    def __init__(self, client: GraphClient, scenario: str) -> None:
        self.client = client
        self.scenario = scenario
        self.rec = RemoteRecorder(scenario)
        self.graphs = GraphSession(scenario)
        self.expected = corpus_graphs.SIGNATURES.get(scenario)
        if self.expected is None:
            raise LookupError(f"scenario {scenario!r} was not captured by corpus_graphs")

    def call(self) -> _Call:
        return _Call(self)

    def runtime(self) -> Runtime:
        base = load_runtime("graphruntime")

        def on_compile(local: Any, kwargs: dict[str, Any]) -> RemoteGraph:
            k = len(self.graphs.graphs)
            self.graphs.graphs.append(local)
            assert self.expected is not None
            if k >= len(self.expected) or graph_signature(local) != self.expected[k]:
                raise AssertionError(
                    f"{self.scenario}: compile #{k} built {graph_signature(local)}, but the "
                    f"workers captured {self.expected[k] if k < len(self.expected) else None}"
                )
            saver = kwargs.get("checkpointer", kwargs["args"][0] if kwargs["args"] else None)
            persistent = saver is not None and saver is not False
            name = corpus_graphs.graph_name(self.scenario, k)
            if kwargs.get("cache") is not None:
                # the scenario's new cache starts empty; the workers' is shared and lasting
                self.client.clear_cache(name)
            return RemoteGraph(self, name, local, persistent)

        graph_cls = tracking_state_graph(base.StateGraph, self.graphs, on_compile, _unwrap)
        entrypoint, task = tracking_functional(base.entrypoint, base.task, self.graphs, on_compile)
        return dataclasses.replace(
            base, name="remote", StateGraph=graph_cls, entrypoint=entrypoint, task=task
        )


def _without_run_id(snapshot: Any) -> Any:
    """A snapshot without the ``run_id`` key the workers add to checkpoint metadata.

    The coordinator stamps each checkpoint with the id of the run that wrote it (it
    recognizes a redelivered start by it, coordinator._start); that bookkeeping key is
    the one deliberate difference from in-process metadata, so the proxy drops it.
    """
    if snapshot is None or type(snapshot).__name__ != "StateSnapshot":
        return snapshot
    metadata = snapshot.metadata
    if isinstance(metadata, dict) and "run_id" in metadata:
        metadata = {k: v for k, v in metadata.items() if k != "run_id"}
    tasks = tuple(t._replace(state=_without_run_id(t.state)) for t in snapshot.tasks)
    return snapshot._replace(metadata=metadata, tasks=tasks)


def _chunk_without_run_id(chunk: Any) -> Any:
    """A stream chunk whose checkpoint and task payloads lose the same ``run_id`` key
    (the checkpoints, tasks and debug modes show the run's metadata)."""
    if isinstance(chunk, tuple):
        return tuple(_chunk_without_run_id(c) for c in chunk)
    if isinstance(chunk, list):
        return [_chunk_without_run_id(c) for c in chunk]
    if not isinstance(chunk, dict):
        return chunk
    out = {k: _chunk_without_run_id(v) for k, v in chunk.items()}
    metadata = out.get("metadata")
    if isinstance(metadata, dict) and "run_id" in metadata:
        out["metadata"] = {k: v for k, v in metadata.items() if k != "run_id"}
        if not out["metadata"] and "triggers" in out:
            del out["metadata"]  # a task event shows user metadata only when there is some
    return out


def _unwrap(obj: Any) -> Any:
    return obj.local if isinstance(obj, RemoteGraph) else obj


_PASSED = ("interrupt_before", "interrupt_after", "context", "durability", "control")
_IGNORED: tuple[str, ...] = ()


def _run_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    unknown = set(kwargs) - {*_PASSED, *_IGNORED}
    if unknown:
        raise TypeError(f"RemoteGraph does not forward {sorted(unknown)}")
    return {k: kwargs[k] for k in _PASSED if kwargs.get(k) is not None}


class RemoteGraph:
    """A compiled graph whose runs and state live on the workers."""

    def __init__(self, session: RemoteSession, name: str, local: Any, persistent: bool) -> None:
        self.session = session
        self.graph_name = name
        self.local = local
        self.persistent = persistent

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self.local, attr)
        if callable(value):
            raise AttributeError(f"RemoteGraph does not forward {attr}()")
        return value

    @property
    def client(self) -> GraphClient:
        return self.session.client

    def _config(self, config: Any) -> Any:
        if self.persistent:
            return config
        # no checkpointer: nothing carries over between runs, so each run has its own thread
        config = dict(config or {})
        configurable = dict(config.get("configurable") or {})
        configurable["thread_id"] = self.session.rec.throwaway_thread()
        config["configurable"] = configurable
        return config

    # --- runs --------------------------------------------------------------------------------

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        run_kwargs = _run_kwargs(kwargs)
        with self.session.call():
            return self.client.invoke(
                self.graph_name, input, self._config(config), timeout=REMOTE_TIMEOUT, **run_kwargs
            )

    def stream(
        self,
        input: Any,
        config: Any = None,
        *,
        stream_mode: Any = None,
        subgraphs: bool = False,
        **kwargs: Any,
    ) -> Iterator[Any]:
        run_kwargs = _run_kwargs(kwargs)
        with self.session.call():
            chunks = self.client.stream(
                self.graph_name,
                input,
                self._config(config),
                stream_mode=stream_mode,
                subgraphs=subgraphs,
                timeout=REMOTE_TIMEOUT,
                **run_kwargs,
            )
            for chunk in chunks:
                yield _chunk_without_run_id(chunk)

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return self.invoke(input, config, **kwargs)

    async def astream(self, input: Any, config: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        for chunk in self.stream(input, config, **kwargs):
            yield chunk

    # --- state -------------------------------------------------------------------------------

    def get_state(self, config: Any, *, subgraphs: bool = False) -> Any:
        if not self.persistent:
            return self.local.get_state(config, subgraphs=subgraphs)
        with self.session.call():
            return _without_run_id(
                self.client.get_state(self.graph_name, config, subgraphs=subgraphs)
            )

    def get_state_history(self, config: Any, **kwargs: Any) -> Iterator[Any]:
        if not self.persistent:
            return self.local.get_state_history(config, **kwargs)  # type: ignore[no-any-return]
        with self.session.call():
            history = self.client.get_state_history(self.graph_name, config, **kwargs)
            return iter([_without_run_id(s) for s in history])

    def update_state(self, config: Any, values: Any, as_node: str | None = None) -> Any:
        if not self.persistent:
            return self.local.update_state(config, values, as_node)
        with self.session.call():
            return self.client.update_state(self.graph_name, config, values, as_node)

    def bulk_update_state(self, config: Any, supersteps: Any) -> Any:
        if not self.persistent:
            return self.local.bulk_update_state(config, supersteps)
        with self.session.call():
            return self.client.bulk_update_state(self.graph_name, config, supersteps)

    def clear_cache(self, nodes: Any = None) -> None:
        with self.session.call():
            self.client.clear_cache(self.graph_name, nodes)

    async def aclear_cache(self, nodes: Any = None) -> None:
        self.clear_cache(nodes)

    async def aget_state(self, config: Any, *, subgraphs: bool = False) -> Any:
        return self.get_state(config, subgraphs=subgraphs)

    async def aget_state_history(self, config: Any, **kwargs: Any) -> AsyncIterator[Any]:
        for snapshot in self.get_state_history(config, **kwargs):
            yield snapshot

    async def aupdate_state(self, config: Any, values: Any, as_node: str | None = None) -> Any:
        return self.update_state(config, values, as_node)


ABANDONED = {
    "type": "RunTimeoutError",
    "module": "workers.errors",
    "message": "abandoned by the e2e corpus test after its timeout",
}


def abandon_runs(client: GraphClient, thread_ids: list[str]) -> list[str]:
    """Finish runs of these threads still queued/running (a hung run is a bug the test
    reports; left active, the sweeper would nudge it forever and slow every later test)."""
    abandoned = []
    for thread_id in thread_ids:
        for run_id in client.store.active_runs(thread_id):
            if client.store.finish_run(run_id, "error", error=ABANDONED):
                abandoned.append(run_id)
    return abandoned


def run_remote(client: GraphClient, name: str, fn: Scenario) -> tuple[list[Any], RemoteRecorder]:
    """Run scenario ``name`` against the workers; its transcript and recorder."""
    session = RemoteSession(client, name)
    threads = session.rec.thread_ids, session.rec.extra_threads
    try:
        fn(session.runtime(), session.rec)
        transcript = session.rec.finish()
    finally:
        abandon_runs(client, [*threads[0], *threads[1]])
        with db() as d:  # the rows are merged into the recorder; keep the tables small
            d.execute(
                "DELETE FROM e2e_ledger WHERE thread_id = ANY(%s)", ([*threads[0], *threads[1]],)
            )
            d.execute("DELETE FROM e2e_cells WHERE tag = %s", (session.rec.tag,))
    return transcript, session.rec


def run_local(fn: Scenario) -> list[Any]:
    """Run a scenario in-process on graphruntime with the same thread-id scheme."""
    rec = TaggedRecorder()
    fn(load_runtime("graphruntime"), rec)
    return rec.finish()
