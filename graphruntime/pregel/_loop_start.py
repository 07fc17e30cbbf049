"""Starting a run: its input, its Command or its resume; or re-opening a step.

:class:`LoopStart` is the layer of :class:`~graphruntime.pregel._loop.PregelLoop` that
applies what a run starts with to the loaded checkpoint: :meth:`LoopStart.first` (once
per run; idempotent per ``run_id``) and :meth:`LoopStart.open_step` (the same step
re-opened in another process, which saves nothing). A resume is checked against the
step's pending interrupts here, before anything is written.
"""

from __future__ import annotations

from typing import Any

from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_CHECKPOINT_ID,
    CONFIG_KEY_REPLAY_STATE,
    CONFIG_KEY_RESUMING,
    CONFIG_KEY_THREAD_ID,
    INPUT,
    INTERRUPT,
    NULL_TASK_ID,
    RESUME,
    RUN_MARK,
)
from graphruntime.constants import START
from graphruntime.errors import EmptyInputError, UsageError
from graphruntime.pregel._algo import TaskWrites, apply_writes, prepare_next_tasks
from graphruntime.pregel._delta import detached
from graphruntime.pregel._io import map_command, map_input
from graphruntime.pregel._loop_save import LoopSave
from graphruntime.pregel._loop_state import _UNREAD
from graphruntime.pregel._message_ids import ensure_message_ids
from graphruntime.pregel._replay import ReplayState
from graphruntime.pregel._resume import is_resume_map, pending_interrupts, validate_resume
from graphruntime.types import Command, Interrupt


class LoopStart(LoopSave):
    """How a run starts on its loaded step (a layer of ``PregelLoop``)."""

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

    def _superseded(self) -> bool:
        """Whether the run addressed a checkpoint the thread has moved past."""
        if self._head_id is not _UNREAD:
            return self._head_id is not None and self._head_id != self.checkpoint["id"]
        head = self._head_config()
        if head is None or self.checkpointer is None:
            return False
        self.settle_saves()
        latest = self.checkpointer.get_tuple(head)
        return latest is not None and latest.checkpoint["id"] != self.checkpoint["id"]

    def _record_command(self, cmd: Command[Any], run_id: str | None, *, save: bool = True) -> None:
        resume = cmd.resume
        resume_map = resume is not None and is_resume_map(resume)
        if resume is not None:
            if self.checkpointer is None:
                raise UsageError("Cannot use Command(resume=...) without checkpointer")
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
