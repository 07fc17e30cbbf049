"""Queue messages: what a worker accepts, and how it says what is wrong."""

from __future__ import annotations

import pytest

from workers.errors import MalformedMessageError
from workers.messages import TaskMessage, TaskRef, parse

STEP = {"run_id": "r", "thread_id": "t", "checkpoint_id": "c"}


def _msg(*tasks: TaskRef) -> TaskMessage:
    return TaskMessage(run_id="r", thread_id="t", checkpoint_id="c", tasks=tasks)


def test_a_task_message_round_trips_through_json() -> None:
    msg = _msg(TaskRef(id="a", path=("__pregel_push", 0, False)), TaskRef(id="b", path=("n",)))
    assert parse(TaskMessage, msg.model_dump(mode="json")) == msg
    assert msg.job_id == "r:c:a+1"


def test_a_retry_is_a_job_of_its_own() -> None:
    first = _msg(TaskRef(id="a", path=("n",)))
    retry = _msg(TaskRef(id="a", path=("n",), attempts=2))
    assert (first.job_id, retry.job_id) == ("r:c:a", "r:c:a#2")


def test_a_version_1_message_still_queued_during_an_upgrade_is_accepted() -> None:
    old = {**STEP, "v": 1, "task_id": "a", "task_path": ["__pregel_pull", "n"]}
    assert parse(TaskMessage, old) == _msg(TaskRef(id="a", path=("__pregel_pull", "n")))


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({**STEP, "tasks": []}, "tasks"),
        ({**STEP, "tasks": [{"id": "a", "path": {"not": "a path"}}]}, "tasks.0.path"),
        ({**STEP, "tasks": [{"id": "a", "path": ["n"], "attempts": -1}]}, "attempts"),
        ({"run_id": "r"}, "thread_id"),
        ({**STEP, "tasks": [{"id": "a", "path": ["n"]}], "extra": 1}, "extra"),
    ],
)
def test_a_malformed_message_says_what_is_wrong(data: dict[str, object], says: str) -> None:
    with pytest.raises(MalformedMessageError, match=says):
        parse(TaskMessage, data)
