"""Where a run's saver requests go on the workers: held, then stored in one round trip.

The loop makes its writes as requests (``graphruntime.pregel.driver.SaverIO``); a run's
:class:`RunSaves` takes them, its subgraphs' too, in order:

- a task's pending writes are kept until the next checkpoint put, which takes them
  ahead of it in the same round trip, or until :meth:`RunSaves.flush` (a task job's end:
  all its tasks' writes at once);
- with a ``group`` (the coordinator's round, durability ``"async"``), puts are held too,
  encoded as they are made (``ClusterSaver.hold_put``), and stored with the round's
  other runs' (:class:`~workers._held_group.HeldGroup`); without one (``"sync"``, a task
  job), each put is stored at once.

Nothing is lost by waiting: a task counts as done (the run ended, the step dispatched)
only after the flush, so a job that dies first is run again (at least once, as always).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from graphruntime.checkpoint import BaseCheckpointSaver, ClusterSaver
from graphruntime.config import RunnableConfig
from graphruntime.pregel.driver import PutCheckpoint, PutWrites, SaverRequest, perform_now
from workers._held_group import HeldGroup

_UNCHANGEABLE = frozenset({str, int, float, bool, bytes, type(None)})
"""Types of write values that cannot change after they were written (exact types)."""


def _kept(writes: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """A copy of ``writes`` a later task of the job cannot change (values that cannot
    change need none); a task's error is kept as it is (an exception need not be
    copyable, and nothing changes it)."""
    if all(type(value) in _UNCHANGEABLE for _, value in writes):
        return list(writes)
    errors = {id(value): value for _, value in writes if isinstance(value, BaseException)}
    return copy.deepcopy(list(writes), errors)


class RunSaves:
    """The ``SaverIO`` of one run on the workers (see the module's docstring).

    ``saver``: the run's saver (a fenced, lazy view); requests for another saver (a
    subgraph's own) are performed at once. ``key``: the run's, in the ``group``.
    """

    def __init__(
        self, saver: ClusterSaver, *, group: HeldGroup | None = None, key: str = ""
    ) -> None:
        self.saver = saver
        self.group = group
        self.key = key
        self._writes: list[tuple[RunnableConfig, Sequence[tuple[str, Any]], str, str]] = []
        self._holding = False

    def perform(self, saver: BaseCheckpointSaver, requests: Sequence[SaverRequest]) -> None:
        if saver is not self.saver:
            perform_now(saver, requests)
            return
        for request in requests:
            if isinstance(request, PutWrites):
                self._writes.append(
                    (request.config, _kept(request.writes), request.task_id, request.task_path)
                )
            else:
                self._put(request)

    def _put(self, request: PutCheckpoint) -> None:
        # the writes kept so far go first, in the same round trip
        batch, self._writes = self._writes, []
        args = (request.config, request.checkpoint, request.metadata, request.new_versions)
        if self.group is not None:
            self._hold(self.saver.hold_put(batch, *args))
        elif batch:
            self.saver.put_with_writes(batch, *args)
        else:
            self.saver.put(*args)

    def _hold(self, save: Any) -> None:
        assert self.group is not None
        if not save.stored:
            self.group.hold(self.key, save)
            self._holding = True

    def settle(self, saver: BaseCheckpointSaver) -> None:
        """Before a read (a subgraph loads its own puts): what is held is stored."""
        if self._holding:
            self.flush()

    def hand_over(self) -> None:
        """The writes still kept go to the group with the held puts (or, with no group,
        are stored now); the group's :meth:`HeldGroup.store` stores them."""
        batch, self._writes = self._writes, []
        if not batch:
            return
        if self.group is None:
            self.saver.put_writes_many(batch)
            return
        self._hold(self.saver.hold_put(batch, None))

    def flush(self) -> None:
        """Store everything held now (other runs' held in the group too); a refused put
        raises (CheckpointConflict)."""
        self.hand_over()
        if self.group is not None and self._holding:
            self._holding = False
            self.group.store()
            if (error := self.group.error_of(self.key)) is not None:
                raise error

    def storing_within(self) -> AbstractContextManager[None]:
        """Around a node's run: the group stores what is held if the node is slow."""
        return self.group.storing_within() if self.group is not None else nullcontext()
