"""What a run's loop holds, how it is loaded, and how it streams.

:class:`LoopState` is the bottom of :class:`~graphruntime.pregel._loop.PregelLoop`, a
class built in layers, one module each, every layer using only those below it:

- ``_loop_state`` (here): the run's options, its checkpoint, channels and pending
  writes as loaded from the saver, the step's context, and its stream chunks;
- ``_loop_save``: pending writes and checkpoints, and the saver calls that keep them;
- ``_loop_start``: starting a run (its input, Command or resume) or re-opening a step;
- ``_loop_tasks``: a step's tasks, the config each one runs with, what they recorded;
- ``_calls``: the ``@task`` calls a task makes;
- ``_loop``: the step API's remaining calls: ``plan``, ``record``, ``settle``, ``close``.

The values an executor hands over or reads back (:class:`RunOptions`,
:class:`TaskResult`, :class:`StepView`) are defined here too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_CHECKPOINT_ID,
    CONFIG_KEY_CHECKPOINT_MAP,
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_REPLAY_STATE,
    CONFIG_KEY_RESUME_MAP,
    CONFIG_KEY_RESUMING,
    CONFIG_KEY_SAVER_IO,
    CONFIG_KEY_SCRATCHPAD,
    CONFIG_KEY_SHARED_SAVER,
    CONFIG_KEY_TASK_ID,
    CONFIG_KEY_THREAD_ID,
    NS_SEP,
)
from graphruntime._internal._scratchpad import Scratchpad
from graphruntime._internal._typing import MISSING
from graphruntime.checkpoint._id import utc_now_iso
from graphruntime.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointTuple,
    PendingWrite,
    copy_checkpoint,
    empty_checkpoint,
)
from graphruntime.pregel._algo import (
    PreparedTask,
    StepContext,
    increment,
    task_path_str,
)
from graphruntime.pregel._delta import DeltaTracker, aload_channels, load_channels
from graphruntime.pregel._exit_delta import ExitDeltaLog
from graphruntime.pregel._io import output_updates, output_values
from graphruntime.pregel._node import GraphSpec
from graphruntime.pregel._replay import ReplayState
from graphruntime.pregel._runtime import run_runtime
from graphruntime.pregel._saved import channel_facts
from graphruntime.pregel._saves import SaverIO, SaverRequest
from graphruntime.pregel._stream import StreamChunk, StreamSink
from graphruntime.pregel._task_config import RunConfig
from graphruntime.pregel._task_events import shown, task_payload, task_result_payload
from graphruntime.pregel.debug import map_debug_checkpoint
from graphruntime.runtime import RunControl, Runtime
from graphruntime.types import All, Durability, Interrupt, RetryPolicy

Status = Literal[
    "pending",
    "done",
    "interrupt_before",
    "interrupt_after",
    "out_of_steps",
    "interrupted",
    "draining",
]


class _Load:
    """Sentinel: the loop reads the thread's checkpoint from its saver itself."""


LOAD = _Load()


class _ALoad:
    """Sentinel: an async run reads the checkpoint with the saver's async methods
    (:meth:`LoopState.aload`)."""


ALOAD = _ALoad()

_UNREAD = object()  # the thread's head was not read ahead (a sync run reads it on demand)


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What a run asks for beyond its input: the same for every step of the run."""

    output_keys: tuple[str, ...] | str
    interrupt_before: All | tuple[str, ...] = ()
    interrupt_after: All | tuple[str, ...] = ()
    recursion_limit: int = 10007
    stop: int | None = None
    """The last step the run may take; default: the loaded step + ``recursion_limit``.

    A run continued in another process passes the value its first loop computed.
    """
    durability: Durability = "async"
    """``"exit"`` saves only the run's last checkpoint (and its pending writes), when
    the run ends; ``"sync"`` and ``"async"`` save every step before the next starts
    (saves here never overlap the next step, which satisfies both)."""
    context: Any = None
    """The run's context (``Runtime.context``), already coerced to the graph's schema."""
    control: RunControl | None = None
    """Asks the run to stop between steps; a run without one gets its own."""
    shared_saver: bool = False
    """Subgraphs compiled with a saver of their own (``compile(checkpointer=InMemorySaver())``
    called inside a node) save with this run's saver instead, under the same namespaces:
    an executor whose steps run in several processes (the workers) cannot use a saver
    that lives in one, and a subgraph resumed elsewhere would start over."""
    task_errors: Callable[[str], Mapping[str, BaseException]] | None = None
    """The errors an executor kept of a step's failed tasks, by task id, given the step's
    checkpoint id; asked only when a failure is read back (an error handler's input).

    A saver keeps only an error's text (as LangGraph's); an executor that recorded more
    (a distributed job records the type and arguments) rebuilds the error here, so an
    error handler that runs in another process gets the exception itself."""
    saver_io: SaverIO | None = None
    """Who performs the run's saver requests (and its subgraphs'), instead of its driver
    performing them at once: e.g. the workers' coordinator, which holds them and stores
    a round's together (see ``_saves.py``)."""


class TaskResult(NamedTuple):
    """A task's outcome as an executor hands it back.

    ``recorded``: the outcome is already saved as pending writes (and streamed) by
    whoever ran the task, e.g. a distributed task job; the loop must not record it again.
    """

    task: PreparedTask
    outcome: BaseException | None
    recorded: bool = False


@dataclass(frozen=True, slots=True)
class StepView:
    """A read-only picture of a run's loop between two calls of the step API."""

    checkpoint_id: str
    """The checkpoint the current step runs on (its tasks' writes are saved under it)."""
    checkpoint_ts: str
    """When that checkpoint was made (ISO 8601, as in the checkpoint)."""
    step: int
    """The step's number (the checkpoint's ``step`` + 1)."""
    stop: int
    """The last step the run may take (see :attr:`RunOptions.stop`)."""
    run_id: str | None
    """The ``run_id`` in the checkpoint's metadata: the run that saved it."""
    status: Status
    """Why the run stopped, or ``"pending"`` while it goes on."""
    interrupts: tuple[Interrupt, ...]
    """The interrupts the run stopped at (``status`` ``"interrupted"``)."""
    tasks: tuple[PreparedTask, ...]
    """The step's tasks, in task order (:func:`task_order`)."""


@dataclass(frozen=True, slots=True)
class _Position:
    """Where the run is, as managed values read it."""

    step: int
    stop: int


def task_order(task: PreparedTask) -> str:
    """The deterministic order of a step's tasks: how writes apply and results list."""
    return task_path_str(task.path[:3])


class LoopState:
    """State of one run of one graph (root or nested) on one thread namespace.

    ``saved``: the checkpoint tuple an executor already loaded (e.g. with only some
    tasks' pending writes, for a job that runs those tasks); by default the loop
    loads the latest checkpoint (or the config's ``checkpoint_id``) from its saver.
    """

    checkpoint_config: RunnableConfig
    """The config of the last checkpoint saved (or loaded): pending writes go under it."""
    calls: Any
    """Runs the ``@task`` calls tasks make (a ``CallExecutor``); set by the drivers."""

    def __init__(
        self,
        graph: GraphSpec,
        config: RunnableConfig,
        *,
        checkpointer: BaseCheckpointSaver | None,
        sink: StreamSink,
        options: RunOptions,
        saved: CheckpointTuple | _Load | _ALoad | None = LOAD,
    ) -> None:
        self.graph = graph
        self.config = config
        self.checkpointer = checkpointer
        self.sink = sink
        self.options = options
        self.output_keys = options.output_keys
        self.recursion_limit = options.recursion_limit
        conf = config[CONF]
        self.is_nested = CONFIG_KEY_TASK_ID in conf
        if options.shared_saver and not conf.get(CONFIG_KEY_SHARED_SAVER):
            conf = {**conf, CONFIG_KEY_SHARED_SAVER: True}  # its tasks' configs carry it
            config = {**config, CONF: conf}
            self.config = config
        if options.saver_io is not None and conf.get(CONFIG_KEY_SAVER_IO) is not options.saver_io:
            conf = {**conf, CONFIG_KEY_SAVER_IO: options.saver_io}  # and this
            config = {**config, CONF: conf}
            self.config = config
        if not self.is_nested and conf.get(CONFIG_KEY_CHECKPOINT_NS):
            # a root run always runs the root graph; a subgraph's config (from
            # get_state(subgraphs=True)) addresses the root through its checkpoint_map
            conf = {**conf, CONFIG_KEY_CHECKPOINT_NS: "", CONFIG_KEY_CHECKPOINT_ID: None}
            config = {**config, CONF: conf}
            self.config = config
        self.ns: str = conf.get(CONFIG_KEY_CHECKPOINT_NS, "")
        checkpoint_map = conf.get(CONFIG_KEY_CHECKPOINT_MAP) or {}
        # this graph's own entry in the map: a config from get_state(subgraphs=True)
        self.mapped_id: str | None = checkpoint_map.get(self.ns)
        self.ns_tuple: tuple[str, ...] = tuple(self.ns.split(NS_SEP)) if self.ns else ()
        self.parent_scratchpad: Scratchpad | None = conf.get(CONFIG_KEY_SCRATCHPAD)
        self.get_next_version: Callable[[Any, None], Any] = (
            checkpointer.get_next_version if checkpointer is not None else increment
        )
        self.status: Status = "pending"
        self.tasks: dict[str, PreparedTask] = {}
        self.interrupts: list[Interrupt] = []
        self.pending_writes: list[PendingWrite] = []
        self.updated_channels: set[str] | None = None
        # a resume map reaches subgraphs through their config
        self.resume_map: Mapping[str, Any] | None = conf.get(CONFIG_KEY_RESUME_MAP)
        self.replaying = False
        self.durability: Durability = options.durability
        self._exit_written: set[str] = set()  # tasks whose writes an "exit" run saves last
        # the delta writes an "exit" run stores on its anchor at exit (see _exit_delta.py)
        self._exit_log: ExitDeltaLog | None = None
        self.resume_taken_by: str | None = None
        """The task of this step that took the run's unaddressed ``Command(resume=v)``.

        A distributed executor that runs one step in several processes (a caller, then
        its calls as jobs, then the caller again) carries it from each process of the run
        to the next, so no other task takes the same answer.
        """
        self.calls = None
        self._kept_errors: tuple[str, Mapping[str, BaseException]] | None = None
        # record() and calls may come from several task threads at once
        self._lock = threading.RLock()
        self._call_futures: dict[str, Any] = {}
        self._written: set[str] = set()
        self._written_for: list[PendingWrite] | None = None
        self.runtime: Runtime[Any] = run_runtime(graph, config, options.context, options.control)
        self._untracked, deltas = channel_facts(graph)
        self.delta = DeltaTracker(graph.channel_specs, deltas)
        self.outbox: list[SaverRequest] = []
        """The saver requests made and not yet taken by the driver (:meth:`take_saves`)."""
        if isinstance(saved, _ALoad):
            return  # aload() reads the checkpoint
        if isinstance(saved, _Load):
            saved = self._read_saved()
        self._load(saved)

    def settle_saves(self) -> None:
        """Before a read of the saver: what the run's :class:`SaverIO` holds is stored."""
        io = self.options.saver_io
        if io is not None and self.checkpointer is not None:
            io.settle(self.checkpointer)

    async def aload(self) -> None:
        """Read the checkpoint with the saver's async methods (a loop built with ALOAD)."""
        saved = None
        if self.checkpointer is not None:
            self.settle_saves()
            replay = self._replay_state()
            if replay is not None:
                self._drop_resuming()
                saved = await replay.aload(self.ns, self.checkpointer, self.saver_config())
            else:
                saved = await self.checkpointer.aget_tuple(self.saver_config())
        self._load_checkpoint(saved)
        head = self._head_config()
        if head is not None and self.checkpointer is not None:
            # read now, with the async saver: first() asks whether the run is superseded
            latest = await self.checkpointer.aget_tuple(head)
            self._head_id = latest.checkpoint["id"] if latest is not None else None
        self.channels = await aload_channels(
            self.graph.channel_specs,
            self.checkpoint,
            saver=self.checkpointer,
            config=saved.config if saved is not None else None,
        )
        self._loaded_channels()

    # --- loading ------------------------------------------------------------------------

    def saver_config(self) -> RunnableConfig:
        """The config that addresses this loop's checkpoint in its saver."""
        conf = self.config[CONF]
        thread = conf.get(CONFIG_KEY_THREAD_ID)
        return {
            CONF: {
                # saved (and shown) as a str, as LangGraph does: a UUID thread id works too
                CONFIG_KEY_THREAD_ID: thread if thread is None else str(thread),
                CONFIG_KEY_CHECKPOINT_NS: self.ns,
                **({CONFIG_KEY_CHECKPOINT_ID: address} if (address := self._address()) else {}),
            }
        }

    def _address(self) -> str | None:
        """The checkpoint id the run is pointed at, if any (else the latest)."""
        if self.mapped_id:
            return self.mapped_id
        if self.is_nested:
            return None
        explicit: str | None = self.config[CONF].get(CONFIG_KEY_CHECKPOINT_ID)
        return explicit

    def _head_config(self) -> RunnableConfig | None:
        """The config of the namespace's latest checkpoint, when the root run addressed
        another one (a subgraph addressed is a replay whatever its head)."""
        if self.is_nested or not self.addressed or not self.saved or self.checkpointer is None:
            return None
        conf = {k: v for k, v in self.saver_config()[CONF].items() if k != CONFIG_KEY_CHECKPOINT_ID}
        return {CONF: conf}

    def _replay_state(self) -> ReplayState | None:
        replay = self.config[CONF].get(CONFIG_KEY_REPLAY_STATE)
        if self.is_nested and not self.mapped_id and isinstance(replay, ReplayState):
            return replay
        return None

    def _read_saved(self) -> CheckpointTuple | None:
        if self.checkpointer is None:
            return None
        self.settle_saves()
        replay = self._replay_state()
        if replay is not None:
            # the parent replays an old step: start from the state this subgraph had
            # then, and run it on its input (not as a resume)
            self._drop_resuming()
            return replay.load(self.ns, self.checkpointer, self.saver_config())
        return self.checkpointer.get_tuple(self.saver_config())

    def _drop_resuming(self) -> None:
        # the parent replays an old step: start from the state this subgraph had then,
        # and run it on its input (not as a resume)
        conf = {k: v for k, v in self.config[CONF].items() if k != CONFIG_KEY_RESUMING}
        self.config = {**self.config, CONF: conf}

    loaded = False
    _head_id: str | object | None = _UNREAD
    _run_base: RunConfig | None = None
    _context: StepContext | None = None
    _metadata_for: tuple[RunnableConfig, dict[str, Any]] | None = None

    def _load(self, saved: CheckpointTuple | None) -> None:
        self._load_checkpoint(saved)
        self.channels = load_channels(
            self.graph.channel_specs,
            self.checkpoint,
            saver=self.checkpointer,
            config=saved.config if saved is not None else None,
        )
        self._loaded_channels()

    def _load_checkpoint(self, saved: CheckpointTuple | None) -> None:
        self.loaded = True
        self.addressed = bool(self._address() or self._replay_state())
        if saved is not None:
            self.checkpoint: Checkpoint = copy_checkpoint(saved.checkpoint)
            self.metadata: dict[str, Any] = dict(saved.metadata)
            self.checkpoint_config = saved.config
            self.saved = True
            self.saved_versions: dict[str, Any] = dict(saved.checkpoint["channel_versions"])
            self.pending_writes = list(saved.pending_writes or [])
            self.prev_checkpoint_config: RunnableConfig | None = saved.parent_config
            self._saved_id: str | None = saved.checkpoint["id"]
        else:
            self.checkpoint = empty_checkpoint()
            self.metadata = {"step": -2}
            self.checkpoint_config = self.saver_config()
            self.saved = False
            self.saved_versions = {}
            self.prev_checkpoint_config = None
            self._saved_id = None
        self._stream_metadata: dict[str, Any] = {
            k: self.metadata[k] for k in ("source", "step", "parents") if k in self.metadata
        }

    def _loaded_channels(self) -> None:
        self.delta.rebase(self.pending_writes)
        if (
            self.durability == "exit"
            and self.delta.enabled
            and self.checkpointer is not None
            and not self.addressed
        ):
            self._exit_log = ExitDeltaLog(
                self.graph.channel_specs,
                self.checkpoint["id"],
                loaded=frozenset(w[0] for w in self.pending_writes),
            )
        self.step: int = self.metadata.get("step", -2) + 1
        self.updated_channels = (
            set(self.checkpoint["updated_channels"] or ())
            if self.checkpoint.get("updated_channels") is not None
            else None
        )
        options = self.options
        self.stop = (
            options.stop if options.stop is not None else self.step + options.recursion_limit + 1
        )

    def _step_context(self) -> StepContext:
        managed = self.graph.managed
        cached = self._context
        if not managed and cached is not None and cached.step == self.step:
            return cached  # nothing in it but the step changes during a run
        self._context = StepContext(
            nodes=self.graph.nodes,
            trigger_to_nodes=self.graph.trigger_to_nodes,
            parent_ns=self.ns,
            step=self.step,
            managed_values=(
                {k: spec.get(_Position(self.step, self.stop)) for k, spec in managed.items()}
                if managed
                else {}
            ),
        )
        return self._context

    step_context = _step_context
    """The algorithm's view of this step (for the step's helpers, see _handlers.py)."""

    # --- streaming ----------------------------------------------------------------------

    def emit(self, mode: str, payload: Any) -> None:
        """Stream ``payload`` in ``mode``; None or MISSING means there is nothing to stream."""
        if payload is None or payload is MISSING:
            return
        self.sink.put(self.ns_tuple, mode, payload)
        if mode in ("checkpoints", "tasks") and "debug" in self.sink.modes:
            # "debug" is the "checkpoints" and "tasks" events, wrapped with their step
            kind = (
                "checkpoint"
                if mode == "checkpoints"
                else ("task_result" if "result" in payload else "task")
            )
            self.sink.put(
                self.ns_tuple,
                "debug",
                {
                    "step": self.step - 1 if mode == "checkpoints" else self.step,
                    "timestamp": utc_now_iso(),
                    "type": kind,
                    "payload": payload,
                },
            )

    def streams(self, mode: str) -> bool:
        """Whether this run streams ``mode`` (``checkpoints``/``tasks`` also feed ``debug``)."""
        modes = self.sink.modes
        return mode in modes or (mode in ("checkpoints", "tasks") and "debug" in modes)

    def _emit_checkpoint(self, tasks: Collection[PreparedTask]) -> None:
        """The ``checkpoints`` event of the current checkpoint, with the next step's tasks."""
        if self.checkpointer is None or not self.streams("checkpoints"):
            return
        conf = self.checkpoint_config[CONF]
        config: RunnableConfig = {
            **self.checkpoint_config,
            CONF: {**conf, CONFIG_KEY_CHECKPOINT_ID: self.checkpoint["id"]},
        }
        for payload in map_debug_checkpoint(
            config,
            self.channels,
            self.graph.stream_channels,
            self._stream_metadata,
            list(tasks),
            self.pending_writes,
            self.prev_checkpoint_config,
            self.graph.stream_channels,
        ):
            self.emit("checkpoints", payload)

    def _emit_tasks(self, tasks: Collection[PreparedTask]) -> None:
        if not self.streams("tasks"):
            return
        metadata, tags = self.config.get("metadata", {}), self.config.get("tags", [])
        for task in tasks:
            if shown(task):
                self.emit("tasks", task_payload(task, metadata, tags))

    def _emit_task_result(self, task: PreparedTask, writes: Sequence[tuple[str, Any]]) -> None:
        if self.streams("tasks") and shown(task):
            self.emit("tasks", task_result_payload(task, writes, self.graph.stream_channels))

    def _emit_values(self, writes: bool | Sequence[tuple[str, Any]]) -> None:
        """A ``values`` chunk when ``writes`` touched an output key (a single key's value may
        be None, which is still a chunk)."""
        values = output_values(self.output_keys, writes, self.channels)
        if values is not MISSING:
            self.sink.put(self.ns_tuple, "values", values)

    def _emit_updates(self, task: PreparedTask, *, cached: bool = False) -> None:
        if not task.node.hidden and "updates" in self.sink.modes:
            self.emit(
                "updates",
                output_updates(
                    self.graph.stream_channels, [(task.name, task.writes)], cached=cached
                ),
            )

    emit_updates = _emit_updates

    def custom_writer(self) -> Callable[[Any], None] | None:
        if "custom" not in self.sink.modes:
            return None
        ns, sink = self.ns_tuple, self.sink

        def write(chunk: Any) -> None:
            sink.put(ns, "custom", chunk)

        return write

    @property
    def stream_eager(self) -> bool:
        """Stream chunks while a step's tasks run, not only between them.

        LangGraph does for an entrypoint (whose ``@task`` calls stream as they finish),
        and for streams of subgraphs, messages or custom chunks. A nested run's chunks
        are drained by its root.
        """
        sink = self.sink
        return sink.eager or (
            sink.parent is None and not self.is_nested and bool(self.graph.stream_eager)
        )

    def drain(self) -> list[StreamChunk]:
        """Take the stream chunks put so far (an executor that keeps them itself)."""
        return list(self.sink.drain())

    @property
    def retry_policy(self) -> Sequence[RetryPolicy]:
        """The graph's retry policies (a node's own come first, see ``_retry.py``)."""
        return self.graph.retry_policy

    def view(self) -> StepView:
        """A read-only picture of the loop now (see :class:`StepView`)."""
        return StepView(
            checkpoint_id=self.checkpoint["id"],
            checkpoint_ts=self.checkpoint["ts"],
            step=self.step,
            stop=self.stop,
            run_id=self.metadata.get("run_id"),
            status=self.status,
            interrupts=tuple(self.interrupts),
            tasks=tuple(sorted(self.tasks.values(), key=task_order)),
        )
