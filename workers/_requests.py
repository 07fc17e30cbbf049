"""Checks every request from a client makes before anything is written."""

from __future__ import annotations

from graphruntime.config import RunnableConfig
from workers.errors import InvalidRequestError
from workers.messages import MAX_NAME


def check_text(name: str, value: str | None, limit: int) -> None:
    """A name or note: 1 to ``limit`` characters, no NUL (Postgres text cannot hold one)."""
    if value is None:
        return
    if not value or len(value) > limit or "\x00" in value:
        raise InvalidRequestError(
            f"{name} must be 1 to {limit} characters without NUL, got {len(value)} characters"
        )


def thread_id_of(config: RunnableConfig | None) -> str:
    """The config's thread, checked; the error LangGraph's checkpointers raise without one."""
    thread_id = (config or {}).get("configurable", {}).get("thread_id")
    if not thread_id:
        raise InvalidRequestError(
            "Checkpointer requires one or more of the following 'configurable' keys: "
            "thread_id, checkpoint_ns, checkpoint_id"
        )
    check_text("thread_id", str(thread_id), MAX_NAME)
    return str(thread_id)
