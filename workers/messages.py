"""Versioned, JSON-only payloads that travel on the broker.

Celery messages carry only ids; inputs, commands and results live in Postgres
(typed serde), so a message is small, safe to log and safe to deliver twice.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from workers.errors import MalformedMessageError


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    v: Literal[1] = 1


class CoordinateMessage(_Message):
    """Advance a run: apply its input, or continue after a step's barrier."""

    run_id: str


class TaskMessage(_Message):
    """Execute one task of one step; identified exactly as in the checkpoint."""

    run_id: str
    thread_id: str
    checkpoint_id: str
    task_id: str
    task_path: tuple[str | int | bool, ...]


class ResumeMessage(_Message):
    """A resume sent by ops as a plain JSON message (see ``graphrun resume``)."""

    graph: str = Field(min_length=1)
    thread_id: str = Field(min_length=1)
    resume: Any
    idempotency_key: str | None = None

    @field_validator("graph", "thread_id", "idempotency_key")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:
            raise ValueError("must not contain NUL characters")
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
