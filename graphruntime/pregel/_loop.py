"""The step API: one run of one graph on one thread namespace, a superstep at a time.

Every executor drives a run through the same calls on :class:`PregelLoop`:

1. build it from the thread's latest checkpoint (or one the executor loaded),
2. :meth:`~PregelLoop.first` applies the run's input or command, or
   :meth:`~PregelLoop.open_step` re-opens the step a run started at in another process,
3. :meth:`~PregelLoop.plan` prepares the step's tasks,
4. each task runs (:mod:`graphruntime.pregel._retry`) and :meth:`~PregelLoop.record`
   saves its outcome as pending writes,
5. :meth:`~PregelLoop.settle` turns the step's outcomes into an error or an
   interrupt, and :meth:`~PregelLoop.close` applies the writes and saves the
   next checkpoint.

In-process, :mod:`graphruntime.pregel._driver` makes these calls; on a cluster the
workers' coordinator and task jobs make the same ones. The algorithm (which tasks
run, how writes combine) is :mod:`graphruntime.pregel._algo`; this module owns the
state and the saver I/O around it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_CALL,
    CONFIG_KEY_CHECKPOINT_ID,
    CONFIG_KEY_CHECKPOINT_MAP,
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_NODE_ERROR,
    CONFIG_KEY_READ,
    CONFIG_KEY_READ_STATE,
    CONFIG_KEY_REPLAY_STATE,
    CONFIG_KEY_RESUME_MAP,
    CONFIG_KEY_RESUMING,
    CONFIG_KEY_RUNTIME,
    CONFIG_KEY_SCRATCHPAD,
    CONFIG_KEY_SEND,
    CONFIG_KEY_SHARED_SAVER,
    CONFIG_KEY_TASK_ID,
    CONFIG_KEY_THREAD_ID,
    CONTROL_WRITES,
    ERROR,
    ERROR_SOURCE_NODE,
    INPUT,
    INTERRUPT,
    NO_WRITES,
    NS_END,
    NS_SEP,
    NULL_TASK_ID,
    PREVIOUS,
    RESUME,
    RUN_MARK,
    TASKS,
    WRITES_IDX_MAP,
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
from graphruntime.constants import START
from graphruntime.errors import EmptyInputError, GraphBubbleUp, GraphInterrupt
from graphruntime.pregel._algo import (
    PreparedTask,
    StepContext,
    TaskWrites,
    apply_writes,
    create_checkpoint,
    increment,
    is_call_path,
    local_read,
    make_scratchpad,
    prepare_next_tasks,
    prepare_task,
    should_interrupt,
    task_finished,
    task_path_str,
)
from graphruntime.pregel._cache import cacheable
from graphruntime.pregel._call import CallSuspended, is_call
from graphruntime.pregel._calls import CallExecutor, LoopCalls
from graphruntime.pregel._delta import (
    DeltaTracker,
    aload_channels,
    detached,
    load_channels,
)
from graphruntime.pregel._exit_delta import ExitDeltaLog
from graphruntime.pregel._handlers import (
    HANDLER_MARK,
    error_handler_task,
    error_handler_tasks,
    match_cached,
    plan_error_handler,
    resume_error_handlers,
    routes_to_handler,
    succeeded,
)
from graphruntime.pregel._io import map_command, map_input, output_updates, output_values
from graphruntime.pregel._message_ids import ensure_message_ids
from graphruntime.pregel._node import GraphSpec
from graphruntime.pregel._replay import ReplayState
from graphruntime.pregel._resume import (
    is_resume_map,
    pending_interrupts,
    task_interrupts,
    validate_resume,
    writes_by_task,
)
from graphruntime.pregel._runtime import run_runtime, task_runtime
from graphruntime.pregel._saved import (
    channel_facts,
    sanitized_send,
    takes_task_path,
    without_untracked,
)
from graphruntime.pregel._stream import StreamSink
from graphruntime.pregel._task_config import RunConfig
from graphruntime.pregel._task_events import shown, task_payload, task_result_payload
from graphruntime.pregel.debug import map_debug_checkpoint
from graphruntime.runtime import RunControl, Runtime
from graphruntime.types import All, Command, Durability, Interrupt

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
    (:meth:`PregelLoop.aload`), and saves with them too (:meth:`PregelLoop.aflush`)."""


ALOAD = _ALoad()

_SaverCall = tuple[str, tuple[Any, ...]]

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


class TaskResult(NamedTuple):
    """A task's outcome as an executor hands it back.

    ``recorded``: the outcome is already saved as pending writes (and streamed) by
    whoever ran the task, e.g. a distributed task job; the loop must not record it again.
    """

    task: PreparedTask
    outcome: BaseException | None
    recorded: bool = False


def _metadata_from_config(config: RunnableConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for source in (config.get(CONF, {}), config.get("metadata", {})):
        for k, v in source.items():
            if k.startswith(("__", "checkpoint_", "langgraph_")) or k in (
                CONFIG_KEY_THREAD_ID,
                CONFIG_KEY_CHECKPOINT_MAP,
            ):
                continue
            if v is None or isinstance(v, (str, int, float, bool)):
                out[k] = v
    return out


def _dedupe_resume(writes: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    last = None
    for i, (c, _) in enumerate(writes):
        if c == RESUME:
            last = i
    if last is None:
        return list(writes)
    return [w for i, w in enumerate(writes) if w[0] != RESUME or i == last]


@dataclass(frozen=True, slots=True)
class _Position:
    """Where the run is, as managed values read it."""

    step: int
    stop: int


def task_order(task: PreparedTask) -> str:
    """The deterministic order of a step's tasks: how writes apply and results list."""
    return task_path_str(task.path[:3])


class PregelLoop(LoopCalls):
    """State of one run of one graph (root or nested) on one thread namespace.

    ``saved``: the checkpoint tuple an executor already loaded (e.g. with only some
    tasks' pending writes, for a job that runs those tasks); by default the loop
    loads the latest checkpoint (or the config's ``checkpoint_id``) from its saver.
    """

    checkpoint_config: RunnableConfig
    """The config of the last checkpoint saved (or loaded): pending writes go under it."""

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
        self.calls: CallExecutor | None = None
        """Runs the ``@task`` calls tasks make (see :class:`CallExecutor`); set by drivers."""
        self.task_errors: dict[str, BaseException] = {}
        """Errors of this step's failed tasks as their executor kept them, by task id.

        A saver keeps only an error's text (as LangGraph's); an executor that recorded
        more (a distributed job records the type and arguments) puts the rebuilt error
        here, so an error handler that reads a failure back gets the exception itself.
        """
        # record() and calls may come from several task threads at once
        self._lock = threading.RLock()
        self._call_futures: dict[str, Any] = {}
        self._written: set[str] = set()
        self._written_for: list[PendingWrite] | None = None
        self.runtime: Runtime[Any] = run_runtime(graph, config, options.context, options.control)
        self._untracked, deltas = channel_facts(graph)
        self.delta = DeltaTracker(graph.channel_specs, deltas)
        # an async run queues its saver calls here; its driver awaits them in order
        self._deferred: list[_SaverCall] | None = None
        if isinstance(saved, _ALoad):
            self._deferred = []
            return  # aload() reads the checkpoint
        if isinstance(saved, _Load):
            saved = self._read_saved()
        self._load(saved)

    async def aload(self) -> None:
        """Read the checkpoint with the saver's async methods (a loop built with ALOAD)."""
        saved = None
        if self.checkpointer is not None:
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

    def _saver_call(self, method: str, *args: Any) -> Any:
        """Call the saver now, or (an async run) queue the call for :meth:`aflush`."""
        assert self.checkpointer is not None
        if self._deferred is None:
            return getattr(self.checkpointer, method)(*args)
        self._deferred.append((method, args))
        return None

    async def aflush(self) -> None:
        """Await the saver calls an async run queued, in order."""
        deferred = self._deferred
        if not deferred or self.checkpointer is None:
            return
        while deferred:
            method, args = deferred.pop(0)
            result = await getattr(self.checkpointer, f"a{method}")(*args)
            if (
                method == "put"
                and result is not None
                and result[CONF].get(CONFIG_KEY_CHECKPOINT_ID) == self.checkpoint["id"]
            ):
                self.checkpoint_config = result

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

    def _replay_state(self) -> ReplayState | None:
        replay = self.config[CONF].get(CONFIG_KEY_REPLAY_STATE)
        if self.is_nested and not self.mapped_id and isinstance(replay, ReplayState):
            return replay
        return None

    def _read_saved(self) -> CheckpointTuple | None:
        if self.checkpointer is None:
            return None
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

    # --- pending writes -----------------------------------------------------------------

    def put_writes(self, task_id: str, writes: Sequence[tuple[str, Any]], path: str = "") -> None:
        if not writes:
            return
        if task_id == NULL_TASK_ID:
            self._put_null_writes(writes)
            return
        # rebuild the list only when this task saved writes before: a step of N tasks
        # then costs O(N), not O(N^2). As in the saver, where each control channel has a
        # row of its own, the task's earlier control writes stay unless these replace
        # them (an answer that failed leaves its task's interrupt pending)
        if task_id in self._tasks_with_writes():
            replaced = {c for c, _ in writes}
            self.pending_writes = [
                w
                for w in self.pending_writes
                if w[0] != task_id or (w[1] in WRITES_IDX_MAP and w[1] not in replaced)
            ]
        pending = self.pending_writes
        for c, v in writes:
            pending.append((task_id, c, v))
        self._written.add(task_id)
        if self._untracked:
            writes = without_untracked(writes, self._untracked)
        if self.durability == "exit":
            self._exit_written.add(task_id)
        elif self.checkpointer is not None:
            self._put_task_writes(self.checkpoint_config, writes, task_id, path)
            self.delta.saved(task_id, writes)

    def _put_task_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        path: str,
    ) -> None:
        assert self.checkpointer is not None
        method = "put_writes" if self._deferred is None else "aput_writes"
        if takes_task_path(type(self.checkpointer), method):
            self._saver_call("put_writes", config, list(writes), task_id, path)
        else:  # a saver written against the older three-argument contract
            self._saver_call("put_writes", config, list(writes), task_id)

    def _put_input_writes(self, *args: Any) -> None:
        self._saver_call("put_writes", *args)

    def _put_null_writes(self, writes: Sequence[tuple[str, Any]]) -> None:
        """Null-task writes accumulate over the runs that resume one step.

        A control write (a resume value) replaces the earlier one, so it is saved on
        its own, upserted. Savers key other writes by their position in the list, so
        those are saved after the step's earlier ones, as LangGraph does: each
        Command's update then lands in a slot of its own, and saving the same list
        again changes nothing.
        """
        control = [(c, v) for c, v in writes if c in WRITES_IDX_MAP]
        regular = [(c, v) for c, v in writes if c not in WRITES_IDX_MAP]
        replaced = {c for c, _ in control}
        earlier = [
            (c, v)
            for tid, c, v in self.pending_writes
            if tid == NULL_TASK_ID and c not in WRITES_IDX_MAP
        ]
        self.pending_writes = [
            w for w in self.pending_writes if not (w[0] == NULL_TASK_ID and w[1] in replaced)
        ]
        self.pending_writes.extend((NULL_TASK_ID, c, v) for c, v in [*control, *regular])
        if self.durability == "exit":
            self._exit_written.add(NULL_TASK_ID)
            if self._exit_log is not None:
                self._exit_log.record_untasked(self.step, NULL_TASK_ID, regular)
        elif self.checkpointer is not None:
            if control:
                self._saver_call("put_writes", self.checkpoint_config, control, NULL_TASK_ID)
            if regular:
                self._saver_call(
                    "put_writes", self.checkpoint_config, [*earlier, *regular], NULL_TASK_ID
                )
                self.delta.saved(NULL_TASK_ID, regular)

    def _tasks_with_writes(self) -> set[str]:
        # pending_writes is reassigned in several places; re-index when it changed identity
        if self._written_for is not self.pending_writes:
            written = set()
            for w in self.pending_writes:
                written.add(w[0])
            self._written = written
            self._written_for = self.pending_writes
        return self._written

    def _put_checkpoint(self, source: str) -> None:
        previous_metadata = self.metadata
        parents = dict(self.config[CONF].get(CONFIG_KEY_CHECKPOINT_MAP, {}))
        cached = self._metadata_for
        if cached is None or cached[0] is not self.config:
            cached = self._metadata_for = (self.config, _metadata_from_config(self.config))
        self.metadata = {
            **cached[1],
            "source": source,
            "step": self.step,
            "parents": parents,
        }
        self._stream_metadata = {"source": source, "step": self.step, "parents": parents}
        saving = self.checkpointer is not None and self.durability != "exit"
        snapshot = self.delta.plan_checkpoint(
            previous_metadata,
            self.metadata,
            self.channels,
            self.checkpoint["channel_versions"],
            self.updated_channels or (),
            saving=saving,
        )
        self.checkpoint = create_checkpoint(
            self.checkpoint,
            # unsaved, nobody reads the values: skip snapshotting every channel
            self.channels if saving else None,
            self.step,
            updated_channels=self.updated_channels,
            snapshot=snapshot,
            get_next_version=self.get_next_version,
            stored_versions=self.saved_versions,
            trigger_to_nodes=self.graph.trigger_to_nodes,
            # without a saver no one keeps a checkpoint: each step's takes over the last's
            reuse_maps=self.checkpointer is None,
        )
        if saving:
            self._save_checkpoint()
        self.step += 1

    def _save_checkpoint(self) -> None:
        """Save the current checkpoint, child of the last one saved."""
        if self._untracked and isinstance(
            sends := self.checkpoint["channel_values"].get(TASKS), list
        ):
            self.checkpoint["channel_values"][TASKS] = [
                sanitized_send(p, self._untracked) for p in sends
            ]
        if self.checkpointer is not None:
            # versions changed since the last saved checkpoint: apply_writes has already
            # updated self.checkpoint in place, so compare with what was saved, not with it
            new_versions = {
                k: v
                for k, v in self.checkpoint["channel_versions"].items()
                if self.saved_versions.get(k) != v
            }
            parent: dict[str, Any] = {
                CONFIG_KEY_THREAD_ID: self.config[CONF].get(CONFIG_KEY_THREAD_ID),
                CONFIG_KEY_CHECKPOINT_NS: self.ns,
            }
            if self.saved and self._saved_id is not None:
                parent[CONFIG_KEY_CHECKPOINT_ID] = self._saved_id
            self.prev_checkpoint_config = self.checkpoint_config if self.saved else None
            saved_config = self._saver_call(
                "put",
                {CONF: parent},
                copy_checkpoint(self.checkpoint),
                dict(self.metadata),
                new_versions,
            )
            if saved_config is None:  # deferred (an async run): what the saver will return
                saved_config = {CONF: {**parent, CONFIG_KEY_CHECKPOINT_ID: self.checkpoint["id"]}}
            self.checkpoint_config = saved_config
            self.saved = True
            self._saved_id = self.checkpoint["id"]
            self.saved_versions = dict(self.checkpoint["channel_versions"])
            self.delta.rebase()

    def exit(self, error: BaseException | None) -> None:
        """The run ended (``error``: how, if not normally): an ``"exit"`` run saves now.

        A subgraph that keeps no history of its own (it runs under its parent's task)
        saves only when it stops on an error or an interrupt, for the resume to find.
        """
        if self.durability != "exit" or self.checkpointer is None:
            return
        own_history = all(NS_END not in part for part in self.ns_tuple)
        if self.is_nested and error is None and not own_history:
            return
        if self.checkpoint["id"] != self._saved_id:
            # the steps this run kept in memory saved no writes: their delta writes go
            # on the anchor now; a DeltaChannel whose writes cannot (or whose cadence
            # says so) is snapshotted instead
            log = self._exit_log
            if log is not None:
                for task_id, writes in log.by_task().items():
                    self.delta.saved(task_id, writes)
            snapshot = self.delta.final_snapshot(
                self.metadata, self.channels, self.checkpoint["channel_versions"]
            )
            if log is not None:
                self._put_exit_delta_writes(log, snapshot)
            self.checkpoint = create_checkpoint(
                self.checkpoint,
                self.channels,
                self.step - 1,
                updated_channels=self.updated_channels,
                checkpoint_id=self.checkpoint["id"],
                snapshot=snapshot,
                get_next_version=self.get_next_version,
                stored_versions=self.saved_versions,
                trigger_to_nodes=self.graph.trigger_to_nodes,
            )
            self._save_checkpoint()
        for task_id, writes in writes_by_task(self.pending_writes, None, null=True).items():
            if task_id not in self._exit_written:
                continue
            if task_id == NULL_TASK_ID:  # savers key regular writes by position: control last
                writes.sort(key=lambda w: w[0] in WRITES_IDX_MAP)
            task = self.tasks.get(task_id)
            path = task_order(task) if task is not None else ""
            self._put_task_writes(self.checkpoint_config, writes, task_id, path)
            self.delta.saved(task_id, writes)
        self._exit_written.clear()

    def _put_exit_delta_writes(self, log: ExitDeltaLog, snapshot: Collection[str]) -> None:
        """Store an ``"exit"`` run's delta writes on its anchor, before the final
        checkpoint that replays them (a failed write leaves that one unsaved). On a new
        thread the anchor is a stub saved first (see _exit_delta.py)."""
        groups = log.groups(snapshot)
        if not groups:
            return
        if not self.saved:
            self._save_stub(log.anchor_id)
        for (task_id, path), writes in groups.items():
            self._put_task_writes(self.checkpoint_config, writes, task_id, path)

    def _save_stub(self, checkpoint_id: str) -> None:
        """Save an empty checkpoint (no parent) as the one this run started from."""
        stub = empty_checkpoint()
        stub["id"] = checkpoint_id
        config: RunnableConfig = {
            CONF: {
                CONFIG_KEY_THREAD_ID: self.config[CONF].get(CONFIG_KEY_THREAD_ID),
                CONFIG_KEY_CHECKPOINT_NS: self.ns,
            }
        }
        saved_config = self._saver_call("put", config, stub, {"step": -2}, {})
        if saved_config is None:  # deferred (an async run): what the saver will return
            saved_config = {CONF: {**config[CONF], CONFIG_KEY_CHECKPOINT_ID: checkpoint_id}}
        self.checkpoint_config = saved_config
        self.saved = True
        self._saved_id = checkpoint_id

    # --- starting a run -----------------------------------------------------------------

    def pending_interrupts(self) -> dict[str, Interrupt]:
        """Interrupts of unfinished tasks in the loaded step, by id."""
        return pending_interrupts(self.pending_writes)

    def _has_state(self) -> bool:
        return bool(self.checkpoint["channel_versions"])

    def _resuming(self, input: Any) -> bool:
        default = input is None or isinstance(input, Command)
        return self._has_state() and bool(self.config[CONF].get(CONFIG_KEY_RESUMING, default))

    def first(self, input: Any, *, run_id: str | None = None) -> None:
        """Start the run: apply its input, its Command, or resume the interrupted step.

        ``run_id``: a run that may start twice (an executor that can crash and retry)
        names itself; its Command is saved with a mark, and a second ``first()`` of the
        same run only re-opens the step (as :meth:`open_step`) instead of recording and
        checking the Command again.
        """
        if run_id is not None and any(
            w[0] == NULL_TASK_ID and w[1] == RUN_MARK and w[2] == run_id
            for w in self.pending_writes
        ):
            self.open_step(input)
            return
        is_command = isinstance(input, Command)
        has_state = self._has_state()
        is_resuming = self._resuming(input)
        resuming_set_by_parent = CONFIG_KEY_RESUMING in self.config[CONF]
        if self.is_nested:
            # a resume reaches a subgraph as its parent's flag: it travels in time only
            # when addressed itself, or replayed by its parent
            time_travel = self.addressed and (
                bool(self.mapped_id) or not self.config[CONF].get(CONFIG_KEY_RESUMING, False)
            )
        else:
            time_travel = self.addressed and not (is_command and input.resume is not None)
        superseded = self._superseded()
        # finished tasks run again on a replay, and on a resume of a checkpoint the
        # thread moved past (their saved writes may not be what that branch saw)
        self.replaying = time_travel or superseded
        replay_bound = self.checkpoint["id"] if self.saved else None
        if self.metadata.get("source") in ("update", "fork") and self.prev_checkpoint_config:
            # an edit of the past: its subgraphs replay from before the edited step
            replay_bound = self.prev_checkpoint_config[CONF].get(CONFIG_KEY_CHECKPOINT_ID)
        if time_travel:
            self.pending_writes = [w for w in self.pending_writes if w[1] != RESUME]
        # On a thread with no state a Command (without resume) is the run's input: the
        # hidden __start__ node applies its update and goto, as LangGraph does.
        command_as_input = is_command and not has_state and input.resume is None
        if command_as_input and not list(map_command(input)):
            raise EmptyInputError(
                "Received empty Command input: give Command(resume=...), update=... or goto=..."
            )
        # A replay saves a fork checkpoint to start its branch from, unless it replays
        # an edit (update_state already made one) that nothing was built on yet.
        forks = (
            is_resuming
            and time_travel
            and (self.metadata.get("source") not in ("update", "fork") or superseded)
        )
        if is_command and not command_as_input:
            # a fork carries its Command itself: the checkpoint it replays may have
            # children, which would read writes saved on it
            self._record_command(input, run_id, save=not forks)
        null = self.open_step(input)
        if is_resuming:
            if forks:
                self.pending_writes = [w for w in self.pending_writes if w[1] != INTERRUPT]
                keep = self.pending_writes
                self._put_checkpoint("fork")
                self.pending_writes = [w for w in keep if w[0] == NULL_TASK_ID]
            self._emit_values(True)
        elif (input is not None and not is_command) or command_as_input:
            # a Command as input goes to the hidden __start__ node, which applies it
            writes = (
                [(START, input)]
                if command_as_input
                else map_input(self.graph.input_channels, input)
            )
            if not writes:
                raise EmptyInputError(f"Received no input for {self.graph.input_channels}")
            discard = prepare_next_tasks(
                self.checkpoint,
                self.channels,
                self._step_context(),
                updated_channels=self.updated_channels,
                for_execution=False,
            )
            input_writes = writes
            # saved on the checkpoint the input builds on, for the input checkpoint to
            # replay; a new thread, or one addressed by id, snapshots instead
            saved_input = self.delta.save_input(
                input_writes,
                self.checkpoint["id"],
                self._put_input_writes
                if self.checkpointer is not None
                and self.saved
                and not self.addressed
                and self.durability != "exit"
                else None,
                self.checkpoint_config,
            )
            if saved_input is not None and self._exit_log is not None:
                self._exit_log.record_untasked(self.step, *saved_input)
            self.updated_channels = apply_writes(
                self.checkpoint,
                self.channels,
                [*discard.values(), TaskWrites(INPUT, (), (), input_writes)],
                self.get_next_version,
                self.graph.trigger_to_nodes,
            )
            self.pending_writes = []
            self._put_checkpoint("input")
        elif is_command and not (has_state or null):
            raise EmptyInputError("Received empty Command input")
        elif not resuming_set_by_parent:
            raise EmptyInputError(f"Received no input for {self.graph.input_channels}")
        if not self.is_nested and time_travel and replay_bound:
            conf = {**self.config[CONF], CONFIG_KEY_REPLAY_STATE: ReplayState(replay_bound)}
            self.config = {**self.config, CONF: conf}

    def open_step(self, input: Any) -> list[tuple[str, Any]]:
        """Bring the loaded step to the state a run started with ``input`` sees in it.

        Applies the null task's pending writes (a Command's ``update``/``goto``) to the
        channels, and for a resume marks interrupts seen and takes the resume map. Saves
        and streams nothing: it only rebuilds memory, so an executor that runs the step
        a run started at in another process (a task job, the coordinator after the
        step's barrier) calls it too, with the run's input. :meth:`first` calls it
        after recording the input. Returns the null writes it applied.
        """
        resuming = self._resuming(input)
        null = self._apply_null_writes()
        if resuming:
            seen = self.checkpoint["versions_seen"].setdefault(INTERRUPT, {})
            seen.update(self.checkpoint["channel_versions"])
        if isinstance(input, Command) and is_resume_map(input.resume):
            self.resume_map = input.resume
        self.config = {**self.config, CONF: {**self.config[CONF], CONFIG_KEY_RESUMING: resuming}}
        return null

    def _apply_null_writes(self) -> list[tuple[str, Any]]:
        """Apply the null task's pending writes (a Command's update, goto) in memory."""
        null = [(c, v) for tid, c, v in self.pending_writes if tid == NULL_TASK_ID]
        if not null:
            return null
        # The checkpoint's values may be shared with a saver's cache of decoded steps;
        # a reducer that mutates its left operand must not change the cached copy.
        for channel in {c for c, _ in null if c in self.channels}:
            self.channels[channel] = detached(
                self.graph.channel_specs[channel], self.channels[channel]
            )
        self.delta.applied(NULL_TASK_ID, null)
        updated = apply_writes(
            self.checkpoint,
            self.channels,
            [TaskWrites(INPUT, (), (), null)],
            self.get_next_version,
            self.graph.trigger_to_nodes,
        )
        if self.updated_channels is not None:
            self.updated_channels.update(updated)
        return null

    def _head_config(self) -> RunnableConfig | None:
        """The config of the namespace's latest checkpoint, when the root run addressed
        another one (a subgraph addressed is a replay whatever its head)."""
        if self.is_nested or not self.addressed or not self.saved or self.checkpointer is None:
            return None
        conf = {k: v for k, v in self.saver_config()[CONF].items() if k != CONFIG_KEY_CHECKPOINT_ID}
        return {CONF: conf}

    def _superseded(self) -> bool:
        """Whether the run addressed a checkpoint the thread has moved past."""
        if self._head_id is not _UNREAD:
            return self._head_id is not None and self._head_id != self.checkpoint["id"]
        head = self._head_config()
        if head is None or self.checkpointer is None:
            return False
        latest = self.checkpointer.get_tuple(head)
        return latest is not None and latest.checkpoint["id"] != self.checkpoint["id"]

    def _record_command(self, cmd: Command[Any], run_id: str | None, *, save: bool = True) -> None:
        resume = cmd.resume
        resume_map = resume is not None and is_resume_map(resume)
        if resume is not None:
            if self.checkpointer is None:
                raise RuntimeError("Cannot use Command(resume=...) without checkpointer")
            if not self.is_nested:
                self.validate_command(cmd)
        writes = [(c, v) for _, c, v in map_command(cmd) if not (c == RESUME and resume_map)]
        if self.delta.enabled:
            ensure_message_ids(self.graph.channel_specs, writes)
        if not writes and not resume_map:
            raise EmptyInputError(
                "Received empty Command input: give Command(resume=...), update=... or goto=..."
            )
        if run_id is not None:
            writes.append((RUN_MARK, run_id))
        if writes and save:
            self.put_writes(NULL_TASK_ID, writes)
        elif writes:
            self.pending_writes.extend((NULL_TASK_ID, c, v) for c, v in writes)

    def validate_command(self, cmd: Command[Any]) -> None:
        """Check a resume command against this step's pending interrupts; writes nothing."""
        if cmd.resume is None:
            return
        validate_resume(
            cmd.resume,
            thread=self.config[CONF].get(CONFIG_KEY_THREAD_ID),
            has_state=self._has_state(),
            pending=self.pending_interrupts(),
            edited_while_paused=self._edited_while_paused(),
            has_next=self._has_next(),
        )

    def _has_next(self) -> bool:
        return self._has_state() and bool(
            prepare_next_tasks(
                self.checkpoint, self.channels, self._step_context(), for_execution=False
            )
        )

    def _edited_while_paused(self) -> bool:
        if self.metadata.get("source") != "update":
            return False
        return bool(
            prepare_next_tasks(
                self.checkpoint, self.channels, self._step_context(), for_execution=False
            )
        )

    # --- steps --------------------------------------------------------------------------

    def plan(self) -> bool:
        """Prepare the next step's tasks; False when the run is over.

        Over means: nothing left to run (``status`` "done") or the recursion limit
        reached ("out_of_steps"). Tasks that already finished in an earlier run get
        their saved writes back (and stream them as cached); a static breakpoint
        before the step raises :class:`GraphInterrupt`.
        """
        if self.step > self.stop:
            self.status = "out_of_steps"
            if self.checkpointer is not None and self.streams("checkpoints"):
                self._emit_checkpoint(self._next_tasks().values())
            return False
        self._call_futures = {}
        self.tasks = self._next_tasks()
        if self.checkpointer is not None:  # (the guards inline: these run every step)
            self._emit_checkpoint(self.tasks.values())
        if not self.tasks:
            self.status = "done"
            return False
        cached = []
        if self.pending_writes and not self.replaying:
            cached = self._reattach_finished(self.tasks.values())
            resume_error_handlers(self)
        if self.graph.cache is not None:
            match_cached(self, self.tasks.values())
        if self.options.interrupt_before and should_interrupt(
            self.checkpoint, self.options.interrupt_before, self.tasks.values()
        ):
            self.status = "interrupt_before"
            raise GraphInterrupt()
        # after the breakpoint check: a resume passes the next step's breakpoints, so a
        # drain in front of one must stop there, or the resumed run would skip it
        control = self.runtime.control
        if control is not None and control.drain_requested:
            self.status = "draining"
            return False
        if "tasks" in self.sink.modes or "debug" in self.sink.modes:
            self._emit_tasks(self.tasks.values())
        for task in cached:
            self._emit_updates(task, cached=True)
        return True

    def _next_tasks(self) -> dict[str, PreparedTask]:
        return prepare_next_tasks(
            self.checkpoint,
            self.channels,
            self._step_context(),
            updated_channels=self.updated_channels,
        )

    # --- cached results and error handlers (see _handlers.py) ---------------------------

    def routes_to_handler(self, task: PreparedTask, outcome: BaseException | None) -> bool:
        """Whether ``outcome`` is a failure that ``task``'s error handler takes over."""
        return routes_to_handler(task, outcome)

    def error_handler_task(self, failed: PreparedTask, error: BaseException) -> PreparedTask | None:
        """The task of ``failed``'s error handler in this step, registered with the step.

        Its id follows from the failed task's, so every process that asks gets the
        same task; a handler that already finished gets its saved writes back.
        """
        return error_handler_task(self, failed, error)

    def error_handler_tasks(self, results: Sequence[TaskResult]) -> list[PreparedTask]:
        """Handlers still to run for the step's failures (an executor that could not
        start them while the step ran gets them here, as one more batch)."""
        if succeeded(results):  # checked here too: one call less on every step
            return []
        return error_handler_tasks(self, results)

    def plan_task(self, path: Sequence[Any]) -> PreparedTask | None:
        """Prepare only the task at ``path`` of this step (with its saved writes, if finished).

        For an executor that runs some of a step's tasks: a fan-out of N tasks then
        costs O(N) across its executors, not O(N²). A ``@task`` call's path re-creates
        the call by replaying its callers (:meth:`plan_call`).
        """
        if is_call_path(path):
            return self.plan_call(path)
        if HANDLER_MARK in path:  # (*failed task's path, "node_error_handler", False)
            return plan_error_handler(self, path[: list(path).index(HANDLER_MARK)])
        task = prepare_task(self.checkpoint, self.channels, self._step_context(), path)
        if task is None:
            return None
        self.tasks[task.id] = task
        self._reattach_finished([task])
        return task

    def _reattach_finished(self, tasks: Collection[PreparedTask]) -> list[PreparedTask]:
        """Give finished tasks their saved output writes back; returns those tasks."""
        by_task = writes_by_task(self.pending_writes)  # one pass: O(N) for N tasks
        reattached = []
        for task in tasks:
            writes = by_task.get(task.id, [])
            if writes and task_finished(writes):
                task.writes.extend(w for w in writes if w[0] not in CONTROL_WRITES)
                reattached.append(task)
                self.delta.handed_back(task.id)
        return reattached

    reattach_finished = _reattach_finished

    def runnable_tasks(self) -> list[PreparedTask]:
        """The step's tasks that still have to run, in task order."""
        runnable = []
        for t in self.tasks.values():
            if not t.writes:
                runnable.append(t)
        return runnable

    def recorded_writes(self, task_id: str) -> list[tuple[str, Any]]:
        """What was saved for a task of this step (outputs and control writes)."""
        return writes_by_task(self.pending_writes, {task_id: None}).get(task_id, [])

    def recorded_interrupts(self, task_id: str) -> list[Interrupt]:
        """The interrupts a task of this step saved, if it paused."""
        return task_interrupts(self.recorded_writes(task_id))

    def waiting_interrupts(self, task_id: str) -> list[Interrupt]:
        """The interrupts a task of this step waits on, as ``get_state`` shows them: those
        it saved, unless it finished (a task whose answer failed still waits)."""
        writes = self.recorded_writes(task_id)
        if task_finished(writes):
            return []
        return [i for c, v in writes if c == INTERRUPT for i in v]

    def recorded_failure(self, task_id: str) -> BaseException | None:
        """How a task of this step that did not finish ended: its error, or its interrupt.

        For an executor that ran a ``@task`` call earlier in the same run (a job, in
        another process): the caller, running again, gets this outcome from the call's
        future, as it would have in one process, instead of running it again.
        """
        writes = self.recorded_writes(task_id)
        error = next((v for c, v in writes if c == ERROR), None)
        if error is not None:
            return error if isinstance(error, BaseException) else Exception(error)
        interrupts = task_interrupts(writes)
        return GraphInterrupt(tuple(interrupts)) if interrupts else None

    def task_config(self, task: PreparedTask) -> RunnableConfig:
        """The config a task's node sees: its namespace, scratchpad and write callbacks."""
        base = self._run_config()
        checkpoint_id = self.checkpoint["id"]
        scratchpad = make_scratchpad(
            self.pending_writes,
            task.id,
            task.checkpoint_ns,
            resume_map=self.resume_map,
            parent=self.parent_scratchpad,
            step=self.step,
            stop=self.stop,
            null_resume=self._null_resume(task.id),
        )
        channels = self.channels
        managed = self._step_context().managed_values if self.graph.managed else None

        def read(select: Sequence[str] | str, fresh: bool = False) -> Any:
            values = local_read(channels, task.writes, select, fresh=fresh)
            if managed and isinstance(values, dict) and not isinstance(select, str):
                values.update((k, managed[k]) for k in select if k in managed)
            return values

        configurable = base.configurable.copy()
        configurable[CONFIG_KEY_SEND] = task.writes.extend
        configurable[CONFIG_KEY_READ] = read
        configurable[CONFIG_KEY_READ_STATE] = lambda: local_read(
            channels, task.writes, list(channels), fresh=True
        )
        configurable[CONFIG_KEY_SCRATCHPAD] = scratchpad
        configurable[CONFIG_KEY_CHECKPOINT_NS] = task.checkpoint_ns
        configurable[CONFIG_KEY_TASK_ID] = task.id
        configurable[CONFIG_KEY_CHECKPOINT_MAP] = base.checkpoint_map(checkpoint_id)
        configurable[CONFIG_KEY_CALL] = self.call_callback(task, scratchpad)
        configurable[CONFIG_KEY_RUNTIME] = task_runtime(
            self.runtime,
            task,
            base.writer,
            checkpoint_id=checkpoint_id,
            thread_id=base.thread_id,
            run_id=base.run_id,
            previous=self.checkpoint["channel_values"].get(PREVIOUS),
            first_attempt=time.time(),
        )
        if task.node_error is not None:
            configurable[CONFIG_KEY_NODE_ERROR] = task.node_error
        metadata = base.metadata.copy()
        metadata["langgraph_step"] = self.step
        metadata["langgraph_node"] = task.name
        metadata["langgraph_triggers"] = task.triggers
        metadata["langgraph_path"] = task.path
        metadata["langgraph_checkpoint_ns"] = task.checkpoint_ns
        node = task.node
        if node.metadata:
            metadata.update(node.metadata)
        config: RunnableConfig = base.template.copy()  # type: ignore[assignment]
        config[CONF] = configurable
        config["metadata"] = metadata
        config["tags"] = [*base.tags, *node.tags] if node.tags else base.tags.copy()
        if task.callbacks is not None:  # a @task call: a child of its caller's run
            config["callbacks"] = task.callbacks
        elif base.child_callbacks is not None:
            # the graph's LangChain run (see _callbacks.py): tasks are its children
            config["callbacks"] = base.child_callbacks.get_child(f"graph:step:{self.step}")
        return config

    def _run_config(self) -> RunConfig:
        """What every task config of this run shares (rebuilt when the config changes)."""
        base = self._run_base
        if base is None or not base.matches(self.config, self.resume_map):
            base = RunConfig(
                self.config,
                ns=self.ns,
                resume_map=self.resume_map,
                checkpointer=self.checkpointer,
                sink=self.sink,
                writer=self.custom_writer(),
            )
            self._run_base = base
        return base

    def _null_resume(self, task_id: str) -> Callable[[bool], Any]:
        """How a task execution takes the step's unaddressed resume value.

        The first task of the step to reach an ``interrupt()`` it has no answer for
        takes it (:attr:`resume_taken_by`); any other task then interrupts. The task
        that took it gets it again when it runs again (a caller replayed after its
        calls), but each execution takes it once.
        """
        taken_here = False

        def take(consume: bool) -> Any:
            nonlocal taken_here
            with self._lock:
                write = next(
                    (w for w in self.pending_writes if w[0] == NULL_TASK_ID and w[1] == RESUME),
                    None,
                )
                if write is not None:
                    if taken_here or self.resume_taken_by not in (None, task_id):
                        return None
                    if consume:
                        self.resume_taken_by = task_id
                        taken_here = True
                    return write[2]
            if self.parent_scratchpad is not None:
                return self.parent_scratchpad.get_null_resume(consume)
            return None

        return take

    def record(self, task: PreparedTask, outcome: BaseException | None) -> None:
        """Save a task's outcome as pending writes and stream it."""
        if outcome is not None and isinstance(outcome, CallSuspended):
            return  # it runs again once its calls' results are saved
        with self._lock:
            self._record(task, outcome)

    def _record(self, task: PreparedTask, outcome: BaseException | None) -> None:
        # the path goes to the saver only: no saver, no sort key to build
        path = task_order(task) if self.checkpointer is not None else ""
        if outcome is None:
            writes = _dedupe_resume(task.writes)
            if self.delta.enabled:
                ensure_message_ids(self.graph.channel_specs, writes)
            for c, _ in writes:
                if c not in CONTROL_WRITES:
                    break
            else:  # only control writes (or none): mark the task as done
                writes.append((NO_WRITES, None))
            task.writes[:] = writes
            self.put_writes(task.id, writes, path)
            if "updates" in self.sink.modes:
                self._emit_updates(task)
            if task.cache_key is not None and cacheable(writes):
                namespace, key, ttl = task.cache_key
                self.graph.cache.set({(namespace, key): (list(writes), ttl)})
        elif isinstance(outcome, GraphInterrupt):
            resume = [w for w in _dedupe_resume(task.writes) if w[0] == RESUME]
            writes = [(INTERRUPT, tuple(outcome.interrupts)), *resume]
            self.put_writes(task.id, writes, path)
            # a call's interrupt reaches its caller, who shows it
            if outcome.interrupts and not is_call(task):
                self.emit("updates", {INTERRUPT: tuple(outcome.interrupts)})
                values = output_values(self.output_keys, True, self.channels)
                if isinstance(values, dict):
                    self.emit("values", {**values, INTERRUPT: tuple(outcome.interrupts)})
                else:  # a single output key: the chunk shows only the interrupts
                    self.emit("values", {INTERRUPT: tuple(outcome.interrupts)})
        elif isinstance(outcome, GraphBubbleUp):
            return  # a drain or a Command for a parent graph: nothing of this task is saved
        elif routes_to_handler(task, outcome):
            # the handler takes the error over: the task's own writes are dropped, and
            # the marker tells a resumed run to run the handler, not the task again
            task.writes[:] = [(ERROR, outcome), (ERROR_SOURCE_NODE, task.name)]
            writes = task.writes
            self.put_writes(task.id, writes, path)
        else:  # a failure, or a cancelled call
            writes = [*task.writes, (ERROR, outcome)]
            self.put_writes(task.id, writes, path)
        if "tasks" in self.sink.modes or "debug" in self.sink.modes:
            self._emit_task_result(task, writes)

    def settle(self, results: Sequence[TaskResult]) -> None:
        """After every task of the step ended: raise its error, or its interrupts.

        Results are taken in task order, whatever order they finished in, so the first
        error raised and the interrupts listed are the same on every executor.
        """
        if succeeded(results):
            return
        ordered = sorted(results, key=lambda r: task_order(r.task))
        for result in ordered:
            if (
                result.outcome is not None
                and not isinstance(result.outcome, GraphBubbleUp)
                and not routes_to_handler(result.task, result.outcome)
            ):
                raise result.outcome
        for result in ordered:
            if isinstance(result.outcome, GraphBubbleUp) and not isinstance(
                result.outcome, GraphInterrupt
            ):
                raise result.outcome  # a ParentCommand travelling up, a drained subgraph
        paused = [r.outcome for r in ordered if isinstance(r.outcome, GraphInterrupt)]
        if paused:
            self.status = "interrupted"
            self.interrupts = [i for exc in paused for i in exc.interrupts]
            raise GraphInterrupt(tuple(self.interrupts))

    def close(self) -> None:
        """Apply the step's writes, save the next checkpoint, check ``interrupt_after``."""
        tasks = list(self.tasks.values())
        if self.delta.enabled:
            for task in tasks:
                self.delta.applied(task.id, task.writes)
        if (log := self._exit_log) is not None:
            # writes handed back to a resumed step's finished tasks are on the anchor
            log.record_step(
                self.step,
                (
                    (t.id, task_order(t), t.writes)
                    for t in tasks
                    if not (t.id in log.loaded and self.delta.was_handed_back(t.id))
                ),
            )
        self.updated_channels = apply_writes(
            self.checkpoint,
            self.channels,
            tasks,
            self.get_next_version,
            self.graph.trigger_to_nodes,
        )
        step_writes = tasks[0].writes if len(tasks) == 1 else [w for t in tasks for w in t.writes]
        self._emit_values(step_writes)
        self.pending_writes = []
        self._put_checkpoint("loop")
        self.replaying = False
        if self.options.interrupt_after and should_interrupt(
            self.checkpoint, self.options.interrupt_after, tasks
        ):
            self.status = "interrupt_after"
            # the step that would stream this checkpoint never runs
            if self.checkpointer is not None and self.streams("checkpoints"):
                self._emit_checkpoint(self._next_tasks().values())
            raise GraphInterrupt()
        # only the step a run resumed is a resume; later steps (and their subgraphs) are not
        if CONFIG_KEY_RESUMING in self.config[CONF]:
            conf = dict(self.config[CONF])
            del conf[CONFIG_KEY_RESUMING]
            self.config = {**self.config, CONF: conf}

    # --- outputs ------------------------------------------------------------------------

    def output(self) -> Any:
        """The output of the current state: what a ``values`` chunk of it holds."""
        return output_values(self.output_keys, True, self.channels)

    def values_with_pending(self) -> Any:
        """On an interrupted exit: the state with finished siblings' writes applied
        (MISSING when they changed no output key)."""
        if not any(t.writes for t in self.tasks.values()):
            return MISSING
        checkpoint = copy_checkpoint(self.checkpoint)
        channels = {k: c.copy() for k, c in self.channels.items()}
        updated = apply_writes(
            checkpoint,
            channels,
            self.tasks.values(),
            self.get_next_version,
            self.graph.trigger_to_nodes,
        )
        keys = {self.output_keys} if isinstance(self.output_keys, str) else self.output_keys
        if updated.isdisjoint(keys):
            return MISSING
        return output_values(self.output_keys, True, channels)
