"""The ``Runtime`` a run hands its nodes: built once per run, specialised per task."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import CONF, CONFIG_KEY_RUNTIME
from graphruntime.pregel._algo import PreparedTask
from graphruntime.pregel._node import GraphSpec
from graphruntime.runtime import (
    DEFAULT_RUNTIME,
    ExecutionInfo,
    RunControl,
    Runtime,
    ServerInfo,
)

__all__ = ("run_runtime", "server_info", "task_runtime")


def _parent_runtime(value: Any) -> Runtime[Any]:
    """What a parent left in the config: a Runtime, or a foreign object with a context."""
    if value is None:
        return DEFAULT_RUNTIME
    if isinstance(value, Runtime):
        return value
    return Runtime(context=getattr(value, "context", None))


def server_info(config: RunnableConfig) -> ServerInfo | None:
    """A server's ``assistant_id``/``graph_id``/``langgraph_auth_user``, if it set them."""
    conf = config.get(CONF) or {}
    assistant_id = conf.get("assistant_id")
    graph_id = conf.get("graph_id")
    user = conf.get("langgraph_auth_user")
    if user is not None and not hasattr(user, "identity"):
        user = None
    if assistant_id is None and graph_id is None and user is None:
        return None
    return ServerInfo(
        assistant_id=str(assistant_id) if assistant_id else "",
        graph_id=str(graph_id) if graph_id else "",
        user=user,
    )


def run_runtime(
    graph: GraphSpec, config: RunnableConfig, context: Any, control: RunControl | None
) -> Runtime[Any]:
    """The run's runtime: its context, store and control, over what a parent graph passed.

    A subgraph keeps its parent's store, context and control unless its own run sets them.
    """
    conf = config.get(CONF) or {}
    nested = CONFIG_KEY_RUNTIME in conf
    parent = _parent_runtime(conf.get(CONFIG_KEY_RUNTIME))
    own = Runtime(
        context=context,
        store=parent.store if nested else graph.store,
        server_info=server_info(config),
        control=control or parent.control or RunControl(),
    )
    return parent.merge(own)


def task_runtime(
    runtime: Runtime[Any],
    task: PreparedTask,
    writer: Callable[[Any], None] | None,
    *,
    checkpoint_id: str,
    thread_id: str | None,
    run_id: Any,
    previous: Any,
    first_attempt: float,
) -> Runtime[Any]:
    """The runtime one task sees: the run's, with its stream writer and execution info."""
    info = ExecutionInfo(
        checkpoint_id=checkpoint_id,
        checkpoint_ns=task.checkpoint_ns,
        task_id=task.id,
        thread_id=thread_id,
        run_id=str(run_id) if run_id else None,
        node_attempt=1,
        node_first_attempt_time=first_attempt,
    )
    # Every task gets one: set the fields directly, as the frozen dataclass's __init__
    # would, at half its cost (tests check RUNTIME_FIELDS against the dataclass).
    new = _new(Runtime)
    _set(new, "context", runtime.context)
    _set(new, "store", runtime.store)
    _set(new, "stream_writer", runtime.stream_writer if writer is None else writer)
    _set(new, "heartbeat", runtime.heartbeat)
    _set(new, "previous", runtime.previous if previous is None else previous)
    _set(new, "execution_info", info)
    _set(new, "server_info", runtime.server_info)
    _set(new, "control", runtime.control)
    return new


_new = object.__new__
_set = object.__setattr__
RUNTIME_FIELDS = (
    "context",
    "store",
    "stream_writer",
    "heartbeat",
    "previous",
    "execution_info",
    "server_info",
    "control",
)
"""The fields :func:`task_runtime` sets: all of ``Runtime``'s."""
