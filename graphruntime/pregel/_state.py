"""The state API: read a thread (get_state, history) and edit it (update_state)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from graphruntime._internal._config import RunnableConfig, ensure_config
from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_CHECKPOINT_ID,
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_READ,
    CONFIG_KEY_THREAD_ID,
    COPY,
    ERROR,
    INPUT,
    INTERRUPT,
    NS_END,
    NS_SEP,
    NULL_TASK_ID,
    RESUME,
    TASKS,
)
from graphruntime.checkpoint.base import (
    BaseCheckpointSaver,
    CheckpointMetadata,
    CheckpointTuple,
    copy_checkpoint,
    empty_checkpoint,
)
from graphruntime.constants import END, START
from graphruntime.errors import InvalidUpdateError
from graphruntime.pregel._algo import (
    PreparedTask,
    StepContext,
    TaskWrites,
    apply_writes,
    channels_from_checkpoint,
    create_checkpoint,
    local_read,
    prepare_next_tasks,
    read_channels,
    task_finished,
)
from graphruntime.pregel._node import GraphSpec
from graphruntime.types import PregelTask, StateSnapshot


def _ns(config: RunnableConfig) -> str:
    return str(config.get(CONF, {}).get(CONFIG_KEY_CHECKPOINT_NS, ""))


def _resolve(graph: GraphSpec, config: RunnableConfig) -> GraphSpec:
    """The (sub)graph that owns the config's checkpoint_ns ("node:<task id>|...")."""
    ns = _ns(config)
    if not ns:
        return graph
    current = graph
    for part in ns.split(NS_SEP):
        name = part.split(NS_END)[0]
        if name.isdigit():
            continue
        node = current.nodes.get(name)
        if node is None or not node.subgraphs:
            raise ValueError(f"Subgraph {name} not found")
        current = node.subgraphs[0]
    return current


def get_state(
    graph: GraphSpec,
    saver: BaseCheckpointSaver,
    config: RunnableConfig,
    *,
    subgraphs: bool = False,
) -> StateSnapshot:
    config = ensure_config(config)
    graph = _resolve(graph, config)
    conf = config[CONF]
    saved = saver.get_tuple({CONF: {k: v for k, v in conf.items() if not k.startswith("__")}})
    if saved is None:
        return StateSnapshot({}, (), config, None, None, None, (), ())
    live = not conf.get(CONFIG_KEY_CHECKPOINT_ID)
    return snapshot(graph, saved, live=live, subgraphs=subgraphs, saver=saver)


def get_state_history(
    graph: GraphSpec,
    saver: BaseCheckpointSaver,
    config: RunnableConfig,
    *,
    filter: dict[str, Any] | None = None,
    before: RunnableConfig | None = None,
    limit: int | None = None,
) -> Iterator[StateSnapshot]:
    config = ensure_config(config)
    graph = _resolve(graph, config)
    conf = config[CONF]
    query: RunnableConfig = {
        CONF: {
            CONFIG_KEY_THREAD_ID: conf.get(CONFIG_KEY_THREAD_ID),
            CONFIG_KEY_CHECKPOINT_NS: _ns(config),
            **(
                {CONFIG_KEY_CHECKPOINT_ID: conf[CONFIG_KEY_CHECKPOINT_ID]}
                if conf.get(CONFIG_KEY_CHECKPOINT_ID)
                else {}
            ),
        }
    }
    for saved in saver.list(query, filter=filter, before=before, limit=limit):
        yield snapshot(graph, saved, live=False, subgraphs=False, saver=saver)


def _step_tasks(
    graph: GraphSpec, saved: CheckpointTuple
) -> tuple[Any, Any, dict[str, PreparedTask]]:
    checkpoint = copy_checkpoint(saved.checkpoint)
    channels = channels_from_checkpoint(graph.channel_specs, checkpoint)
    pending = list(saved.pending_writes or [])
    null = [(c, v) for tid, c, v in pending if tid == NULL_TASK_ID and c != RESUME]
    if null:
        apply_writes(
            checkpoint, channels, [TaskWrites(INPUT, (), (), null)], None, graph.trigger_to_nodes
        )
    step = saved.metadata.get("step", -1) + 1
    ctx = StepContext(
        nodes=graph.nodes,
        trigger_to_nodes=graph.trigger_to_nodes,
        parent_ns=saved.config[CONF].get(CONFIG_KEY_CHECKPOINT_NS, ""),
        step=step,
    )
    tasks = prepare_next_tasks(checkpoint, channels, ctx, for_execution=False)
    return checkpoint, channels, tasks


def _task_result(channels: Sequence[str] | str, writes: Sequence[tuple[str, Any]]) -> Any:
    if isinstance(channels, str):  # the state is one value: the value the task wrote
        values = [v for c, v in writes if c == channels]
        if not values:
            return None
        return values[0] if len(values) == 1 else {"$writes": values}
    return {c: v for c, v in writes if c in channels}


def snapshot(
    graph: GraphSpec,
    saved: CheckpointTuple,
    *,
    live: bool,
    subgraphs: bool,
    saver: BaseCheckpointSaver,
) -> StateSnapshot:
    """A StateSnapshot of a saved checkpoint: live (pending writes applied) or as recorded."""
    checkpoint, channels, tasks = _step_tasks(graph, saved)
    pending = list(saved.pending_writes or [])
    by_task: dict[str, list[tuple[str, Any]]] = {}
    for tid, c, v in pending:
        if tid in tasks:
            by_task.setdefault(tid, []).append((c, v))
    if live:
        for tid, writes in by_task.items():
            tasks[tid].writes.extend((c, v) for c, v in writes if c not in (ERROR, INTERRUPT))
        with_writes = [t for t in tasks.values() if t.writes]
        if with_writes:
            apply_writes(checkpoint, channels, with_writes, None, graph.trigger_to_nodes)
    out_tasks: list[PregelTask] = []
    for task in tasks.values():
        writes = by_task.get(task.id, [])
        finished = task_finished(writes)
        error = next((v for c, v in writes if c == ERROR), None)
        interrupts = (
            tuple(i for c, v in writes if c == INTERRUPT for i in v)
            if (not live or not finished)
            else ()
        )
        result = _task_result(graph.stream_channels, writes) if finished else None
        state: Any = None
        if task.node.subgraphs:
            child_config: RunnableConfig = {
                CONF: {
                    CONFIG_KEY_THREAD_ID: saved.config[CONF][CONFIG_KEY_THREAD_ID],
                    CONFIG_KEY_CHECKPOINT_NS: task.checkpoint_ns,
                }
            }
            state = child_config
            if subgraphs:
                child = task.node.subgraphs[0]
                child_saved = saver.get_tuple(child_config)
                if child_saved is not None:
                    state = snapshot(child, child_saved, live=live, subgraphs=True, saver=saver)
        out_tasks.append(
            PregelTask(task.id, task.name, task.path, error, interrupts, state, result)
        )
    next_names = (
        tuple(t.name for t in tasks.values() if not task_finished(by_task.get(t.id, [])))
        if live
        else tuple(t.name for t in tasks.values())
    )
    return StateSnapshot(
        values=read_channels(channels, graph.stream_channels),
        next=next_names,
        config=saved.config,
        metadata=dict(saved.metadata),
        created_at=saved.checkpoint["ts"],
        parent_config=saved.parent_config,
        tasks=tuple(out_tasks),
        interrupts=tuple(i for t in out_tasks for i in t.interrupts),
    )


def _infer_as_node(graph: GraphSpec, saved: CheckpointTuple | None) -> str:
    user_nodes = [n for n, spec in graph.nodes.items() if not spec.hidden]
    if len(user_nodes) == 1:
        return user_nodes[0]
    if saved is None:
        return START
    seen = saved.checkpoint["versions_seen"]
    last_seen = {
        n: max(v.values()) for n, v in seen.items() if n in graph.nodes and v and n != START
    }
    if not last_seen:
        return START
    top = max(last_seen.values())
    winners = [n for n, v in last_seen.items() if v == top]
    if len(winners) > 1:
        raise InvalidUpdateError("Ambiguous update, specify as_node")
    return winners[0]


def update_state(
    graph: GraphSpec,
    saver: BaseCheckpointSaver,
    config: RunnableConfig,
    values: Any,
    as_node: str | None = None,
) -> RunnableConfig:
    config = ensure_config(config)
    graph = _resolve(graph, config)
    conf = config[CONF]
    base = {k: v for k, v in conf.items() if not k.startswith("__")}
    saved = saver.get_tuple({CONF: base})
    if as_node is None:
        as_node = _infer_as_node(graph, saved)
    if as_node not in graph.nodes and as_node not in (END, INPUT, COPY):
        raise InvalidUpdateError(f"Node {as_node} does not exist")
    thread_conf = {
        CONFIG_KEY_THREAD_ID: conf.get(CONFIG_KEY_THREAD_ID),
        CONFIG_KEY_CHECKPOINT_NS: _ns(config),
    }
    if saved is None:
        checkpoint = empty_checkpoint()
        channels = channels_from_checkpoint(graph.channel_specs, checkpoint)
        step = 0
        tasks: dict[str, PreparedTask] = {}
        put_config: RunnableConfig = {CONF: dict(thread_conf)}
    else:
        checkpoint, channels, tasks = _step_tasks(graph, saved)
        step = saved.metadata.get("step", -1) + 1
        put_config = saved.config
    if as_node == COPY:
        new = create_checkpoint(checkpoint, None, step)
        return saver.put(
            put_config,
            new,
            {
                "source": "fork",
                "step": step,
                "parents": saved.metadata.get("parents", {}) if saved else {},
            },
            dict(new["channel_versions"]),
        )
    before_versions = dict(checkpoint["channel_versions"])
    get_next_version = saver.get_next_version
    if saved is not None and not conf.get(CONFIG_KEY_CHECKPOINT_ID):
        # editing the head: writes of tasks that already finished in this step are kept
        for tid, c, v in saved.pending_writes or []:
            if c in (ERROR, INTERRUPT) or tid not in tasks:
                continue
            tasks[tid].writes.append((c, v))
        if as_node in (END, INPUT) or tasks:
            apply_writes(
                checkpoint, channels, tasks.values(), get_next_version, graph.trigger_to_nodes
            )
    if as_node == INPUT:
        writes: list[tuple[str, Any]] = [(START, values)]
        apply_writes(
            checkpoint,
            channels,
            [TaskWrites(INPUT, (), (), writes)],
            get_next_version,
            graph.trigger_to_nodes,
        )
        source = "input"
    elif as_node == END:
        source = "update"
    else:
        node = graph.nodes[as_node]
        task_writes: list[tuple[str, Any]] = []

        def read(select: Any, fresh: bool = False) -> Any:
            return local_read(channels, task_writes, select, fresh=fresh)

        writer_config: RunnableConfig = {**config, CONF: {**conf, CONFIG_KEY_READ: read}}
        for writer in node.writers:
            task_writes.extend(writer(values, writer_config))
        updated = apply_writes(
            checkpoint,
            channels,
            [TaskWrites(as_node, (), (INTERRUPT,), task_writes)],
            get_next_version,
            graph.trigger_to_nodes,
        )
        checkpoint["updated_channels"] = sorted(updated)
        source = "update"
    new = create_checkpoint(checkpoint, channels, step, updated_channels=None)
    new["updated_channels"] = None
    new_versions = {k: v for k, v in new["channel_versions"].items() if before_versions.get(k) != v}
    return saver.put(
        put_config,
        new,
        {
            "source": source,  # type: ignore[typeddict-item]
            "step": step,
            "parents": dict(saved.metadata.get("parents", {})) if saved else {},
        },
        new_versions,
    )


def end_pending(
    graph: GraphSpec,
    saver: BaseCheckpointSaver,
    config: RunnableConfig,
    metadata: dict[str, Any],
) -> RunnableConfig | None:
    """Put a checkpoint after the thread's latest in which nothing is left to run.

    The state's values stay; every node counts as having seen them, and queued Sends
    are dropped, so ``get_state().next`` is empty and a resume finds no interrupt.
    ``metadata`` is added to the checkpoint's (e.g. why and by whom). Returns the new
    checkpoint's config, or None for a thread without checkpoints. For executors that
    end a thread's work (the workers' cancel); give a fenced saver to refuse a thread
    that moved meanwhile.
    """
    config = ensure_config(config)
    conf = config[CONF]
    saved = saver.get_tuple(
        {CONF: {CONFIG_KEY_THREAD_ID: conf.get(CONFIG_KEY_THREAD_ID), CONFIG_KEY_CHECKPOINT_NS: ""}}
    )
    if saved is None:
        return None
    checkpoint = copy_checkpoint(saved.checkpoint)
    versions = checkpoint["channel_versions"]
    before = dict(versions)
    seen = checkpoint["versions_seen"]
    for name, node in graph.nodes.items():
        seen.setdefault(name, {}).update({c: versions[c] for c in node.triggers if c in versions})
    seen.setdefault(INTERRUPT, {}).update(versions)
    channels = channels_from_checkpoint(graph.channel_specs, checkpoint)
    if TASKS in channels and channels[TASKS].is_available() and channels[TASKS].update([]):
        versions[TASKS] = saver.get_next_version(max(versions.values()), None)
    step = saved.metadata.get("step", -1) + 1
    new = create_checkpoint(checkpoint, channels, step, updated_channels=None)
    new["updated_channels"] = None
    new_versions = {k: v for k, v in new["channel_versions"].items() if before.get(k) != v}
    stored: CheckpointMetadata = {
        "source": "update",
        "step": step,
        "parents": dict(saved.metadata.get("parents", {})),
    }
    stored.update(metadata)  # type: ignore[typeddict-item]
    return saver.put(saved.config, new, stored, new_versions)
