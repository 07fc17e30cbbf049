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
    """The config's thread, checked. Without one, an InvalidRequestError (a ValueError) that
    says why the workers need it: they store every run under its thread, whether or not the
    graph was compiled with a checkpointer (in-process, LangGraph asks for it only of a
    graph that has one)."""
    thread_id = (config or {}).get("configurable", {}).get("thread_id")
    if not thread_id:
        raise InvalidRequestError(
            "A run on the workers needs a thread_id: pass config={'configurable': "
            "{'thread_id': ...}}. The workers save every run's checkpoints under its thread "
            "(with the cluster's Postgres saver), so a thread_id is required even for a "
            "graph compiled without a checkpointer."
        )
    check_text("thread_id", str(thread_id), MAX_NAME)
    return str(thread_id)
