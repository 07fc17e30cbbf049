"""What the coordinator, the task jobs and the sweeper share, and how a run's loop is built."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from graphruntime.checkpoint import CheckpointTuple, ClusterSaver
from graphruntime.config import RunnableConfig
from graphruntime.pregel import Pregel
from graphruntime.pregel.driver import (
    LOAD,
    SaverIO,
    StepLoop,
    StreamSink,
    open_loop,
    run_options,
    stream_callbacks,
)
from workers.dispatch import Broker
from workers.registry import GraphRegistry
from workers.settings import Settings
from workers.store import Run, RunStore


def _process_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class WorkerContext:
    """A worker process's (or a client's) view of the cluster: stores, broker, graphs."""

    settings: Settings
    registry: GraphRegistry
    saver: ClusterSaver
    store: RunStore
    broker: Broker
    worker_name: str = field(default_factory=_process_name)
    pin: Callable[[], AbstractContextManager[None]] = nullcontext
    """Lends this thread one database connection for a block's borrows (a job's): the
    Postgres pool's ``pinned`` (workers/_pinned_pool.py); nothing to pin in memory."""
    job_token: str | None = None
    """The token of the job this process is running (None: idle), kept with the task
    claims and thread leases it takes: the process's heartbeat frees those of no current
    job (a job that gave up on an outage, a release a crash took back)."""

    @property
    def stale(self) -> float:
        """Seconds without a heartbeat after which a worker counts as dead."""
        return self.settings.stale_after


RUN_EVENT_MODES = ("values", "updates")


def run_config(run: Run, *, checkpoint_id: str | None = None) -> RunnableConfig:
    """The config a run's loops see: the user's config, pinned to the run's thread."""
    user: dict[str, Any] = dict(run.payload.config)
    configurable = {**user.get("configurable", {}), "thread_id": run.thread_id}
    configurable.pop("checkpoint_id", None)
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    metadata = {**user.get("metadata", {}), "run_id": run.run_id}
    return {**user, "configurable": configurable, "metadata": metadata}  # type: ignore[typeddict-item]


def run_loop(
    graph: Pregel,
    run: Run,
    saver: ClusterSaver,
    *,
    checkpoint_id: str | None = None,
    saved: CheckpointTuple | Any | None = LOAD,
    task_errors: Callable[[str], Mapping[str, BaseException]] | None = None,
    saver_io: SaverIO | None = None,
) -> StepLoop:
    """The loop of one run, as every process that works on it builds it.

    A streaming client sees every state key in "values", as ``Pregel.stream`` does;
    ``invoke`` returns only the output schema's keys. ``task_errors``: the errors the
    task jobs recorded for a step's tasks, rebuilt (see ``RunOptions.task_errors``);
    ``saver_io``: where the run's saver requests go (``workers._saves.RunSaves``). A run
    that streams ``messages`` or ``tools`` gets their callback handlers (langchain-core
    needed then, as in-process).
    """
    payload = run.payload
    config = run_config(run, checkpoint_id=checkpoint_id)
    loop = open_loop(
        graph,
        config,
        saver=saver,
        sink=StreamSink({*RUN_EVENT_MODES, *payload.stream_modes}, payload.subgraphs),
        options=run_options(
            graph,
            config,
            output_keys=graph.stream_channels if payload.stream_modes else None,
            interrupt_before=payload.interrupt_before,
            interrupt_after=payload.interrupt_after,
            stop=run.stop,
            context=payload.context,
            shared_saver=True,  # a subgraph's own saver would live in one worker process
            task_errors=task_errors,
            saver_io=saver_io,
        ),
        saved=saved,
    )
    # chat model tokens and tool calls reach the sink through callback handlers, as
    # in-process (workers/_live_events.py stores them while the node runs)
    stream_callbacks(loop, modes=payload.stream_modes, subgraphs=payload.subgraphs)
    return loop


def at_run_start(loop: StepLoop, run: Run) -> bool:
    """Whether the loop's checkpoint is the one the run started from.

    Checkpoints a run writes carry its id in their metadata; until it wrote one, the
    thread's head is the step the run's input was applied to.
    """
    return loop.view().run_id != run.run_id
