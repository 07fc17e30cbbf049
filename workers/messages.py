"""Versioned, JSON-only payloads that travel on the broker.

Celery messages carry only ids; inputs, commands and results live in Postgres
(typed serde), so a message is small, safe to log and safe to deliver twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from workers.errors import MalformedMessageError


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


MAX_COORDINATE_BATCH = 256
"""Most runs one coordinator message names: its job holds their threads' leases until
it ends them all."""


class CoordinateMessage(_Message):
    """Advance a run (v1: ``run_id``), or several runs of other threads in one job (v2:
    ``run_ids``): apply their inputs, or continue after a step's barrier."""

    v: Literal[1, 2] = 1
    run_id: str | None = Field(default=None, min_length=1)
    run_ids: tuple[str, ...] = Field(default=(), max_length=MAX_COORDINATE_BATCH)

    @model_validator(mode="after")
    def _names_runs(self) -> CoordinateMessage:
        if self.v == 1 and (self.run_id is None or self.run_ids):
            raise ValueError("version 1 names one run: run_id")
        if self.v == 2 and (self.run_id is not None or not self.run_ids):
            raise ValueError("version 2 names its runs in run_ids")
        return self

    @property
    def runs(self) -> tuple[str, ...]:
        return self.run_ids or ((self.run_id,) if self.run_id is not None else ())

    @classmethod
    def of(cls, run_ids: Sequence[str]) -> CoordinateMessage:
        """The message for these runs: version 1 for one (as older workers read it)."""
        if len(run_ids) == 1:
            return cls(run_id=run_ids[0])
        return cls(v=2, run_ids=tuple(run_ids))


class TaskRef(BaseModel):
    """One task of a step: its id and path, exactly as in the checkpoint."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str = Field(min_length=1)
    path: tuple[Any, ...] = Field(min_length=1)
    """Strings, integers and booleans; a ``@task`` call's path nests its caller's."""
    attempts: int = Field(default=0, ge=0, description="failed attempts so far (RetryPolicy)")
    first_attempt: float | None = Field(
        default=None, description="when the first attempt began (Unix time), for a retry"
    )

    @field_validator("path", mode="after")
    @classmethod
    def _plain_path(cls, path: tuple[Any, ...]) -> tuple[Any, ...]:
        return _path(path, depth=0)


MAX_PATH_DEPTH = 16
"""Deepest nesting of a task path (a call of a call of ... a task)."""


def _path(items: Sequence[Any], depth: int) -> tuple[Any, ...]:
    if depth > MAX_PATH_DEPTH:
        raise ValueError(f"a task path nests at most {MAX_PATH_DEPTH} levels")
    out: list[Any] = []
    for item in items:
        if isinstance(item, list | tuple):
            if not item:
                raise ValueError("a task path holds no empty path")
            out.append(_path(item, depth + 1))
        elif isinstance(item, str | int | bool):
            out.append(item)
        else:
            raise ValueError(
                "a task path holds strings, integers, booleans and paths, "
                f"not {type(item).__name__}"
            )
    return tuple(out)


class TaskMessage(_Message):
    """Execute some tasks of one step, one after another, in one job.

    A big fan-out's tasks travel several to a message so that the broker's
    per-message cost is paid once per chunk, not once per task.
    """

    v: Literal[1, 2] = 2
    run_id: str
    thread_id: str
    checkpoint_id: str
    tasks: tuple[TaskRef, ...] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _from_v1(cls, data: Any) -> Any:
        """Version 1 carried one task (``task_id``, ``task_path``): still in queues mid-upgrade."""
        if isinstance(data, dict) and data.get("v", 1) == 1 and "task_id" in data:
            data = dict(data)
            ref = {"id": data.pop("task_id"), "path": data.pop("task_path", None)}
            data.update(v=2, tasks=[ref])
        return data

    @property
    def job_id(self) -> str:
        """A deterministic Celery task id: the same chunk is the same job."""
        first = self.tasks[0]
        more = f"+{len(self.tasks) - 1}" if len(self.tasks) > 1 else ""
        retry = f"#{first.attempts}" if first.attempts else ""
        return f"{self.run_id}:{self.checkpoint_id}:{first.id}{more}{retry}"


MAX_NAME = 256
"""Longest graph name, thread id, idempotency key or actor a message may carry."""
MAX_NOTE = 4096
MAX_DEPTH = 64
"""Deepest nesting a resume value may have (a hostile value must not exhaust a stack)."""


def nesting_depth(value: Any) -> int:
    """How deeply lists and dicts nest in a decoded JSON value (iteratively: no recursion)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


class ResumeMessage(_Message):
    """A resume sent by ops as a plain JSON message (see ``graphrun resume``).

    ``actor`` and ``note`` say who resumed and why; they are stored with the run.
    """

    v: Literal[1] = 1
    graph: str = Field(min_length=1, max_length=MAX_NAME)
    thread_id: str = Field(min_length=1, max_length=MAX_NAME)
    resume: Any
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=MAX_NAME)
    actor: str | None = Field(default=None, max_length=MAX_NAME)
    note: str | None = Field(default=None, max_length=MAX_NOTE)

    @field_validator("graph", "thread_id", "idempotency_key", "actor", "note")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:
            raise ValueError("must not contain NUL characters")
        return value

    @field_validator("resume")
    @classmethod
    def _a_value(cls, value: Any) -> Any:
        if value is None:
            raise ValueError(
                "must be the value the interrupt returns, not null (null resumes nothing)"
            )
        if nesting_depth(value) > MAX_DEPTH:
            raise ValueError(f"nests deeper than {MAX_DEPTH} levels")
        return value


_M = TypeVar("_M", bound=_Message)


def parse(model: type[_M], data: Any) -> _M:
    """Validate a decoded message; a bad one raises MalformedMessageError saying why."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"
            for err in exc.errors()
        )
        raise MalformedMessageError(
            f"Malformed {model.__name__}: {problems}. Expected fields: "
            f"{', '.join(model.model_fields)}."
        ) from None
