"""The run config type and the context variable that carries it into nodes."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypedDict

from graphruntime._internal._constants import CONF
from graphruntime._internal._errors import UsageError


class RunnableConfig(TypedDict, total=False):
    """The config dict accepted by ``invoke``/``stream`` (LangChain-compatible keys)."""

    configurable: dict[str, Any]
    metadata: dict[str, Any]
    tags: list[str]
    callbacks: Any
    run_name: str
    run_id: Any
    recursion_limit: int
    max_concurrency: int | None


var_config: ContextVar[RunnableConfig | None] = ContextVar("graphruntime_config", default=None)


# an explicit config naming one of these addresses a checkpoint lineage of its own
_COORDINATES = ("thread_id", "checkpoint_ns", "checkpoint_id", "checkpoint_map")


def ensure_config(*configs: RunnableConfig | None) -> RunnableConfig:
    """Merge configs left to right; ``configurable`` and ``metadata`` merge key-wise.

    Inside a node the node's config comes first. A config that names its own thread
    or checkpoint does not inherit the node's ``configurable``: a graph invoked so is
    a run of its own, not a subgraph of the node's graph.
    """
    out: dict[str, Any] = {CONF: {}, "metadata": {}, "tags": []}
    parent = var_config.get()
    if parent is not None and any(
        (c.get(CONF) or {}).get(k) for c in configs if c for k in _COORDINATES
    ):
        parent = {k: v for k, v in parent.items() if k != CONF}  # type: ignore[assignment]
    for cfg in (parent, *configs):
        if not cfg:
            continue
        for key, value in cfg.items():
            if key in (CONF, "metadata") and isinstance(value, dict):
                out[key] = {**out[key], **value}
            elif key == "tags" and isinstance(value, list):
                out[key] = list(dict.fromkeys([*out[key], *value]))
            elif value is not None:
                out[key] = value
    return out  # type: ignore[return-value]


def _merge_callbacks(base: Any, new: Any) -> Any:
    """Callbacks of both: handler lists concatenate; a LangChain manager takes the others."""
    if new is None:
        return base
    if base is None:
        return new.copy() if hasattr(new, "copy") else new
    if isinstance(new, list) and isinstance(base, list):
        return base + new
    if isinstance(new, list):  # a callback manager, then handlers
        manager = base.copy()
        for handler in new:
            manager.add_handler(handler, inherit=True)
        return manager
    if isinstance(base, list):
        manager = new.copy()
        for handler in base:
            manager.add_handler(handler, inherit=True)
        return manager
    return base.merge(new)


def merge_configs(*configs: RunnableConfig | None) -> RunnableConfig:
    """Configs layered left to right, as LangChain's ``merge_configs``.

    ``configurable`` and ``metadata`` merge key-wise, tags concatenate, callbacks
    combine; other keys are replaced.
    """
    out: dict[str, Any] = {}
    for config in configs:
        items: dict[str, Any] = dict(config or {})
        for key, value in items.items():
            if key in (CONF, "metadata"):
                out[key] = {**out.get(key, {}), **(value or {})}
            elif key == "tags":
                out[key] = [*out.get(key, []), *(value or [])]
            elif key == "callbacks":
                out[key] = _merge_callbacks(out.get(key), value)
            else:
                out[key] = value
    return out  # type: ignore[return-value]


def patch_config(
    config: RunnableConfig,
    *,
    configurable: dict[str, Any] | None = None,
    **rest: Any,
) -> RunnableConfig:
    out: dict[str, Any] = dict(config)
    if configurable:
        out[CONF] = {**config.get(CONF, {}), **configurable}
    out.update(rest)
    return out  # type: ignore[return-value]


def get_config() -> RunnableConfig:
    """The config of the running node; only valid inside a node or router."""
    cfg = var_config.get()
    if cfg is None:
        raise UsageError("Called get_config outside of a runnable context")
    return cfg


StreamWriter = Callable[[Any], None]


def _noop_writer(_: Any) -> None:
    return None


def get_stream_writer() -> StreamWriter:
    """The writer for ``stream_mode="custom"``; a no-op when nobody streams custom."""
    cfg = var_config.get()
    if cfg is None:
        raise UsageError("Called get_config outside of a runnable context")
    from graphruntime._internal._constants import CONFIG_KEY_CUSTOM_WRITER

    writer: StreamWriter | None = cfg.get(CONF, {}).get(CONFIG_KEY_CUSTOM_WRITER)
    return writer or _noop_writer
