"""Putting work on the broker: a step's task jobs, retries after a backoff, re-sends.

The coordinator, the task jobs and the sweeper all dispatch through here, so how
tasks are chunked into jobs and recorded in the barrier is decided in one place.
The broker itself is behind :class:`Broker` (Celery in production, an in-process
queue in unit tests: :class:`workers.testing.InlineBroker`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple, Protocol

from graphruntime.pregel.driver import PreparedTask, RetryLater
from workers.messages import TaskMessage, TaskRef
from workers.settings import Settings
from workers.store import OrphanTask, Run, RunStore


class QueueDepths(NamedTuple):
    """Messages waiting in each queue (not counting those being worked on)."""

    coordinator: int
    tasks: int


class Broker(Protocol):
    """Sends the workers' messages; the only thing here that talks to the broker."""

    def send_coordinate(self, run_id: str, *, delay: float = 0.0) -> None: ...

    def send_coordinates(self, run_ids: Sequence[str], *, per_message: int = 1) -> None:
        """Coordinator messages naming these runs, up to ``per_message`` each (see
        :func:`batches`), over one connection."""
        ...

    def send_tasks(
        self,
        messages: Sequence[TaskMessage],
        *,
        delay: float = 0.0,
        labels: Sequence[str] | None = None,
    ) -> None:
        """Task jobs; ``labels`` (one per message) name them for people, e.g. in Flower."""
        ...

    def queue_depths(self) -> QueueDepths: ...

    def dead_letter(self, message: str, reason: str) -> None:
        """Set a refused resume-queue message aside, with why it was refused."""
        ...


def batches(run_ids: Sequence[str], per_message: int) -> list[list[str]]:
    """The runs of each coordinator message, in order, up to ``per_message`` each.

    Runs of one thread may land in different messages: the job that leases the thread
    first takes the others in turn (the other job finds the lease taken and leaves them).
    """
    if per_message <= 1:
        return [[run_id] for run_id in run_ids]
    return [list(run_ids[i : i + per_message]) for i in range(0, len(run_ids), per_message)]


def chunk_size(settings: Settings, n_tasks: int) -> int:
    """Tasks per job: one while the step has few tasks, up to ``task_chunk_max`` for big ones.

    A job runs its tasks one after another, so chunking trades a step's parallelism
    for fewer broker messages; it starts once a step has twice ``min_jobs_per_step``
    tasks (and keeps at least that many jobs), where workers are saturated anyway.
    """
    return max(1, min(settings.task_chunk_max, n_tasks // settings.min_jobs_per_step))


def send_refs(
    broker: Broker,
    settings: Settings,
    run_id: str,
    thread_id: str,
    checkpoint_id: str,
    refs: Sequence[TaskRef],
    *,
    delay: float = 0.0,
    graph: str | None = None,
    names: Mapping[str, str] | None = None,
) -> None:
    """Send task jobs for ``refs`` of one step, chunked; ``names``: task id -> node."""
    size = chunk_size(settings, len(refs))
    chunks = [tuple(refs[i : i + size]) for i in range(0, len(refs), size)]
    broker.send_tasks(
        [
            TaskMessage(
                run_id=run_id, thread_id=thread_id, checkpoint_id=checkpoint_id, tasks=chunk
            )
            for chunk in chunks
        ],
        delay=delay,
        labels=[job_label(graph, names, chunk) for chunk in chunks] if graph else None,
    )


def job_label(graph: str, names: Mapping[str, str] | None, refs: Sequence[TaskRef]) -> str:
    """``graph:node`` (``graph:node x3`` for a chunk; nodes joined by ``+`` if mixed)."""
    nodes = sorted({(names or {}).get(ref.id, "?") for ref in refs})
    label = f"{graph}:{'+'.join(nodes)}"
    return label if len(refs) == 1 else f"{label} x{len(refs)}"


def dispatch_step(
    store: RunStore,
    broker: Broker,
    settings: Settings,
    *,
    run_id: str,
    thread_id: str,
    checkpoint_id: str,
    tasks: Sequence[PreparedTask],
    graph: str | None = None,
    epoch: str | None = None,
) -> None:
    """Register a step's tasks in the barrier and send their jobs.

    Tasks registered before (a coordinator that died between registering and sending)
    are not sent again here: the sweeper re-sends tasks nobody claims. ``epoch``: the
    coordinator job's (see ``RunStore.register_tasks``).
    """
    by_id = {t.id: t for t in tasks}
    pairs = [(t.id, t.path) for t in tasks]
    new = store.register_tasks(run_id, thread_id, checkpoint_id, pairs, epoch=epoch)
    refs = [TaskRef(id=task_id, path=tuple(by_id[task_id].path)) for task_id in new]
    if refs:
        names = {t.id: t.name for t in tasks}
        send_refs(
            broker, settings, run_id, thread_id, checkpoint_id, refs, graph=graph, names=names
        )
    store.touch_run(run_id)  # after the send: a failure here must not skip it


def dispatch_retry(
    store: RunStore,
    broker: Broker,
    settings: Settings,
    run: Run,
    *,
    checkpoint_id: str,
    task: PreparedTask,
    retry: RetryLater,
    epoch: str | None = None,
) -> None:
    """Send a task of ``run``'s step at ``checkpoint_id`` again, as a job that starts after
    the policy's backoff."""
    store.register_tasks(
        run.run_id, run.thread_id, checkpoint_id, [(task.id, task.path)], epoch=epoch
    )
    # the sweeper leaves it alone until then
    hold = retry.delay + 2 * settings.heartbeat_interval
    store.hold_for_retry(run.run_id, checkpoint_id, task.id, retry.attempts, hold)
    ref = TaskRef(
        id=task.id,
        path=tuple(task.path),
        attempts=retry.attempts,
        first_attempt=retry.first_attempt_time,
    )
    send_refs(
        broker,
        settings,
        run.run_id,
        run.thread_id,
        checkpoint_id,
        [ref],
        delay=retry.delay,
        graph=run.graph,
        names={task.id: task.name},
    )


def resend_orphans(broker: Broker, settings: Settings, orphans: Iterable[OrphanTask]) -> int:
    """Send again the tasks the sweeper found orphaned, chunked per step; returns how many."""
    steps: dict[tuple[str, str, str], list[TaskRef]] = defaultdict(list)
    for orphan in orphans:
        steps[(orphan.run_id, orphan.thread_id, orphan.checkpoint_id)].append(
            TaskRef(id=orphan.task_id, path=orphan.path, attempts=orphan.retry_attempts)
        )
    for (run_id, thread_id, checkpoint_id), refs in steps.items():
        send_refs(broker, settings, run_id, thread_id, checkpoint_id, refs)
    return sum(len(refs) for refs in steps.values())
