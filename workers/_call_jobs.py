"""``@task`` calls made by a task the coordinator runs inline, sent as task jobs.

An entrypoint (or any node of a one-task step) runs inline in the coordinator. Each
``@task`` call it makes without a saved result becomes a task of the same step, sent
as a job like a ``Send`` fan-out's tasks: its result is the call's pending writes. The
caller stops where it waits for a call (:class:`CallSuspended`); once every sent call
is done, the job that completes the step's barrier re-opens it and the caller runs
again from its first line, reading its finished calls from the step's writes, as
LangGraph runs an entrypoint again on resume. So one entrypoint's calls spread over
the cluster, and a round of calls made before the caller waits runs in parallel.

Calls that a call makes run inline in the job that runs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from graphruntime.pregel.driver import CallSuspended, PreparedTask, StepLoop, failed_future
from workers.errors import WorkerError, rebuild_error
from workers.store import StepTask

if TYPE_CHECKING:
    from collections.abc import Sequence


class CallJobs:
    """The coordinator's ``CallExecutor``: collects the calls to send, fails none in place.

    ``sent``: the calls this run already sent at this step, all done (the coordinator
    waits for every one before the caller runs again). A call among them that left no
    result failed or interrupted: the caller gets that outcome from its future, as it
    would in one process, instead of the call running again. A resumed run starts
    with none sent, so a call that interrupted runs again and reads its resume value.
    """

    def __init__(self, sent: Mapping[str, StepTask] | None = None) -> None:
        self.sent: Mapping[str, StepTask] = sent or {}
        self.unsent: dict[str, PreparedTask] = {}

    def submit_call(self, loop: StepLoop, task: PreparedTask) -> Any:
        row = self.sent.get(task.id)
        if row is None:
            self.unsent.setdefault(task.id, task)
            return failed_future(CallSuspended(task.path))
        # its error as its job recorded it: the saved write holds only the error's text
        failure = rebuild_error(row.error) if row.error else loop.recorded_failure(task.id)
        if failure is None:
            failure = WorkerError(
                f"the @task call {task.name} (task {task.id}) ended without a result; "
                "this is a bug in graphruntime, please report it"
            )
        return failed_future(failure)

    def to_send(self) -> Sequence[PreparedTask]:
        """The calls made this pass that have no result yet, in the order they were made."""
        return list(self.unsent.values())


def only_calls_recorded(tasks: Sequence[PreparedTask], recorded: Mapping[str, StepTask]) -> bool:
    """Whether the step's recorded jobs are all ``@task`` calls: its one task ran inline."""
    return len(tasks) == 1 and tasks[0].id not in recorded
