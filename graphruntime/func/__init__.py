"""The functional API: workflows as plain functions (``@entrypoint``) calling ``@task`` s.

An entrypoint is a one-node graph: its function runs as the node, with the run's input,
and what it returns is the run's output (and, unless it returns ``entrypoint.final``,
what the next run on the thread gets as ``previous``). A ``@task`` call made while it
runs becomes a task of the same step and returns a future; with a checkpointer, a call
that finished is not run again when the entrypoint runs again (a resume after an
``interrupt()``, a retry, another worker): its saved result is returned.
"""

from __future__ import annotations

from graphruntime.func._entrypoint import entrypoint
from graphruntime.func._task import task

__all__ = ("entrypoint", "task")
