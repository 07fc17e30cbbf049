"""The in-process driver: loads a thread, ticks supersteps, saves checkpoints.

The loop owns I/O (the saver) and bookkeeping; every decision about which
tasks run and how writes combine is delegated to :mod:`graphruntime.pregel._algo`.
Task execution is left to the caller (:mod:`graphruntime.pregel._drive`), so
the same loop serves ``stream`` and ``astream``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_CHECKPOINT_ID,
    CONFIG_KEY_CHECKPOINT_MAP,
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_CHECKPOINTER,
    CONFIG_KEY_CUSTOM_WRITER,
    CONFIG_KEY_READ,
    CONFIG_KEY_RESUME_MAP,
    CONFIG_KEY_RESUMING,
    CONFIG_KEY_SCRATCHPAD,
    CONFIG_KEY_SEND,
    CONFIG_KEY_STREAM,
    CONFIG_KEY_TASK_ID,
    CONFIG_KEY_THREAD_ID,
    CONTROL_WRITES,
    ERROR,
    INPUT,
    INTERRUPT,
    NO_WRITES,
    NS_SEP,
    NULL_TASK_ID,
    RESUME,
    WRITES_IDX_MAP,
)
from graphruntime._internal._scratchpad import Scratchpad
from graphruntime.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointTuple,
    PendingWrite,
    copy_checkpoint,
    empty_checkpoint,
)
from graphruntime.constants import START
from graphruntime.errors import (
    EmptyInputError,
    GraphInterrupt,
    InvalidResumeError,
)
from graphruntime.pregel._algo import (
    PreparedTask,
    StepContext,
    TaskWrites,
    apply_writes,
    channels_from_checkpoint,
    create_checkpoint,
    increment,
    local_read,
    make_scratchpad,
    prepare_next_tasks,
    prepare_task,
    should_interrupt,
    task_finished,
)
from graphruntime.pregel._io import map_command, output_updates, output_values
from graphruntime.types import Command, Interrupt

if TYPE_CHECKING:
    from graphruntime.pregel.main import Pregel

StreamChunk = tuple[tuple[str, ...], str, Any]
Status = Literal[
    "pending", "done", "interrupt_before", "interrupt_after", "out_of_steps", "interrupted"
]

_HEX = frozenset("0123456789abcdef")


def is_resume_map(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and len(k) == 32 and set(k) <= _HEX for k in value
    )


class StreamSink:
    """Collects stream chunks from a run and its subgraphs, filtered by mode."""

    def __init__(
        self,
        modes: set[str],
        subgraphs: bool,
        root_ns: tuple[str, ...] = (),
        parent: StreamSink | None = None,
    ) -> None:
        self.modes = modes
        self.subgraphs = subgraphs
        self.root_ns = root_ns
        self.parent = parent
        self.chunks: deque[StreamChunk] = deque()

    def put(self, ns: tuple[str, ...], mode: str, payload: Any) -> None:
        if mode in self.modes and (ns == self.root_ns or self.subgraphs):
            self.chunks.append((ns, mode, payload))

    def drain(self) -> Iterator[StreamChunk]:
        # popleft is atomic, so chunks appended by task threads meanwhile are never lost
        chunks = self.chunks
        while chunks:
            yield chunks.popleft()


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


class PregelLoop:
    """State of one run of one graph (root or nested) on one thread."""

    def __init__(
        self,
        graph: Pregel,
        input: Any,
        config: RunnableConfig,
        *,
        checkpointer: BaseCheckpointSaver | None,
        sink: StreamSink,
        interrupt_before: Sequence[str] | Literal["*"],
        interrupt_after: Sequence[str] | Literal["*"],
        recursion_limit: int,
        output_keys: Sequence[str],
        writes_of: Collection[str] | None = None,
    ) -> None:
        self.output_keys = list(output_keys)
        self.writes_of = writes_of
        self.graph = graph
        self.input = input
        self.config = config
        self.checkpointer = checkpointer
        self.sink = sink
        self.interrupt_before = interrupt_before
        self.interrupt_after = interrupt_after
        conf = config[CONF]
        self.is_nested = CONFIG_KEY_TASK_ID in conf
        self.ns: str = conf.get(CONFIG_KEY_CHECKPOINT_NS, "")
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
        self.recursion_limit = recursion_limit
        self.replaying = False
        self._written: set[str] = set()
        self._written_for: list[PendingWrite] | None = None
        self._load()
        self.stop = self.step + recursion_limit + 1

    # --- setup ---------------------------------------------------------------------------

    def _saver_config(self) -> RunnableConfig:
        conf = self.config[CONF]
        return {
            CONF: {
                CONFIG_KEY_THREAD_ID: conf.get(CONFIG_KEY_THREAD_ID),
                CONFIG_KEY_CHECKPOINT_NS: self.ns,
                **(
                    {CONFIG_KEY_CHECKPOINT_ID: conf[CONFIG_KEY_CHECKPOINT_ID]}
                    if conf.get(CONFIG_KEY_CHECKPOINT_ID) and not self.is_nested
                    else {}
                ),
            }
        }

    def _load(self) -> None:
        saved: CheckpointTuple | None = None
        if self.checkpointer is not None and self.writes_of is not None:
            # a task job: the other tasks' writes of a big step are not its business
            saved = self.checkpointer.get_task_tuple(self._saver_config(), self.writes_of)
        elif self.checkpointer is not None:
            saved = self.checkpointer.get_tuple(self._saver_config())
        self.addressed = bool(
            not self.is_nested and self.config[CONF].get(CONFIG_KEY_CHECKPOINT_ID)
        )
        if saved is not None:
            self.checkpoint: Checkpoint = copy_checkpoint(saved.checkpoint)
            self.metadata: dict[str, Any] = dict(saved.metadata)
            self.checkpoint_config: RunnableConfig = saved.config
            self.saved = True
            self.saved_versions: dict[str, Any] = dict(saved.checkpoint["channel_versions"])
            self.pending_writes = list(saved.pending_writes or [])
        else:
            self.checkpoint = empty_checkpoint()
            self.metadata = {"step": -2}
            self.checkpoint_config = self._saver_config()
            self.saved = False
            self.saved_versions = {}
        self.channels = channels_from_checkpoint(self.graph.channel_specs, self.checkpoint)
        self.step: int = self.metadata.get("step", -2) + 1
        self.updated_channels = (
            set(self.checkpoint["updated_channels"] or ())
            if self.checkpoint.get("updated_channels") is not None
            else None
        )

    def _step_context(self) -> StepContext:
        return StepContext(
            nodes=self.graph.nodes,
            trigger_to_nodes=self.graph.trigger_to_nodes,
            parent_ns=self.ns,
            step=self.step,
        )

    def emit(self, mode: str, payload: Any) -> None:
        if payload is not None:
            self.sink.put(self.ns_tuple, mode, payload)

    # --- pending writes -------------------------------------------------------------------

    def put_writes(self, task_id: str, writes: Sequence[tuple[str, Any]], path: str = "") -> None:
        if not writes:
            return
        if task_id == NULL_TASK_ID:
            # null writes accumulate; a later control write (e.g. RESUME) replaces the earlier
            replaced = {c for c, _ in writes if c in WRITES_IDX_MAP}
            self.pending_writes = [
                w for w in self.pending_writes if not (w[0] == NULL_TASK_ID and w[1] in replaced)
            ]
            self.pending_writes.extend((NULL_TASK_ID, c, v) for c, v in writes)
        else:
            # rebuild the list only when this task saved writes before: a step of N tasks
            # then costs O(N), not O(N^2)
            if task_id in self._tasks_with_writes():
                self.pending_writes = [w for w in self.pending_writes if w[0] != task_id]
            self.pending_writes.extend((task_id, c, v) for c, v in writes)
            self._written.add(task_id)
        if self.checkpointer is not None:
            self.checkpointer.put_writes(self.checkpoint_config, list(writes), task_id, path)

    def _tasks_with_writes(self) -> set[str]:
        # pending_writes is reassigned in several places; re-index when it changed identity
        if self._written_for is not self.pending_writes:
            self._written = {w[0] for w in self.pending_writes}
            self._written_for = self.pending_writes
        return self._written

    def _put_checkpoint(self, source: str) -> None:
        self.metadata = {
            **_metadata_from_config(self.config),
            "source": source,
            "step": self.step,
            "parents": dict(self.config[CONF].get(CONFIG_KEY_CHECKPOINT_MAP, {})),
        }
        previous = self.checkpoint
        self.checkpoint = create_checkpoint(
            self.checkpoint,
            # without a saver nobody reads the values: skip snapshotting every channel
            self.channels if self.checkpointer is not None else None,
            self.step,
            updated_channels=self.updated_channels,
        )
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
            if self.saved:
                parent[CONFIG_KEY_CHECKPOINT_ID] = previous["id"]
            self.checkpoint_config = self.checkpointer.put(
                {CONF: parent},
                copy_checkpoint(self.checkpoint),
                dict(self.metadata),  # type: ignore[arg-type]
                new_versions,
            )
            self.saved = True
            self.saved_versions = dict(self.checkpoint["channel_versions"])
        self.step += 1

    # --- input --------------------------------------------------------------------------

    def pending_interrupts(self) -> dict[str, Interrupt]:
        """Interrupts of unfinished tasks in the loaded step, by id."""
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for tid, c, v in self.pending_writes:
            if tid != NULL_TASK_ID:
                by_task.setdefault(tid, []).append((c, v))
        out: dict[str, Interrupt] = {}
        for writes in by_task.values():
            if task_finished(writes):
                continue
            for c, v in writes:
                if c == INTERRUPT:
                    for intr in v:
                        out[intr.id] = intr
        return out

    def first(self) -> None:
        """Apply the input, a Command, or the resume of an interrupted step."""
        conf = self.config[CONF]
        inp = self.input
        is_command = isinstance(inp, Command)
        has_state = bool(self.checkpoint["channel_versions"])
        is_resuming = has_state and bool(conf.get(CONFIG_KEY_RESUMING, inp is None or is_command))
        time_travel = self.addressed and not (is_command and inp.resume is not None)
        self.replaying = time_travel
        if time_travel:
            self.pending_writes = [w for w in self.pending_writes if w[1] != RESUME]
        # On a thread with no state a Command (without resume) is the run's input: the
        # hidden __start__ node applies its update and goto, as LangGraph does.
        command_as_input = is_command and not has_state and inp.resume is None
        if command_as_input:
            if not list(map_command(inp)):
                raise EmptyInputError(
                    "Received empty Command input: give Command(resume=...), update=... or goto=..."
                )
        elif is_command:
            self._apply_command(inp, has_state)
        null = self._apply_null_writes()
        if is_resuming:
            self._mark_interrupts_seen()
            if time_travel and self.metadata.get("source") not in ("update", "fork"):
                self.pending_writes = [w for w in self.pending_writes if w[1] != INTERRUPT]
                keep = self.pending_writes
                self._put_checkpoint("fork")
                self.pending_writes = [w for w in keep if w[0] == NULL_TASK_ID]
            self.emit("values", output_values(self.output_keys, True, self.channels))
        elif (inp is not None and not is_command) or command_as_input:
            discard = prepare_next_tasks(
                self.checkpoint,
                self.channels,
                self._step_context(),
                updated_channels=self.updated_channels,
                for_execution=False,
            )
            self.updated_channels = apply_writes(
                self.checkpoint,
                self.channels,
                [*discard.values(), TaskWrites(INPUT, (), (), [(START, inp)])],
                self.get_next_version,
                self.graph.trigger_to_nodes,
            )
            self.pending_writes = []
            self._put_checkpoint("input")
        elif is_command and not (has_state or null):
            raise EmptyInputError("Received empty Command input")
        elif CONFIG_KEY_RESUMING not in conf:
            raise EmptyInputError("Received no input for __start__")
        self.config = {
            **self.config,
            CONF: {**conf, CONFIG_KEY_RESUMING: is_resuming},
        }

    def _apply_null_writes(self) -> list[tuple[str, Any]]:
        """Apply the null task's pending writes (a Command's update, goto) in memory."""
        null = [(c, v) for tid, c, v in self.pending_writes if tid == NULL_TASK_ID]
        if null:
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

    def _mark_interrupts_seen(self) -> None:
        seen = self.checkpoint["versions_seen"].setdefault(INTERRUPT, {})
        seen.update(self.checkpoint["channel_versions"])

    def reenter(self, *, resuming: bool) -> None:
        """Redo in memory what :meth:`first` did to the step a run started at.

        ``first()`` applies the null task's writes (a Command's ``update``/``goto``) to
        the channels and, for a resume, marks interrupts seen and flags the tasks as
        resuming, all without saving a checkpoint. A driver that re-opens that step in
        another process (a task job, the coordinator after the barrier) calls this so
        its tasks see the same state; nothing is saved or streamed again.
        """
        if not self.checkpoint["channel_versions"]:
            return
        self._apply_null_writes()
        if resuming:
            self._mark_interrupts_seen()
        conf = self.config[CONF]
        self.config = {**self.config, CONF: {**conf, CONFIG_KEY_RESUMING: resuming}}

    def _apply_command(self, cmd: Command[Any], has_state: bool) -> None:
        resume = cmd.resume
        resume_map = resume is not None and is_resume_map(resume)
        if resume is not None:
            if self.checkpointer is None:
                raise RuntimeError("Cannot use Command(resume=...) without checkpointer")
            if not self.is_nested:
                self._validate_resume(resume, resume_map, has_state)
            if resume_map:
                self.config[CONF][CONFIG_KEY_RESUME_MAP] = resume
        writes = [(tid, c, v) for tid, c, v in map_command(cmd) if not (c == RESUME and resume_map)]
        if not writes and not resume_map:
            raise EmptyInputError(
                "Received empty Command input: give Command(resume=...), update=... or goto=..."
            )
        if writes:
            self.put_writes(NULL_TASK_ID, [(c, v) for _, c, v in writes])

    def use_resume_map(self, resume: Any) -> None:
        """Answer interrupts by id from ``resume`` (a later loop of a resumed run needs it)."""
        if is_resume_map(resume):
            self.config[CONF][CONFIG_KEY_RESUME_MAP] = resume

    def validate_command(self, cmd: Command[Any]) -> None:
        """Check a resume command against this thread's pending interrupts; writes nothing."""
        if cmd.resume is None:
            return
        has_state = bool(self.checkpoint["channel_versions"])
        self._validate_resume(cmd.resume, is_resume_map(cmd.resume), has_state)

    def step_interrupts(self) -> tuple[list[Interrupt], bool]:
        """Interrupts recorded for the current step's tasks, from pending writes.

        For drivers whose tasks ran elsewhere: the interrupts of tasks that did not finish
        (and did not fail), in the order they were saved, and whether any task paused.
        """
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for tid, c, v in self.pending_writes:
            if tid in self.tasks:
                by_task.setdefault(tid, []).append((c, v))
        interrupts: list[Interrupt] = []
        interrupted = False
        for writes in by_task.values():
            if task_finished(writes) or any(c == ERROR for c, _ in writes):
                continue
            if any(c == INTERRUPT for c, _ in writes):
                interrupted = True
                interrupts.extend(i for c, v in writes if c == INTERRUPT for i in v)
        return interrupts, interrupted

    def _edited_while_paused(self) -> bool:
        if self.metadata.get("source") != "update":
            return False
        return bool(
            prepare_next_tasks(
                self.checkpoint,
                self.channels,
                self._step_context(),
                for_execution=False,
            )
        )

    def _validate_resume(self, resume: Any, resume_map: bool, has_state: bool) -> None:
        thread = self.config[CONF].get(CONFIG_KEY_THREAD_ID)
        pending = self.pending_interrupts()
        if not has_state:
            raise InvalidResumeError(
                f"Cannot resume thread {thread!r}: it has no checkpoints. Check the thread_id, "
                "or start the thread with an input first."
            )
        if not pending and self._edited_while_paused():
            # update_state() on a paused thread re-schedules the interrupted node under a
            # new task id; its interrupt() will take this value when it runs again.
            if resume_map:
                raise InvalidResumeError(
                    f"Thread {thread!r} was edited with update_state() while paused, so its "
                    "old interrupt ids no longer apply; resume with Command(resume=value)."
                )
            return
        if not pending:
            raise InvalidResumeError(
                f"Cannot resume thread {thread!r}: it has no pending interrupt. Nothing was "
                "changed; use get_state() to see the thread's state."
            )
        if resume_map:
            unknown = sorted(set(resume) - set(pending))
            if not resume:
                raise InvalidResumeError(
                    "The resume map names no interrupt; pending interrupt ids: "
                    f"{sorted(pending)}. Nothing was changed."
                )
            if unknown:
                raise InvalidResumeError(
                    f"Resume map key {unknown[0]} matches no pending interrupt of thread "
                    f"{thread!r}; pending interrupt ids: {sorted(pending)}. Nothing was changed."
                )
        elif len(pending) > 1:
            raise RuntimeError(
                "When there are multiple pending interrupts, you must specify the interrupt "
                "id when resuming. Docs: https://docs.langchain.com/oss/python/langgraph/"
                "interrupts#handling-multiple-interrupts."
            )

    # --- steps --------------------------------------------------------------------------

    def tick(self, *, continuing: bool = False) -> bool:
        """Prepare the next step; False when the run is over (done, interrupted, out of steps).

        ``continuing`` re-prepares a step whose tasks ran elsewhere (the distributed
        coordinator after its barrier): breakpoints were already checked and the finished
        tasks' updates were already streamed, so neither happens again.
        """
        if self.step > self.stop:
            self.status = "out_of_steps"
            return False
        self.tasks = prepare_next_tasks(
            self.checkpoint,
            self.channels,
            self._step_context(),
            updated_channels=self.updated_channels,
        )
        if not self.tasks:
            self.status = "done"
            return False
        if self.pending_writes and not self.replaying:
            self._reattach_finished(emit=not continuing)
        if continuing:
            return True
        if self.interrupt_before and should_interrupt(
            self.checkpoint, self.interrupt_before, self.tasks.values()
        ):
            self.status = "interrupt_before"
            self.emit("updates", {INTERRUPT: ()})
            raise GraphInterrupt()
        return True

    def prepare_one(self, path: Sequence[Any]) -> PreparedTask | None:
        """Prepare only the task at ``path`` of the current step, with its saved writes."""
        task = prepare_task(self.checkpoint, self.channels, self._step_context(), path)
        if task is None:
            return None
        self.tasks = {task.id: task}
        self._reattach_finished(emit=False)
        return task

    def _reattach_finished(self, *, emit: bool = True) -> None:
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for tid, c, v in self.pending_writes:  # one pass: a step of N tasks costs O(N)
            by_task.setdefault(tid, []).append((c, v))
        for task in self.tasks.values():
            writes = by_task.get(task.id, [])
            if writes and task_finished(writes):
                task.writes.extend(w for w in writes if w[0] not in CONTROL_WRITES)
                if emit and not task.node.hidden and "updates" in self.sink.modes:
                    self.emit(
                        "updates",
                        output_updates(
                            self.graph.stream_channels, [(task.name, task.writes)], cached=True
                        ),
                    )

    def runnable_tasks(self) -> list[PreparedTask]:
        return [t for t in self.tasks.values() if not t.writes]

    def task_config(
        self, task: PreparedTask, custom: Callable[[Any], None] | None
    ) -> RunnableConfig:
        """The config a task's node sees: its namespace, scratchpad and write callbacks."""
        conf = self.config[CONF]
        scratchpad = make_scratchpad(
            self.pending_writes,
            task.id,
            task.checkpoint_ns,
            resume_map=conf.get(CONFIG_KEY_RESUME_MAP),
            parent=self.parent_scratchpad,
            step=self.step,
            stop=self.stop,
        )
        channels = self.channels

        def read(select: Sequence[str], fresh: bool = False) -> dict[str, Any]:
            return local_read(channels, task.writes, select, fresh=fresh)

        configurable = {k: v for k, v in conf.items() if k != CONFIG_KEY_CHECKPOINT_ID}
        configurable.update(
            {
                CONFIG_KEY_SEND: task.writes.extend,
                CONFIG_KEY_READ: read,
                CONFIG_KEY_SCRATCHPAD: scratchpad,
                CONFIG_KEY_CHECKPOINT_NS: task.checkpoint_ns,
                CONFIG_KEY_TASK_ID: task.id,
                CONFIG_KEY_CHECKPOINTER: self.checkpointer,
                CONFIG_KEY_STREAM: self.sink,
                CONFIG_KEY_CHECKPOINT_MAP: {
                    **conf.get(CONFIG_KEY_CHECKPOINT_MAP, {}),
                    self.ns: self.checkpoint["id"],
                },
                CONFIG_KEY_CUSTOM_WRITER: custom,
            }
        )
        metadata = {
            **self.config.get("metadata", {}),
            "langgraph_step": self.step,
            "langgraph_node": task.name,
            "langgraph_triggers": task.triggers,
            "langgraph_path": task.path,
            "langgraph_checkpoint_ns": task.checkpoint_ns,
            **task.node.metadata,
        }
        return {
            **self.config,
            CONF: configurable,
            "metadata": metadata,
            "tags": [*self.config.get("tags", []), *task.node.tags],
        }

    def custom_writer(self, task: PreparedTask) -> Callable[[Any], None] | None:
        if "custom" not in self.sink.modes:
            return None
        ns = self.ns_tuple

        def write(chunk: Any) -> None:
            self.sink.put(ns, "custom", chunk)

        return write

    def commit(self, task: PreparedTask, exc: BaseException | None) -> None:
        """Record a finished task's outcome as pending writes and stream it."""
        path = _path_str(task.path)
        if exc is None:
            writes = _dedupe_resume(task.writes)
            if all(c in CONTROL_WRITES for c, _ in writes):
                writes.append((NO_WRITES, None))
            task.writes[:] = writes
            self.put_writes(task.id, writes, path)
            if not task.node.hidden and "updates" in self.sink.modes:
                self.emit(
                    "updates",
                    output_updates(self.graph.stream_channels, [(task.name, task.writes)]),
                )
        elif isinstance(exc, GraphInterrupt):
            resume = [w for w in _dedupe_resume(task.writes) if w[0] == RESUME]
            writes = [(INTERRUPT, tuple(exc.interrupts)), *resume]
            self.put_writes(task.id, writes, path)
            if exc.interrupts:
                self.interrupts.extend(exc.interrupts)
                self.emit("updates", {INTERRUPT: tuple(exc.interrupts)})
                values = output_values(self.output_keys, True, self.channels)
                if values is not None:
                    self.emit("values", {**values, INTERRUPT: tuple(exc.interrupts)})
        elif isinstance(exc, Exception):
            writes = [*task.writes, (ERROR, exc)]
            self.put_writes(task.id, writes, path)

    def after_tick(self) -> None:
        """Apply the step's writes, save the checkpoint, check interrupt_after."""
        tasks = list(self.tasks.values())
        self.updated_channels = apply_writes(
            self.checkpoint,
            self.channels,
            tasks,
            self.get_next_version,
            self.graph.trigger_to_nodes,
        )
        step_writes = [w for t in tasks for w in t.writes]
        self.emit("values", output_values(self.output_keys, step_writes, self.channels))
        self.pending_writes = []
        self._put_checkpoint("loop")
        self.replaying = False
        if self.interrupt_after and should_interrupt(self.checkpoint, self.interrupt_after, tasks):
            self.status = "interrupt_after"
            self.emit("updates", {INTERRUPT: ()})
            raise GraphInterrupt()

    def output(self) -> Any:
        """The output of the current state: what a ``values`` chunk of it holds."""
        return output_values(self.output_keys, True, self.channels)

    def values_with_pending(self) -> dict[str, Any] | None:
        """On an interrupted exit: the state with finished siblings' writes applied."""
        if not any(t.writes for t in self.tasks.values()):
            return None
        checkpoint = copy_checkpoint(self.checkpoint)
        channels = {k: c.copy() for k, c in self.channels.items()}
        updated = apply_writes(
            checkpoint,
            channels,
            self.tasks.values(),
            self.get_next_version,
            self.graph.trigger_to_nodes,
        )
        if updated.isdisjoint(self.output_keys):
            return None
        return output_values(self.output_keys, True, channels)


def _dedupe_resume(writes: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    last = None
    for i, (c, _) in enumerate(writes):
        if c == RESUME:
            last = i
    return [w for i, w in enumerate(writes) if w[0] != RESUME or i == last]


def _path_str(path: tuple[Any, ...]) -> str:
    from graphruntime.pregel._algo import task_path_str

    return task_path_str(path[:3])
