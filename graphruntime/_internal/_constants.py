"""Reserved channel names, write keys and config keys (LangGraph-compatible values)."""

from __future__ import annotations

import sys
from typing import Final

# --- reserved write keys / channels ---
INPUT: Final = sys.intern("__input__")
INTERRUPT: Final = sys.intern("__interrupt__")
RESUME: Final = sys.intern("__resume__")
ERROR: Final = sys.intern("__error__")
NO_WRITES: Final = sys.intern("__no_writes__")
TASKS: Final = sys.intern("__pregel_tasks")
RETURN: Final = sys.intern("__return__")
PUSH: Final = sys.intern("__pregel_push")
PULL: Final = sys.intern("__pregel_pull")
SCHEDULED: Final = sys.intern("__scheduled__")
ERROR_SOURCE_NODE: Final = sys.intern("__error_source_node__")
"""Saved with a failed task's error when its node has an error handler: the node's name."""
PREVIOUS: Final = sys.intern("__previous__")
RUN_MARK: Final = sys.intern("__run__")
"""A null-task write naming the run whose Command was recorded at this step."""
ROOT: Final = "__root__"
COPY: Final = "__copy__"
NULL_TASK_ID: Final = "00000000-0000-0000-0000-000000000000"

NS_SEP: Final = "|"
NS_END: Final = ":"

RESERVED: Final = frozenset(
    {
        INTERRUPT,
        RESUME,
        ERROR,
        ERROR_SOURCE_NODE,
        NO_WRITES,
        TASKS,
        RETURN,
        SCHEDULED,
        PUSH,
        PULL,
        INPUT,
        RUN_MARK,
    }
)
# writes that only record control flow; a task with only these did not finish
CONTROL_WRITES: Final = frozenset({INTERRUPT, RESUME, ERROR, SCHEDULED, ERROR_SOURCE_NODE})
WRITES_IDX_MAP: Final = {ERROR: -1, SCHEDULED: -2, INTERRUPT: -3, RESUME: -4}

# --- config["configurable"] keys the runtime sets for nodes and subgraphs ---
CONF: Final = "configurable"
CONFIG_KEY_THREAD_ID: Final = "thread_id"
CONFIG_KEY_CHECKPOINT_ID: Final = "checkpoint_id"
CONFIG_KEY_CHECKPOINT_NS: Final = "checkpoint_ns"
CONFIG_KEY_CHECKPOINT_MAP: Final = "checkpoint_map"
CONFIG_KEY_SEND: Final = "__pregel_send"
CONFIG_KEY_READ: Final = "__pregel_read"
# () -> the graph's channel values as a node of this task would read them fresh: what a
# ToolNode given bare tool calls (a Send of a list of calls) gives InjectedState
CONFIG_KEY_READ_STATE: Final = "__pregel_read_state"
CONFIG_KEY_CALL: Final = "__pregel_call"
CONFIG_KEY_SCRATCHPAD: Final = "__pregel_scratchpad"
CONFIG_KEY_CHECKPOINTER: Final = "__pregel_checkpointer"
CONFIG_KEY_STREAM: Final = "__pregel_stream"
CONFIG_KEY_TASK_ID: Final = "__pregel_task_id"
CONFIG_KEY_RESUMING: Final = "__pregel_resuming"
CONFIG_KEY_RESUME_MAP: Final = "__pregel_resume_map"
CONFIG_KEY_RUNTIME: Final = "__pregel_runtime"
CONFIG_KEY_CUSTOM_WRITER: Final = "__pregel_custom_writer"
CONFIG_KEY_NODE_FINISHED: Final = "__pregel_node_finished"
CONFIG_KEY_DURABILITY: Final = "__pregel_durability"
# set by a run whose executor spreads its steps over processes (RunOptions.shared_saver):
# subgraphs compiled with a saver of their own save with the run's instead
CONFIG_KEY_SHARED_SAVER: Final = "__pregel_shared_saver"
# the SaverIO that performs the run's saver requests: its subgraphs' go to it too
CONFIG_KEY_SAVER_IO: Final = "__pregel_saver_io"
CONFIG_KEY_REPLAY_STATE: Final = "__pregel_replay_state"
CONFIG_KEY_NODE_ERROR: Final = "__pregel_node_error"
"""An error handler's ``NodeError``: which node failed, with what."""
CONFIG_KEY_CACHE: Final = "__pregel_cache"
CACHE_NS_WRITES: Final = "__pregel_ns_writes"

DEFAULT_RECURSION_LIMIT: Final = 10007
