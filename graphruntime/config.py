"""Access to the running node's config, store and stream writer (as ``langgraph.config``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graphruntime._internal._config import (
    RunnableConfig,
    StreamWriter,
    get_config,
    get_stream_writer,
)
from graphruntime._internal._constants import CONF, CONFIG_KEY_RUNTIME
from graphruntime._internal._errors import UsageError

if TYPE_CHECKING:
    from graphruntime.store.base import BaseStore

__all__ = ("RunnableConfig", "StreamWriter", "get_config", "get_store", "get_stream_writer")


def get_store() -> BaseStore:
    """The store of the running graph (``compile(store=...)``); only inside a node.

    Raises:
        RuntimeError: called outside a running graph.
    """
    runtime: Any = get_config()[CONF].get(CONFIG_KEY_RUNTIME)
    if runtime is None:
        raise UsageError(
            "get_store() called outside of a running graph: call it from a node, a task or a tool "
            "while the graph runs, or read the store from the graph you compiled"
        )
    store: BaseStore = runtime.store
    return store
