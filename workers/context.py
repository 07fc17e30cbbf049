"""What coordinator, executor and resume need: saver, run store, registry, dispatcher."""

from __future__ import annotations

import os
import socket
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from graphruntime.checkpoint import BaseCheckpointSaver
from graphruntime.config import RunnableConfig
from graphruntime.pregel import Pregel, PregelLoop, StreamSink
from graphruntime.types import Command
from workers.messages import TaskMessage
from workers.registry import GraphRegistry
from workers.settings import Settings
from workers.store import EventRow, Run, RunStore


class Dispatcher(Protocol):
    """Puts work on the broker; Celery in production, a local queue in unit tests."""

    def coordinate(self, run_id: str, *, delay: float = 0.0) -> None: ...

    def execute(self, message: TaskMessage, *, delay: float = 0.0) -> None: ...


@dataclass
class WorkerContext:
    settings: Settings
    registry: GraphRegistry
    saver: BaseCheckpointSaver
    store: RunStore
    dispatcher: Dispatcher
    worker_name: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")

    @property
    def fenced_saver(self) -> BaseCheckpointSaver:
        """The saver whose puts refuse to fork a thread (a stale coordinator cannot write)."""
        fenced = getattr(self.saver, "fenced", None)
        return fenced() if callable(fenced) else self.saver

    @property
    def task_job_saver(self) -> BaseCheckpointSaver:
        """The fenced saver, its pending writes committed lazily.

        A task job always follows its writes with a durable commit (marking the tasks
        done), which flushes them with it; if it dies first, the tasks run again. (The
        coordinator's single writes gain nothing: a lazy commit costs a transaction.)
        """
        saver = self.fenced_saver
        lazy = getattr(saver, "lazy_writes", None)
        return lazy() if callable(lazy) else saver


# --- a run's payload ---------------------------------------------------------------------
# {"input": <input or Command>, "config": RunnableConfig (user part), "stream_modes": [...],
#  "subgraphs": bool, "interrupt_before": ..., "interrupt_after": ...}

RUN_EVENT_MODES = ("values", "updates")


def run_config(run: Run, *, checkpoint_id: str | None = None) -> RunnableConfig:
    """The config a run's loops see: the user's config, pinned to the run's thread."""
    user: dict[str, Any] = dict(run.payload.get("config") or {})
    configurable = {**user.get("configurable", {}), "thread_id": run.thread_id}
    configurable.pop("checkpoint_id", None)
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    metadata = {**user.get("metadata", {}), "run_id": run.run_id}
    return {**user, "configurable": configurable, "metadata": metadata}  # type: ignore[typeddict-item]


def open_loop(
    ctx: WorkerContext,
    graph: Pregel,
    run: Run,
    input: Any,
    *,
    checkpoint_id: str | None = None,
    fenced: bool = True,
    writes_of: Collection[str] | None = None,
    saver: BaseCheckpointSaver | None = None,
    reopen: bool = False,
) -> PregelLoop:
    """A loop for this run; its checkpoint puts are fenced unless it forks (time travel).

    A task job names its tasks in ``writes_of``: it loads only their pending writes.
    ``reopen``: the run is past its start (``first()`` ran in another process); if the
    loaded step is the one the run started at, redo in memory what ``first()`` did.
    """
    payload = run.payload
    modes: Sequence[Any] = sorted({*RUN_EVENT_MODES, *(payload.get("stream_modes") or ())})
    loop = graph.create_loop(
        input,
        run_config(run, checkpoint_id=checkpoint_id),
        checkpointer=saver or (ctx.fenced_saver if fenced else ctx.saver),
        stream_modes=modes,
        # a streaming client sees every state key in "values", as Pregel.stream does;
        # invoke() returns only the output schema's keys
        output_keys=graph.stream_channels if payload.get("stream_modes") else None,
        interrupt_before=payload.get("interrupt_before"),
        interrupt_after=payload.get("interrupt_after"),
        writes_of=writes_of,
    )
    loop.sink = StreamSink(set(modes), bool(payload.get("subgraphs")))
    cmd = payload.get("input")
    if isinstance(cmd, Command) and input is None:
        # the coordinator's first() put the map in its own config; later loops need it too
        loop.use_resume_map(cmd.resume)
    if run.stop is not None:
        loop.stop = run.stop
    if reopen and loop.saved and loop.metadata.get("run_id") != run.run_id:
        loop.reenter(resuming=cmd is None or isinstance(cmd, Command))
    return loop


def flush_events(ctx: WorkerContext, run: Run, loop: PregelLoop) -> list[EventRow]:
    """Store the loop's pending stream chunks as the run's events; returns them."""
    chunks = list(loop.sink.drain())
    ctx.store.add_events(run.run_id, chunks)
    return chunks


def error_info(
    exc: BaseException, task: str | None = None, checkpoint_id: str | None = None
) -> dict[str, Any]:
    """A JSON-safe description of a failure; the client rebuilds the exception from it.

    ``args`` are kept when they are plain JSON values, so ``KeyError('k')`` comes back
    as ``KeyError('k')`` and not as a KeyError of its quoted message.
    """
    args = [a for a in exc.args if isinstance(a, (str, int, float, bool)) or a is None]
    return {
        "type": type(exc).__name__,
        "module": type(exc).__module__,
        "message": str(exc),
        "args": args if len(args) == len(exc.args) else None,
        "repr": repr(exc),
        "task": task,
        "checkpoint_id": checkpoint_id,
    }
