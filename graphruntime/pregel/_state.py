"""The state API: read a thread (get_state, history) and edit it (update_state)."""

from __future__ import annotations

import asyncio
import inspect
from collections import defaultdict, deque
from collections.abc import Awaitable, Generator, Sequence
from functools import partial
from typing import Any
from uuid import UUID, uuid5

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
    PUSH,
    RESUME,
    RETURN,
    TASKS,
)
from graphruntime._internal._twin import END as NO_MORE
from graphruntime._internal._twin import Call, Close, Next
from graphruntime._internal._typing import MISSING
from graphruntime.checkpoint.base import (
    BaseCheckpointSaver,
    CheckpointTuple,
    copy_checkpoint,
    empty_checkpoint,
)
from graphruntime.constants import END
from graphruntime.errors import InvalidArgumentError, InvalidUpdateError
from graphruntime.pregel._algo import (
    PreparedTask,
    StepContext,
    TaskWrites,
    apply_writes,
    create_checkpoint,
    local_read,
    prepare_next_tasks,
    read_channels,
    task_finished,
    task_path_str,
)
from graphruntime.pregel._delta import (
    COUNTERS,
    DeltaTracker,
    delta_names,
    load_channels,
    versions_seen_without_bumps,
)
from graphruntime.pregel._io import map_input
from graphruntime.pregel._message_ids import ensure_message_ids
from graphruntime.pregel._node import GraphSpec
from graphruntime.pregel.debug import map_task_result_writes, with_checkpoint_map
from graphruntime.types import PregelTask, StateSnapshot, StateUpdate


def _ns(config: RunnableConfig) -> str:
    return str(config.get(CONF, {}).get(CONFIG_KEY_CHECKPOINT_NS, ""))


def _resolve(graph: GraphSpec, config: RunnableConfig, *, for_update: bool = False) -> GraphSpec:
    """The (sub)graph that owns the config's checkpoint_ns ("node:<task id>|...").

    A namespace naming no subgraph this graph declares (one a tool invokes, say) is
    read with this graph's channels; updating it raises, as it would write the
    wrong state.
    """
    ns = _ns(config)
    if not ns:
        return graph
    recast = NS_SEP.join(part.split(NS_END)[0] for part in ns.split(NS_SEP) if not part.isdigit())
    get_subgraphs = getattr(graph, "get_subgraphs", None)
    if get_subgraphs is not None:
        for _, sub in get_subgraphs(namespace=recast, recurse=True):
            found: GraphSpec = sub
            return found
    if for_update:
        raise InvalidArgumentError(f"Subgraph {recast} not found")
    return graph


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


def state_history(
    graph: GraphSpec,
    saver: BaseCheckpointSaver,
    config: RunnableConfig,
    *,
    filter: dict[str, Any] | None = None,
    before: RunnableConfig | None = None,
    limit: int | None = None,
    is_async: bool,
) -> Generator[Any, Any, None]:
    """The thread's checkpoints as snapshots, newest first: ``get_state_history`` and its
    async twin, written once (``_twin.py``).

    The async one reads with the saver's ``alist`` and yields each snapshot as soon as its
    checkpoint arrives; it builds the snapshot in a thread, as a snapshot may read the
    saver's sync methods (a delta channel's history).
    """
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
    listing = saver.alist if is_async else saver.list
    checkpoints = listing(query, filter=filter, before=before, limit=limit)
    try:
        while (saved := (yield Next(checkpoints))) is not NO_MORE:
            made = partial(snapshot, graph, saved, live=False, subgraphs=False, saver=saver)
            yield (yield Call(made, partial(asyncio.to_thread, made)))
    finally:
        yield Close(checkpoints)  # a reader that stops early ends the saver's listing


def _step_tasks(
    graph: GraphSpec,
    saved: CheckpointTuple,
    saver: BaseCheckpointSaver,
    delta: DeltaTracker | None = None,
) -> tuple[Any, Any, dict[str, PreparedTask]]:
    checkpoint = copy_checkpoint(saved.checkpoint)
    channels = load_channels(graph.channel_specs, checkpoint, saver=saver, config=saved.config)
    pending = list(saved.pending_writes or [])
    null = [(c, v) for tid, c, v in pending if tid == NULL_TASK_ID and c != RESUME]
    if delta is not None:
        delta.applied(NULL_TASK_ID, null)
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


def _task_result(keys: str | Sequence[str], writes: list[tuple[str, Any]]) -> Any:
    """What a finished task produced: a @task call's return value, the value it wrote to
    a single output key, or its writes to the output keys."""
    returned = next((v for c, v in writes if c == RETURN), MISSING)
    if returned is not MISSING:
        return returned
    if isinstance(keys, str):  # the state is one value: the value the task wrote
        values = [v for c, v in writes if c == keys]
        if not values:
            return None
        return values[0] if len(values) == 1 else {"$writes": values}
    return map_task_result_writes([(c, v) for c, v in writes if c in keys])


def snapshot(
    graph: GraphSpec,
    saved: CheckpointTuple,
    *,
    live: bool,
    subgraphs: bool,
    saver: BaseCheckpointSaver,
) -> StateSnapshot:
    """A StateSnapshot of a saved checkpoint: live (pending writes applied) or as recorded."""
    checkpoint, channels, tasks = _step_tasks(graph, saved, saver)
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
            child_ns = task.checkpoint_ns
            if getattr(task.node.subgraphs[0], "checkpointer", None) is True:
                # a stateful subgraph keeps its history under its namespace without ids
                child_ns = NS_SEP.join(p.split(NS_END)[0] for p in child_ns.split(NS_SEP))
            child_config: RunnableConfig = {
                CONF: {
                    CONFIG_KEY_THREAD_ID: saved.config[CONF][CONFIG_KEY_THREAD_ID],
                    CONFIG_KEY_CHECKPOINT_NS: child_ns,
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
        config=with_checkpoint_map(saved.config, saved.metadata) or saved.config,
        metadata=dict(saved.metadata),
        created_at=saved.checkpoint["ts"],
        parent_config=with_checkpoint_map(saved.parent_config, saved.metadata),
        tasks=tuple(out_tasks),
        interrupts=tuple(i for t in out_tasks for i in t.interrupts),
    )


def _infer_as_node(graph: GraphSpec, saved: CheckpointTuple | None) -> str:
    """The node an update without ``as_node`` is applied as, as LangGraph infers it: the
    graph's only node, else the node that saw the newest channel version (``__start__``
    when the last thing to happen was the input), else the input node."""
    if len(graph.nodes) == 1:  # counting the hidden __start__: an entrypoint's node
        return next(iter(graph.nodes))
    seen = versions_seen_without_bumps(saved.checkpoint["versions_seen"]) if saved else {}
    last_seen = {n: max(v.values()) for n, v in seen.items() if n in graph.nodes and v}
    if not last_seen:
        inputs = graph.input_channels
        if isinstance(inputs, str) and inputs in graph.nodes:
            return inputs
        raise InvalidUpdateError("Ambiguous update, specify as_node")
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
    task_id: str | None = None,
) -> RunnableConfig:
    """Apply ``values`` as if ``as_node`` had returned them: one new checkpoint."""
    return bulk_update_state(graph, saver, config, [[StateUpdate(values, as_node, task_id)]])


async def _resolve_awaitable(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _update_task_id(checkpoint_id: str, i: int) -> str:
    """The id of the ``i``th update of a superstep that has no prepared task to reuse."""
    return str(uuid5(UUID(checkpoint_id), INTERRUPT if i == 0 else f"{INTERRUPT}:{i}"))


def _superseded(saver: BaseCheckpointSaver, saved: CheckpointTuple) -> bool:
    """Whether the thread moved past ``saved`` (it is not the namespace's latest)."""
    conf = saved.config[CONF]
    latest = saver.get_tuple(
        {CONF: {k: v for k, v in conf.items() if k != CONFIG_KEY_CHECKPOINT_ID}}
    )
    return latest is not None and latest.checkpoint["id"] != saved.checkpoint["id"]


def bulk_update_state(
    graph: GraphSpec,
    saver: BaseCheckpointSaver,
    config: RunnableConfig,
    supersteps: Sequence[Sequence[StateUpdate | tuple[Any, ...]]],
) -> RunnableConfig:
    """Apply each superstep's updates together, one checkpoint per superstep, in order."""
    if not supersteps:
        raise InvalidArgumentError("No supersteps provided")
    if any(not updates for updates in supersteps):
        raise InvalidArgumentError("No updates provided")
    config = ensure_config(config)
    graph = _resolve(graph, config, for_update=True)
    current = config
    for i, updates in enumerate(supersteps):
        current = _update_superstep(
            graph, saver, current, [StateUpdate(*update) for update in updates], first=i == 0
        )
    return current


def _update_superstep(
    graph: GraphSpec,
    saver: BaseCheckpointSaver,
    config: RunnableConfig,
    updates: Sequence[StateUpdate],
    *,
    first: bool = True,
) -> RunnableConfig:
    conf = config[CONF]
    base = {k: v for k, v in conf.items() if not k.startswith("__")}
    saved = saver.get_tuple({CONF: base})
    values: Any
    if len(updates) == 1:
        values, as_node, _ = updates[0]
        if as_node is None:
            as_node = _infer_as_node(graph, saved)
        updates = [StateUpdate(values, as_node, updates[0].task_id)]
    else:
        for update in updates:
            if update.as_node is None:
                raise InvalidUpdateError("as_node is required when applying multiple updates")
            if update.as_node in (END, INPUT, COPY):
                raise InvalidUpdateError(
                    f"Cannot apply multiple updates when updating as {update.as_node}"
                )
    as_node = updates[0].as_node
    values = updates[0].values
    for update in updates:
        if update.as_node not in graph.nodes and update.as_node not in (END, INPUT, COPY):
            raise InvalidUpdateError(f"Node {update.as_node} does not exist")
    thread_conf = {
        CONFIG_KEY_THREAD_ID: conf.get(CONFIG_KEY_THREAD_ID),
        CONFIG_KEY_CHECKPOINT_NS: _ns(config),
    }
    delta = DeltaTracker(graph.channel_specs)
    if saved is None:
        checkpoint = empty_checkpoint()
        channels = load_channels(graph.channel_specs, checkpoint, saver=saver, config=None)
        step = -1 if as_node == INPUT else 0
        tasks: dict[str, PreparedTask] = {}
        put_config: RunnableConfig = {CONF: dict(thread_conf)}
    else:
        delta.rebase(saved.pending_writes or ())
        # the base's own writes were made for a child other than this update's, in
        # an order this update does not replay: its DeltaChannels start afresh
        delta.force(c for _, c, _ in saved.pending_writes or ())
        checkpoint, channels, tasks = _step_tasks(graph, saved, saver, delta)
        step = saved.metadata.get("step", -1) + 1
        put_config = saved.config
    parents = dict(saved.metadata.get("parents", {})) if saved else {}

    # The update's writes are also saved on the checkpoint it builds on, under the
    # task ids that step prepared, so its history shows them as those tasks' results
    # and the new checkpoint replays its DeltaChannels from them; not when the thread
    # moved past it (its other children would read them): then the new one snapshots.
    keep_writes = saved is not None and not (first and _superseded(saver, saved))

    def put(new: Any, metadata: dict[str, Any], versions: dict[str, Any]) -> RunnableConfig:
        out = saver.put(put_config, new, metadata, versions)  # type: ignore[arg-type]
        return with_checkpoint_map(out, saved.metadata if saved else None) or out

    if as_node == COPY:
        if saved is None:
            raise InvalidUpdateError("Cannot copy a non-existent checkpoint")
        # A sibling of the copied checkpoint, as in LangGraph: same values, same parent,
        # so a DeltaChannel's history (its parent's writes) reads the same too.
        new = create_checkpoint(copy_checkpoint(saved.checkpoint), None, step)
        metadata: dict[str, Any] = {"source": "fork", "step": step, "parents": parents}
        if (counters := saved.metadata.get(COUNTERS)) is not None:
            metadata[COUNTERS] = counters
        put_config = saved.parent_config or {CONF: dict(thread_conf)}
        copied = put(new, metadata, dict(new["channel_versions"]))
        if isinstance(values, list) and values:
            # copy and update in one go: the updates apply to the copy
            for item in values:
                if not isinstance(item, Sequence):
                    raise InvalidUpdateError(f"Invalid update item: {item} when copying checkpoint")
            return _update_superstep(
                graph, saver, copied, [StateUpdate(*item) for item in values], first=False
            )
        return copied
    before_versions = dict(checkpoint["channel_versions"])
    get_next_version = saver.get_next_version
    if saved is not None and (as_node == END or not conf.get(CONFIG_KEY_CHECKPOINT_ID)):
        # editing the head, or clearing a step: writes of tasks that already finished
        # in this step are kept
        for tid, c, v in saved.pending_writes or []:
            if c in (ERROR, INTERRUPT) or tid not in tasks:
                continue
            tasks[tid].writes.append((c, v))
        # as END or input the step's other tasks are dropped; as a node, only those
        # that finished count (the others still run after the update)
        applied = (
            list(tasks.values())
            if as_node in (END, INPUT)
            else [t for t in tasks.values() if t.writes]
        )
        for task in applied:
            if task.writes:
                delta.handed_back(task.id)
                delta.applied(task.id, task.writes)
        if applied:
            apply_writes(checkpoint, channels, applied, get_next_version, graph.trigger_to_nodes)
    updated: set[str] = set()
    if as_node == INPUT:
        writes = map_input(graph.input_channels, values)
        updated = apply_writes(
            checkpoint,
            channels,
            [TaskWrites(INPUT, (), (), writes)],
            get_next_version,
            graph.trigger_to_nodes,
        )
        input_id = str(uuid5(UUID(checkpoint["id"]), INPUT))
        delta.applied(input_id, writes)
        if keep_writes and saved is not None:
            saver.put_writes(saved.config, writes, input_id)
            delta.saved(input_id, writes)
        source = "input"
    elif as_node == END:
        source = "update"
    else:
        ran: list[TaskWrites] = []
        prepared: dict[str, deque[str]] = defaultdict(deque)
        for task in tasks.values():
            prepared[task.name].append(task.id)
        for i, update in enumerate(updates):
            node = graph.nodes[str(update.as_node)]
            task_writes: list[tuple[str, Any]] = []

            def read(
                select: Any, fresh: bool = False, _writes: list[tuple[str, Any]] = task_writes
            ) -> Any:
                return local_read(channels, _writes, select, fresh=fresh)

            writer_config: RunnableConfig = {**config, CONF: {**conf, CONFIG_KEY_READ: read}}
            for writer in node.writers:
                produced = writer(update.values, writer_config)
                if inspect.isawaitable(produced):  # an async router
                    produced = asyncio.run(_resolve_awaitable(produced))
                task_writes.extend(produced)
            ensure_message_ids(graph.channel_specs, task_writes)
            ran.append(TaskWrites(node.name, (INTERRUPT, i), (INTERRUPT,), task_writes))
            # the task this node would run in the step, if any: its result shows the update
            ids = prepared[node.name]
            tid = update.task_id or (ids.popleft() if ids else _update_task_id(checkpoint["id"], i))
            delta.applied(tid, task_writes)
            channel_writes = [w for w in task_writes if w[0] != PUSH]
            if keep_writes and saved is not None and channel_writes:
                saver.put_writes(saved.config, channel_writes, tid, task_path_str((INTERRUPT, i)))
                delta.saved(tid, channel_writes)
        updated = apply_writes(checkpoint, channels, ran, get_next_version, graph.trigger_to_nodes)
        checkpoint["updated_channels"] = sorted(updated)
        source = "update"
    metadata = {"source": source, "step": step, "parents": parents}
    snapshot = _update_snapshot(graph, saved, channels, checkpoint, updated, delta, metadata)
    new = create_checkpoint(
        checkpoint,
        channels,
        step,
        updated_channels=None,
        snapshot=snapshot,
        get_next_version=get_next_version,
        stored_versions=before_versions if saved is not None else {},
        trigger_to_nodes=graph.trigger_to_nodes,
    )
    new["updated_channels"] = None
    new_versions = {k: v for k, v in new["channel_versions"].items() if before_versions.get(k) != v}
    return put(new, metadata, new_versions)


def _update_snapshot(
    graph: GraphSpec,
    saved: CheckpointTuple | None,
    channels: dict[str, Any],
    checkpoint: Any,
    updated: set[str],
    delta: DeltaTracker,
    metadata: dict[str, Any],
) -> set[str]:
    """The DeltaChannels an update's checkpoint snapshots; its counters into ``metadata``.

    On a new thread every written one (there is no checkpoint to save writes on).
    """
    names = delta_names(graph.channel_specs)
    if not names:
        return set()
    versions = checkpoint["channel_versions"]
    if saved is None:
        return {k for k in names if k in versions and channels[k].is_available()}
    return delta.plan_checkpoint(saved.metadata, metadata, channels, versions, updated, saving=True)


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
    channels = load_channels(graph.channel_specs, checkpoint, saver=saver, config=saved.config)
    if TASKS in channels and channels[TASKS].is_available() and channels[TASKS].update([]):
        versions[TASKS] = saver.get_next_version(max(versions.values()), None)
    step = saved.metadata.get("step", -1) + 1
    stored: dict[str, Any] = {
        "source": "update",
        "step": step,
        "parents": dict(saved.metadata.get("parents", {})),
    }
    # the head's pending writes are dropped: its DeltaChannels must not replay them
    delta = DeltaTracker(graph.channel_specs)
    delta.rebase(saved.pending_writes or ())
    snapshot = _update_snapshot(graph, saved, channels, checkpoint, set(), delta, stored)
    new = create_checkpoint(
        checkpoint,
        channels,
        step,
        updated_channels=None,
        snapshot=snapshot,
        get_next_version=saver.get_next_version,
        stored_versions=before,
        trigger_to_nodes=graph.trigger_to_nodes,
    )
    new["updated_channels"] = None
    new_versions = {k: v for k, v in new["channel_versions"].items() if before.get(k) != v}
    stored.update(metadata)
    return saver.put(saved.config, new, stored, new_versions)  # type: ignore[arg-type]
