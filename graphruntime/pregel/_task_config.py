"""The part of a task's config that every task of a run shares, built once per run.

A task's config is the run's config with the task's own keys (namespace, id, step,
write and read callbacks, scratchpad, runtime). Copying a template whose keys are
already in their final order costs a fraction of rebuilding the dicts (and filtering
the run's ``configurable``) for every task.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_CALL,
    CONFIG_KEY_CHECKPOINT_ID,
    CONFIG_KEY_CHECKPOINT_MAP,
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_CHECKPOINTER,
    CONFIG_KEY_CUSTOM_WRITER,
    CONFIG_KEY_READ,
    CONFIG_KEY_READ_STATE,
    CONFIG_KEY_RESUME_MAP,
    CONFIG_KEY_RUNTIME,
    CONFIG_KEY_SCRATCHPAD,
    CONFIG_KEY_SEND,
    CONFIG_KEY_STREAM,
    CONFIG_KEY_TASK_ID,
    CONFIG_KEY_THREAD_ID,
)

__all__ = ("RunConfig",)


class RunConfig:
    """Templates of a run's task configs, valid while the run's config and resume map
    are the same objects (:meth:`matches`).

    The per-task keys hold None in the templates: a task's copy overwrites them in
    place, so key order is what building each config from scratch would give.
    """

    __slots__ = (
        "config",
        "resume_map",
        "ns",
        "parent_map",
        "_map",
        "configurable",
        "metadata",
        "template",
        "tags",
        "writer",
        "thread_id",
        "run_id",
        "child_callbacks",
    )

    def __init__(
        self,
        config: RunnableConfig,
        *,
        ns: str,
        resume_map: Mapping[str, Any] | None,
        checkpointer: Any,
        sink: Any,
        writer: Callable[[Any], None] | None,
    ) -> None:
        self.config = config
        self.resume_map = resume_map
        self.ns = ns
        conf = config[CONF]
        self.parent_map: Mapping[str, Any] = conf.get(CONFIG_KEY_CHECKPOINT_MAP, {})
        self._map: tuple[str, dict[str, Any]] = ("", {})
        configurable = {k: v for k, v in conf.items() if k != CONFIG_KEY_CHECKPOINT_ID}
        configurable.update(
            {
                CONFIG_KEY_SEND: None,
                CONFIG_KEY_READ: None,
                CONFIG_KEY_READ_STATE: None,
                CONFIG_KEY_SCRATCHPAD: None,
                CONFIG_KEY_CHECKPOINT_NS: None,
                CONFIG_KEY_TASK_ID: None,
                CONFIG_KEY_CHECKPOINTER: checkpointer,
                CONFIG_KEY_STREAM: sink,
                CONFIG_KEY_CHECKPOINT_MAP: None,
                CONFIG_KEY_CUSTOM_WRITER: writer,
                CONFIG_KEY_RESUME_MAP: resume_map,
                CONFIG_KEY_CALL: None,
                CONFIG_KEY_RUNTIME: None,
            }
        )
        self.configurable: dict[str, Any] = configurable
        self.metadata: dict[str, Any] = {
            **config.get("metadata", {}),
            "langgraph_step": None,
            "langgraph_node": None,
            "langgraph_triggers": None,
            "langgraph_path": None,
            "langgraph_checkpoint_ns": None,
        }
        self.template: dict[str, Any] = {**config, CONF: None, "metadata": None, "tags": None}
        self.tags: list[str] = list(config.get("tags", []))
        self.writer = writer
        self.thread_id = conf.get(CONFIG_KEY_THREAD_ID)
        self.run_id = config.get("run_id")
        callbacks = config.get("callbacks")
        # the graph's LangChain run (see _callbacks.py): each task gets a child of it
        self.child_callbacks = callbacks if hasattr(callbacks, "get_child") else None

    def matches(self, config: RunnableConfig, resume_map: Mapping[str, Any] | None) -> bool:
        return self.config is config and self.resume_map is resume_map

    def checkpoint_map(self, checkpoint_id: str) -> dict[str, Any]:
        """The tasks' ``checkpoint_map``: the parents' entries and this graph's checkpoint
        (one dict per checkpoint, shared by the tasks of its step)."""
        last_id, mapping = self._map
        if last_id != checkpoint_id:
            mapping = {**self.parent_map, self.ns: checkpoint_id}
            self._map = (checkpoint_id, mapping)
        return mapping
