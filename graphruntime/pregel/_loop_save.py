"""A run's pending writes and checkpoints, and the saver requests that keep them.

:class:`LoopSave` is the layer of :class:`~graphruntime.pregel._loop.PregelLoop` that
writes: a task's outcome as pending writes (:meth:`LoopSave.put_writes`), the step's
checkpoint (``_put_checkpoint``), and, for a ``durability="exit"`` run, everything at
once when it ends (:meth:`LoopSave.exit`). It never calls its saver to write: each
write is a request in its outbox, which its driver takes and performs (``_saves.py``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_CHECKPOINT_ID,
    CONFIG_KEY_CHECKPOINT_MAP,
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_THREAD_ID,
    NS_END,
    NULL_TASK_ID,
    TASKS,
    WRITES_IDX_MAP,
)
from graphruntime.checkpoint.base import copy_checkpoint, empty_checkpoint
from graphruntime.pregel._algo import create_checkpoint
from graphruntime.pregel._exit_delta import ExitDeltaLog
from graphruntime.pregel._loop_state import LoopState, task_order
from graphruntime.pregel._resume import writes_by_task
from graphruntime.pregel._saved import sanitized_send, without_untracked
from graphruntime.pregel._saves import PutCheckpoint, PutWrites, SaverRequest


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


class LoopSave(LoopState):
    """Pending writes and checkpoints of a run (a layer of ``PregelLoop``)."""

    def take_saves(self) -> list[SaverRequest]:
        """The saver requests made since the last call, in order; the caller performs them
        (``record`` may run in a task's thread: taken under the loop's lock)."""
        with self._lock:
            requests, self.outbox = self.outbox, []
        return requests

    def saves_performed(self, puts: Sequence[RunnableConfig | None]) -> None:
        """What a saver's puts returned, in order (``perform_now``): the loop goes on
        under the config its put returned for the current checkpoint (as LangGraph's
        loop does)."""
        current = self.checkpoint["id"]
        for put in puts:
            if put is not None and put[CONF].get(CONFIG_KEY_CHECKPOINT_ID) == current:
                self.checkpoint_config = put

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
        self.outbox.append(PutWrites(config, list(writes), task_id, path))

    def _put_input_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str
    ) -> None:
        self.outbox.append(PutWrites(config, list(writes), task_id))

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
                self.outbox.append(PutWrites(self.checkpoint_config, control, NULL_TASK_ID))
            if regular:
                self.outbox.append(
                    PutWrites(self.checkpoint_config, [*earlier, *regular], NULL_TASK_ID)
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
            thread_id = self.config[CONF].get(CONFIG_KEY_THREAD_ID)
            parent: dict[str, Any] = {
                CONFIG_KEY_THREAD_ID: thread_id,
                CONFIG_KEY_CHECKPOINT_NS: self.ns,
            }
            if self.saved and self._saved_id is not None:
                parent[CONFIG_KEY_CHECKPOINT_ID] = self._saved_id
            self.prev_checkpoint_config = self.checkpoint_config if self.saved else None
            self.outbox.append(
                PutCheckpoint(
                    {CONF: parent},
                    copy_checkpoint(self.checkpoint),
                    dict(self.metadata),  # type: ignore[arg-type]
                    new_versions,
                )
            )
            # what the saver returns for it (see saves_performed)
            self.checkpoint_config = {
                CONF: {
                    CONFIG_KEY_THREAD_ID: thread_id,
                    CONFIG_KEY_CHECKPOINT_NS: self.ns,
                    CONFIG_KEY_CHECKPOINT_ID: self.checkpoint["id"],
                }
            }
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
        self.outbox.append(PutCheckpoint(config, stub, {"step": -2}, {}))
        self.checkpoint_config = {CONF: {**config[CONF], CONFIG_KEY_CHECKPOINT_ID: checkpoint_id}}
        self.saved = True
        self._saved_id = checkpoint_id
