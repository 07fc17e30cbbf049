"""Where a ``durability="exit"`` run keeps its DeltaChannel writes: on an anchor.

An ``"exit"`` run saves one checkpoint, when it ends. A DeltaChannel that is not due
for a snapshot is not stored in it; its value is rebuilt, as for any checkpoint, from
the writes stored on the checkpoints above it. So, as LangGraph does, the run stores
every delta write it applied on the checkpoint it started from (the *anchor*), and the
final checkpoint is saved as that checkpoint's child. On a new thread there is nothing
to anchor on: a *stub* (an empty checkpoint, metadata ``{"step": -2}``) is saved first,
and the thread's history then lists it as the state before the first input.

Writes of several supersteps land on one checkpoint, whose history replays them in
:func:`~graphruntime.checkpoint.base.writes_sort_key` order (task path, task id), so
each is stored under a synthetic task id and path that keep step order:

- writes without a task (the input, a ``Command``'s update): no path, so they sort
  first; the id carries the step;
- the run's first superstep (the anchor's own, on a resume): the real task path, so
  they interleave with the writes of that step already stored on the anchor; the id is
  still synthetic, or a task whose final checkpoint failed to save would look done to
  the next resume;
- later supersteps: a path and an id that sort after every real one, in step order,
  whether a saver orders by path or by id.

Ids stay valid UUIDs (Postgres stores task ids as ``uuid``). A run started from a
checkpoint addressed by id does not record anything here: that checkpoint may already
have children, which would read the writes, so its channels snapshot instead.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from graphruntime._internal._constants import NULL_TASK_ID
from graphruntime.channels import DeltaChannel

__all__ = ("ExitDeltaLog", "exit_delta_late_task_id", "exit_delta_task_id")


def _groups(task_id: str) -> list[str]:
    try:
        return str(UUID(task_id)).split("-")
    except ValueError:  # an id that is no UUID
        return str(uuid5(NAMESPACE_URL, task_id)).split("-")


def exit_delta_task_id(step: int, task_id: str) -> str:
    """The id of ``task_id``'s writes of ``step`` on the anchor: the step leads.

    A new thread's input is step -1: it shares step 0's prefix, and still sorts
    first, by its empty path. Never the null task id, whose writes a reader takes for
    the anchor's own.
    """
    parts = _groups(task_id)
    synthetic = f"{max(step, 0):08d}-{parts[1]}-{parts[2]}-{parts[3]}-{parts[4]}"
    if synthetic == NULL_TASK_ID:
        return f"{max(step, 0):08d}-0000-0000-0000-000000000001"
    return synthetic


def exit_delta_late_task_id(step: int, task_id: str) -> str:
    """The id of writes of a superstep after the run's first: after every real id."""
    parts = _groups(task_id)
    return f"ffffffff-{step >> 16 & 0xFFFF:04x}-{step & 0xFFFF:04x}-{parts[3]}-{parts[4]}"


def _late_path(step: int, path: str) -> str:
    # "~~" sorts after every real task path ("~__pregel_pull, ...", "~__pregel_push, ...")
    return f"~~{step:010d}{path}"


@dataclass(slots=True)
class ExitDeltaLog:
    """The delta writes an ``"exit"`` run applied, to store on its anchor at exit.

    ``anchor_id``: the id of the checkpoint the run loaded, or of the empty one it
    started from on a new thread (the stub's id, if one is saved); ``loaded``: the
    tasks with writes stored on it when the run loaded it.
    """

    specs: Mapping[str, Any]
    anchor_id: str
    loaded: frozenset[str] = frozenset()
    # (step, real task id, task path, channel, value), in the order applied
    writes: list[tuple[int, str, str, str, Any]] = field(default_factory=list)
    first_step: int | None = None

    def _delta(self, writes: Iterable[tuple[str, Any]]) -> list[tuple[str, Any]]:
        return [(c, v) for c, v in writes if isinstance(self.specs.get(c), DeltaChannel)]

    def record_untasked(self, step: int, task_id: str, writes: Iterable[tuple[str, Any]]) -> None:
        """Writes no task made (the input, a Command's update), applied at ``step``."""
        self.writes.extend((step, task_id, "", c, v) for c, v in self._delta(writes))

    def record_step(
        self, step: int, tasks: Iterable[tuple[str, str, Iterable[tuple[str, Any]]]]
    ) -> None:
        """A superstep's tasks, as ``(task id, task path, writes)``, whose writes it
        applied. Writes already stored on the anchor (handed back to a resumed step's
        finished tasks) are the caller's to leave out."""
        if self.first_step is None:
            self.first_step = step
        for task_id, path, writes in tasks:
            self.writes.extend((step, task_id, path, c, v) for c, v in self._delta(writes))

    def by_task(self) -> dict[str, list[tuple[str, Any]]]:
        """The recorded writes by real task id (what the anchor will hold for each)."""
        out: dict[str, list[tuple[str, Any]]] = {}
        for _, task_id, _, channel, value in self.writes:
            out.setdefault(task_id, []).append((channel, value))
        return out

    def groups(self, snapshot: Collection[str]) -> dict[tuple[str, str], list[tuple[str, Any]]]:
        """What to store on the anchor, by ``(synthetic task id, task path)``: the writes
        of every channel the final checkpoint does not snapshot."""
        out: dict[tuple[str, str], list[tuple[str, Any]]] = {}
        for step, task_id, path, channel, value in self.writes:
            if channel in snapshot:
                continue
            if not path:
                key = (exit_delta_task_id(step, task_id), "")
            elif step == self.first_step:
                key = (exit_delta_task_id(step, task_id), path)
            else:
                key = (exit_delta_late_task_id(step, task_id), _late_path(step, path))
            out.setdefault(key, []).append((channel, value))
        return out
