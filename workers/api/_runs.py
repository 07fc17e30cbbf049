"""The API's only way to the run layer: :class:`GraphClient`'s public methods and the
:class:`RunStore` protocol's, nothing else. Runs are queued for the workers exactly as
``GraphClient.submit`` queues them; this module only translates the API's requests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from graphruntime.config import RunnableConfig
from graphruntime.types import Command, Send, StateSnapshot
from workers._listener import EVENTS_CHANNEL, RUNS_CHANNEL
from workers.api._context import ApiContext, ApiError
from workers.client import GraphClient, RunHandle
from workers.errors import CancelPendingError
from workers.store import Event, Run

API_MODES = {
    "values": "values",
    "updates": "updates",
    "custom": "custom",
    "messages-tuple": "messages",  # chat model tokens as they come, and messages nodes return
    "events": "tasks",  # each node's start and end, from the tasks stream
    "debug": "debug",
    "tasks": "tasks",
    "checkpoints": "checkpoints",
}
"""API stream mode -> the run's stream mode on the workers."""

RUN_STATUS = {
    "queued": "pending",
    "running": "running",
    "interrupted": "success",
    "success": "success",
    "error": "error",
    "cancelled": "interrupted",
}
"""The workers' run status -> the API's: a run that ended waiting for a human succeeded
(its thread is interrupted); a cancelled one was interrupted, as LangGraph says."""


def worker_modes(api_modes: Sequence[str]) -> list[str]:
    """The workers' modes for the API's; a mode they cannot stream is a 422 saying why."""
    out = []
    for mode in api_modes:
        if mode not in API_MODES:
            raise ApiError(
                422,
                f"stream_mode {mode!r} is not available on graphrun serve: use values, "
                "updates, messages-tuple, events, custom, debug, tasks or checkpoints",
            )
        out.append(API_MODES[mode])
    return list(dict.fromkeys(out))


def command_of(body: Any) -> Command[Any]:
    goto: Any = body.goto
    if isinstance(goto, dict):
        goto = Send(goto["node"], goto.get("input"))
    elif isinstance(goto, list):
        goto = [Send(g["node"], g.get("input")) if isinstance(g, dict) else g for g in goto]
    resume = body.resume
    update = body.update
    if isinstance(update, list):
        update = [tuple(u) if isinstance(u, list) else u for u in update]
    return Command(update=update, resume=resume, goto=goto if goto is not None else ())


def submit(
    ctx: ApiContext,
    graph: str,
    input: Any,
    config: RunnableConfig,
    *,
    modes: Sequence[str],
    subgraphs: bool,
    interrupt_before: Any,
    interrupt_after: Any,
    context: Any,
    durability: Any,
    actor: str | None,
    idempotency_key: str | None = None,
) -> RunHandle:
    return ctx.client.submit(
        graph,
        input,
        config,
        stream_mode=list(modes),
        subgraphs=subgraphs,
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        context=context or None,
        durability=durability,
        actor=actor,
        route="api",
        idempotency_key=idempotency_key,
    )


def get_run(ctx: ApiContext, run_id: str) -> Run:
    return ctx.client.store.get_run(run_id)


def active_runs(ctx: ApiContext, thread_id: str) -> list[str]:
    return ctx.client.store.active_runs(thread_id)


def cancel_thread(
    ctx: ApiContext, graph: str, thread_id: str, actor: str | None, *, timeout: float = 1.0
) -> list[str] | None:
    """Cancel the thread's runs (a barrier: a run a worker is advancing ends first); the
    runs cancelled, or None when the cancel is queued behind that run (it applies as soon
    as the worker frees the thread)."""
    try:
        return ctx.client.cancel(
            graph,
            {"configurable": {"thread_id": thread_id}},
            reason="cancelled through the API",
            actor=actor,
            route="api",
            timeout=timeout,
        )
    except CancelPendingError:
        return None


def wait_done(ctx: ApiContext, run_id: str, timeout: float | None) -> Run:
    return ctx.client.wait_done(run_id, timeout)


@contextmanager
def watching(client: GraphClient, run_id: str) -> Iterator[Any]:
    """LISTEN for the run's events and end (None: poll)."""
    if client.listener is None:
        yield None
        return
    with client.listener.watch(run_id, (RUNS_CHANNEL, EVENTS_CHANNEL)) as watch:
        yield watch


def next_events(ctx: ApiContext, run_id: str, after: int, wait: float) -> tuple[list[Event], Run]:
    """The run's events after ``after``; if none and the run goes on, waits up to ``wait``
    seconds for news first (LISTEN is in place before the read: nothing is missed)."""
    store = ctx.client.store
    with watching(ctx.client, run_id) as watch:
        events = store.events_after(run_id, after)
        run = store.get_run(run_id)
        if events or run.done:
            return events, run
        if watch is not None:
            watch.wait(wait)
        else:
            import time

            time.sleep(min(wait, 0.01))
    return store.events_after(run_id, after), store.get_run(run_id)


def last_event(ctx: ApiContext, run_id: str) -> int:
    """The sequence number of the run's latest stored event (0: none)."""
    events = ctx.client.store.events_after(run_id, 0)
    return events[-1].seq if events else 0


def get_state(
    ctx: ApiContext, graph: str, config: RunnableConfig, *, subgraphs: bool = False
) -> StateSnapshot:
    return ctx.client.get_state(graph, config, subgraphs=subgraphs)


def history(ctx: ApiContext, graph: str, config: RunnableConfig, **kwargs: Any) -> list[Any]:
    return list(ctx.client.get_state_history(graph, config, **kwargs))


def update_state(
    ctx: ApiContext, graph: str, config: RunnableConfig, values: Any, as_node: str | None
) -> RunnableConfig:
    return ctx.client.update_state(graph, config, values, as_node)


def bulk_update_state(
    ctx: ApiContext, graph: str, config: RunnableConfig, supersteps: Sequence[Sequence[Any]]
) -> RunnableConfig:
    return ctx.client.bulk_update_state(graph, config, supersteps)


def graph_info(ctx: ApiContext, graph: str, **args: Any) -> Any:
    """A graph's drawing or schemas: computed by a worker that has the graph's code."""
    client = ctx.client
    if client.local(graph):
        from workers.graph_info import graph_info as local_info

        return local_info(client.registry.get(graph), **args)
    assert client.requests is not None
    return client.requests.call(graph, "graph_info", **args)


def heads(ctx: ApiContext, thread_ids: Sequence[str]) -> list[Any]:
    """The head checkpoints of threads, in one round trip."""
    configs: list[RunnableConfig] = [{"configurable": {"thread_id": t}} for t in thread_ids]
    return ctx.client.saver.get_tuples(configs)


def delete_checkpoints(ctx: ApiContext, thread_id: str) -> None:
    ctx.client.saver.delete_thread(thread_id)


def prune_checkpoints(ctx: ApiContext, thread_id: str, keep_last: int) -> None:
    prune = getattr(ctx.client.saver, "prune", None)
    if prune is None:
        raise ApiError(422, "this checkpointer cannot prune")
    prune(thread_id, keep_last=keep_last)


def copy_checkpoints(ctx: ApiContext, source: str, target: str) -> None:
    """Copy a thread's checkpoints (and their pending writes) to a new thread, oldest
    first, keeping their ids and parents."""
    saver = ctx.client.saver
    tuples = list(saver.list({"configurable": {"thread_id": source}}))
    for item in reversed(tuples):
        conf = item.config["configurable"]
        parent = (item.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        put_config: RunnableConfig = {
            "configurable": {
                "thread_id": target,
                "checkpoint_ns": conf.get("checkpoint_ns", ""),
                **({"checkpoint_id": parent} if parent else {}),
            }
        }
        stored = saver.put(
            put_config,
            item.checkpoint,
            item.metadata,
            dict(item.checkpoint.get("channel_versions", {})),
        )
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for task_id, channel, value in item.pending_writes or ():
            by_task.setdefault(task_id, []).append((channel, value))
        for task_id, writes in by_task.items():
            saver.put_writes(stored, writes, task_id)


def new_thread_id() -> str:
    return str(uuid.uuid4())
