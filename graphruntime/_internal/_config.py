"""The run config type and the context variable that carries it into nodes."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypedDict

from graphruntime._internal._constants import CONF


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


def ensure_config(*configs: RunnableConfig | None) -> RunnableConfig:
    """Merge configs left to right; ``configurable`` and ``metadata`` merge key-wise."""
    out: dict[str, Any] = {CONF: {}, "metadata": {}, "tags": []}
    parent = var_config.get()
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


def merge_configs(*configs: RunnableConfig | None) -> RunnableConfig:
    """Merge configs left to right, as LangGraph's ``merge_configs``.

    Empty values are skipped; ``configurable`` and ``metadata`` merge key-wise, ``tags``
    and callback lists concatenate, anything else is replaced by the later config.
    """
    base: dict[str, Any] = {}
    for config in configs:
        if not config:
            continue
        for key, value in config.items():
            if not value:
                continue
            current = base.get(key)
            if key in (CONF, "metadata") and isinstance(value, dict):
                base[key] = {**current, **value} if current else dict(value)
            elif isinstance(current, list) and key in ("tags", "callbacks"):
                base[key] = [*current, *value] if isinstance(value, list) else value
            else:
                base[key] = value
    base.setdefault(CONF, {})
    return base  # type: ignore[return-value]


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
        raise RuntimeError("Called get_config outside of a runnable context")
    return cfg


StreamWriter = Callable[[Any], None]


def _noop_writer(_: Any) -> None:
    return None


def get_stream_writer() -> StreamWriter:
    """The writer for ``stream_mode="custom"``; a no-op when nobody streams custom."""
    cfg = var_config.get()
    if cfg is None:
        raise RuntimeError("Called get_config outside of a runnable context")
    from graphruntime._internal._constants import CONFIG_KEY_CUSTOM_WRITER

    writer: StreamWriter | None = cfg.get(CONF, {}).get(CONFIG_KEY_CUSTOM_WRITER)
    return writer or _noop_writer
