"""The superstep algorithm, free of I/O.

Both drivers — the in-process loop and the distributed coordinator — call
these same functions: prepare the tasks of the next step from channel
versions, apply a finished step's writes, and decide static breakpoints.
Everything here is a function of its arguments; no saver, no threads.
"""

from __future__ import annotations

import binascii
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, overload

from xxhash import xxh3_128_hexdigest

from graphruntime._internal._constants import (
    CONTROL_WRITES,
    ERROR,
    ERROR_SOURCE_NODE,
    INTERRUPT,
    NO_WRITES,
    NS_END,
    NS_SEP,
    NULL_TASK_ID,
    PULL,
    PUSH,
    RESERVED,
    RESUME,
    RETURN,
    TASKS,
)
from graphruntime._internal._interrupt import Interrupt, interrupt_id
from graphruntime._internal._scratchpad import Scratchpad
from graphruntime._internal._typing import MISSING
from graphruntime.channels import BaseChannel
from graphruntime.checkpoint._id import utc_now_iso, uuid6_str
from graphruntime.checkpoint.base import LATEST_VERSION, Checkpoint, PendingWrite
from graphruntime.pregel._delta import snapshot_values
from graphruntime.pregel._node import NodeSpec
from graphruntime.types import All, Send

GetNextVersion = Callable[[Any, None], Any]


class WritesProtocol(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def path(self) -> tuple[Any, ...]: ...
    @property
    def triggers(self) -> Sequence[str]: ...
    @property
    def writes(self) -> Sequence[tuple[str, Any]]: ...


@dataclass(slots=True)
class TaskWrites:
    """Writes of a task that is not being executed (replayed or synthetic)."""

    name: str
    path: tuple[Any, ...]
    triggers: Sequence[str]
    writes: Sequence[tuple[str, Any]]


@dataclass(slots=True)
class PreparedTask:
    """One task of a step: a node with its input, deterministic id and namespace."""

    id: str
    name: str
    path: tuple[Any, ...]
    triggers: tuple[str, ...]
    input: Any
    checkpoint_ns: str
    node: NodeSpec
    writes: list[tuple[str, Any]] = field(default_factory=list)
    node_error: Any = None
    """For an error handler's task: the ``NodeError`` it handles."""
    timeout: Any = None
    """A ``Send``'s own ``TimeoutPolicy`` for this task (else the node's)."""
    cache_key: Any = None
    """``(namespace, key, ttl)`` its writes are cached under, when the graph caches it."""
    callbacks: Any = None
    """A ``@task`` call's LangChain callbacks: its caller's, so its run is the caller's child."""


@dataclass(slots=True)  # not frozen: one per step, and frozen fields cost more to set
class StepContext:
    """What the algorithm needs to know about the graph and the step: nothing else.

    Treat it as immutable: the loop reuses it while the step lasts.
    """

    nodes: Mapping[str, NodeSpec]
    trigger_to_nodes: Mapping[str, Sequence[str]]
    parent_ns: str
    step: int
    managed_values: Mapping[str, Any] = field(default_factory=dict)
    """The graph's managed values at this step (``remaining_steps``...), by key."""


def increment(current: int | None, channel: None = None) -> int:
    """Version function when there is no checkpointer."""
    return current + 1 if current is not None else 1


def task_path_str(tup: Any) -> str:
    """Sort key for a task path: PULL tasks by node name, then PUSH tasks by index."""
    if type(tup) is tuple and len(tup) == 2 and type(tup[1]) is str:
        return f"~{tup[0]}, {tup[1]}"  # a PULL path, the common case
    if isinstance(tup, (tuple, list)):
        return "~" + ", ".join(task_path_str(x) for x in tup)
    if isinstance(tup, bool):
        return f"{int(tup):010d}"
    if isinstance(tup, int):
        return f"{tup:010d}"
    return str(tup)


_last_namespace: tuple[str, bytes] = ("", b"")


def task_id(checkpoint_id: str, *parts: str) -> str:
    """xxh3-128 of the raw checkpoint id bytes and the task's coordinates, as a UUID."""
    # a step's tasks share the checkpoint: its bytes are decoded once (one tuple, so a
    # thread reading it never sees the id of one checkpoint with the bytes of another)
    global _last_namespace
    last_id, namespace = _last_namespace
    if last_id != checkpoint_id:
        namespace = binascii.unhexlify(checkpoint_id.replace("-", ""))
        _last_namespace = (checkpoint_id, namespace)
    digest = xxh3_128_hexdigest(namespace + "".join(parts).encode())
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def null_version(checkpoint: Checkpoint) -> Any:
    version = next(iter(checkpoint["channel_versions"].values()), None)
    return type(version)() if version is not None else None


def channels_from_checkpoint(
    specs: Mapping[str, BaseChannel], checkpoint: Checkpoint
) -> dict[str, BaseChannel]:
    values = checkpoint["channel_values"]
    return {k: spec.from_checkpoint(values.get(k, MISSING)) for k, spec in specs.items()}


def create_checkpoint(
    checkpoint: Checkpoint,
    channels: Mapping[str, BaseChannel] | None,
    step: int,
    *,
    updated_channels: set[str] | None = None,
    snapshot: Collection[str] = (),
    get_next_version: GetNextVersion | None = None,
    stored_versions: Mapping[str, Any] | None = None,
    trigger_to_nodes: Mapping[str, Sequence[str]] | None = None,
    checkpoint_id: str | None = None,
    reuse_maps: bool = False,
) -> Checkpoint:
    """A new checkpoint (fresh time-ordered id) holding the channels' current values.

    ``snapshot``: DeltaChannels to store as a ``DeltaSnapshot`` (see
    :func:`graphruntime.pregel._delta.snapshot_values`, which may bump their versions
    past ``stored_versions``, the last saved ones).
    ``reuse_maps``: the caller drops ``checkpoint`` and nothing else holds it (it was
    never saved): the new checkpoint takes over its maps instead of copying them.
    """
    if reuse_maps:
        versions = checkpoint["channel_versions"]
        versions_seen = checkpoint["versions_seen"]
    else:
        versions = dict(checkpoint["channel_versions"])
        versions_seen = {k: dict(v) for k, v in checkpoint["versions_seen"].items()}
    if channels is None:
        values = checkpoint["channel_values"] if reuse_maps else dict(checkpoint["channel_values"])
    else:
        values = {}
        for k, ch in channels.items():
            if k not in versions:
                continue
            v = ch.checkpoint()
            if v is not MISSING:
                values[k] = v
        if snapshot:
            versions_seen = snapshot_values(
                values,
                versions,
                versions_seen,
                channels,
                snapshot,
                get_next_version=get_next_version,
                stored_versions=stored_versions,
                trigger_to_nodes=trigger_to_nodes or {},
            )
    return {
        "v": LATEST_VERSION,
        "id": checkpoint_id or uuid6_str(clock_seq=step),
        "ts": utc_now_iso(),
        "channel_values": values,
        "channel_versions": versions,
        "versions_seen": versions_seen,
        "updated_channels": sorted(updated_channels) if updated_channels is not None else None,
    }


def prepare_next_tasks(
    checkpoint: Checkpoint,
    channels: Mapping[str, BaseChannel],
    ctx: StepContext,
    *,
    updated_channels: set[str] | None = None,
    for_execution: bool = True,
) -> dict[str, PreparedTask]:
    """The tasks of step ``ctx.step``: PUSH tasks (Sends) first, then triggered nodes."""
    tasks: list[PreparedTask] = []
    tasks_channel = channels.get(TASKS)
    if tasks_channel is not None and tasks_channel.is_available():
        for idx, packet in enumerate(tasks_channel.get()):
            if task := _prepare_push(checkpoint, packet, idx, ctx):
                tasks.append(task)
    if updated_channels and ctx.trigger_to_nodes:
        triggered: set[str] = set()
        for chan in updated_channels:
            triggered.update(ctx.trigger_to_nodes.get(chan, ()))
        candidates: Iterable[str] = sorted(triggered)
    elif not checkpoint["channel_versions"]:
        candidates = ()
    else:
        candidates = ctx.nodes.keys()
    null = null_version(checkpoint)
    for name in candidates:
        if task := _prepare_pull(checkpoint, channels, name, ctx, null, for_execution):
            tasks.append(task)
    by_id: dict[str, PreparedTask] = {}
    for t in tasks:
        by_id[t.id] = t
    return by_id


def prepare_task(
    checkpoint: Checkpoint,
    channels: Mapping[str, BaseChannel],
    ctx: StepContext,
    path: Sequence[Any],
) -> PreparedTask | None:
    """Prepare just the task at ``path`` (as in ``PreparedTask.path``), if it exists.

    A distributed task job uses this instead of preparing the whole step, so a
    fan-out of N tasks costs O(N), not O(N²), across its jobs.
    """
    if path[0] == PUSH:
        tasks_channel = channels.get(TASKS)
        if tasks_channel is None or not tasks_channel.is_available():
            return None
        packets = tasks_channel.get()
        idx = int(path[1])
        if not 0 <= idx < len(packets):
            return None
        return _prepare_push(checkpoint, packets[idx], idx, ctx)
    if path[0] == PULL:
        return _prepare_pull(
            checkpoint, channels, str(path[1]), ctx, null_version(checkpoint), True
        )
    return None


def prepare_call_task(
    checkpoint: Checkpoint, caller: PreparedTask, index: int, node: NodeSpec, input: Any, step: int
) -> PreparedTask:
    """The task of the ``index``-th ``@task`` call ``caller`` makes in step ``step``.

    Its id depends only on the checkpoint, the caller's namespace and path, and the call's
    name and index, as LangGraph computes it: a caller that runs again (a resume, a
    replay on another worker) gets the same ids for the same calls, and so their results.
    """
    ns = f"{caller.checkpoint_ns}{NS_SEP}{node.name}" if caller.checkpoint_ns else node.name
    tid = task_id(
        checkpoint["id"], ns, str(step), node.name, PUSH, task_path_str(caller.path), str(index)
    )
    return PreparedTask(
        id=tid,
        name=node.name,
        path=(PUSH, caller.path, index, True),
        triggers=(PUSH,),
        input=input,
        checkpoint_ns=f"{ns}{NS_END}{tid}",
        node=node,
    )


def is_call_path(path: Sequence[Any]) -> bool:
    """A call's path: ``(PUSH, caller's path, index, True)``."""
    return len(path) == 4 and path[0] == PUSH and path[-1] is True


def _prepare_push(
    checkpoint: Checkpoint, packet: Any, idx: int, ctx: StepContext
) -> PreparedTask | None:
    if not isinstance(packet, Send) or packet.node not in ctx.nodes:
        return None
    ns = f"{ctx.parent_ns}{NS_SEP}{packet.node}" if ctx.parent_ns else packet.node
    tid = task_id(checkpoint["id"], ns, str(ctx.step), packet.node, PUSH, str(idx))
    return PreparedTask(
        id=tid,
        name=packet.node,
        path=(PUSH, idx, False),
        triggers=(PUSH,),
        input=packet.arg,
        checkpoint_ns=f"{ns}{NS_END}{tid}",
        node=ctx.nodes[packet.node],
        timeout=packet.timeout,
    )


def prepare_error_handler_task(
    failed: PreparedTask,
    handler: NodeSpec,
    error: Any,
    *,
    checkpoint_id: str,
    parent_ns: str,
    step: int,
) -> PreparedTask:
    """The task that runs ``failed``'s error handler, in the same step, on its input."""
    name = handler.name
    ns = f"{parent_ns}{NS_SEP}{name}" if parent_ns else name
    tid = task_id(checkpoint_id, ns, str(step), name, PUSH, "node_error_handler", failed.id)
    return PreparedTask(
        id=tid,
        name=name,
        path=(*failed.path[:3], "node_error_handler", False),
        triggers=(PUSH,),
        input=failed.input,
        checkpoint_ns=f"{ns}{NS_END}{tid}",
        node=handler,
        node_error=error,
    )


def _prepare_pull(
    checkpoint: Checkpoint,
    channels: Mapping[str, BaseChannel],
    name: str,
    ctx: StepContext,
    null: Any,
    for_execution: bool,
) -> PreparedTask | None:
    node = ctx.nodes.get(name)
    if node is None or null is None:
        return None
    versions = checkpoint["channel_versions"]
    seen = checkpoint["versions_seen"].get(name)
    # loops, not any(<generator>): this runs for every candidate node of every step
    for c in node.triggers:
        if channels[c].is_available() and (
            seen is None or versions.get(c, null) > seen.get(c, null)
        ):
            break
    else:
        return None
    triggers = node.triggers if len(node.triggers) < 2 else tuple(sorted(node.triggers))
    ns = f"{ctx.parent_ns}{NS_SEP}{name}" if ctx.parent_ns else name
    tid = task_id(checkpoint["id"], ns, str(ctx.step), name, PULL, *triggers)
    if isinstance(node.input_keys, str):
        chan = channels.get(node.input_keys)
        if chan is None or not chan.is_available():
            return None
        value: Any = chan.get()
    else:
        value = read_channels(channels, node.input_keys)
        if ctx.managed_values:
            managed = ctx.managed_values
            value.update((k, managed[k]) for k in node.input_keys if k in managed)
    if for_execution and node.mapper is not None:
        value = node.mapper(value)
    return PreparedTask(
        id=tid,
        name=name,
        path=(PULL, name),
        triggers=triggers,
        input=value,
        checkpoint_ns=f"{ns}{NS_END}{tid}",
        node=node,
    )


@overload
def read_channels(channels: Mapping[str, BaseChannel], select: str) -> Any: ...
@overload
def read_channels(channels: Mapping[str, BaseChannel], select: Sequence[str]) -> dict[str, Any]: ...
def read_channels(channels: Mapping[str, BaseChannel], select: str | Sequence[str]) -> Any:
    """The available values of ``select``: a dict, or one value (None if empty) for a name."""
    if isinstance(select, str):
        chan = channels.get(select)
        return chan.get() if chan is not None and chan.is_available() else None
    values = {}  # a loop, not a comprehension: this runs for every task and step
    for k in select:
        chan = channels.get(k)
        if chan is not None and chan.is_available():
            values[k] = chan.get()
    return values


def local_read(
    channels: Mapping[str, BaseChannel],
    writes: Sequence[tuple[str, Any]],
    select: Sequence[str] | str,
    *,
    fresh: bool,
) -> Any:
    """State as a router sees it: with only this task's own writes applied (``fresh``)."""
    if not fresh:
        return read_channels(channels, select)
    keys = [select] if isinstance(select, str) else select
    updated: dict[str, list[Any]] = defaultdict(list)
    for chan, value in writes:
        if chan in keys:
            updated[chan].append(value)
    local: dict[str, BaseChannel] = {}
    for key in keys:
        if key not in channels:
            continue
        copy = channels[key].copy()
        copy.update(updated.get(key, ()))  # an empty update ends last step's ephemeral values
        local[key] = copy
    return read_channels(local, select)


_SKIP_WRITES = frozenset({NO_WRITES, PUSH, RESUME, INTERRUPT, RETURN, ERROR, ERROR_SOURCE_NODE})


def _path_order(task: WritesProtocol) -> str:
    return task_path_str(task.path[:3])


def apply_writes(
    checkpoint: Checkpoint,
    channels: Mapping[str, BaseChannel],
    tasks: Iterable[WritesProtocol],
    get_next_version: GetNextVersion | None,
    trigger_to_nodes: Mapping[str, Sequence[str]],
) -> set[str]:
    """Apply a finished step's writes in task-path order; returns the updated channels.

    Mutates ``checkpoint`` (versions, versions_seen) and ``channels`` in place.
    """
    ordered = list(tasks)
    if len(ordered) > 1:
        ordered.sort(key=_path_order)
    # plain loops, no comprehensions or defaultdict: this runs on every step
    bump_step = False
    versions = checkpoint["channel_versions"]
    versions_seen = checkpoint["versions_seen"]
    consumed: set[str] = set()
    for task in ordered:
        seen = versions_seen.setdefault(task.name, {})
        for c in task.triggers:
            bump_step = True
            if c in versions:
                seen[c] = versions[c]
            if c not in RESERVED and c in channels:
                consumed.add(c)
    next_version = (
        get_next_version(max(versions.values()) if versions else None, None)
        if get_next_version is not None
        else None
    )
    for chan in sorted(consumed) if len(consumed) > 1 else consumed:
        if channels[chan].consume() and next_version is not None:
            versions[chan] = next_version
    by_channel: dict[str, list[Any]] = {}
    for task in ordered:
        for chan, value in task.writes:
            if chan in _SKIP_WRITES or chan not in channels:
                continue
            if chan in by_channel:
                by_channel[chan].append(value)
            else:
                by_channel[chan] = [value]
    updated: set[str] = set()
    for chan, values in by_channel.items():
        channel = channels[chan]
        if channel.update(values) and next_version is not None:
            versions[chan] = next_version
            if channel.is_available():
                updated.add(chan)
    if bump_step:
        for chan, ch in channels.items():
            if chan not in updated and ch.is_available() and ch.update(()):
                if next_version is not None:
                    versions[chan] = next_version
                if ch.is_available():
                    updated.add(chan)
    if bump_step and updated.isdisjoint(trigger_to_nodes):
        for chan, ch in channels.items():
            if ch.finish() and next_version is not None:
                versions[chan] = next_version
                if ch.is_available():
                    updated.add(chan)
    return updated


def should_interrupt(
    checkpoint: Checkpoint,
    interrupt_nodes: All | Sequence[str],
    tasks: Iterable[PreparedTask],
) -> list[PreparedTask]:
    """Tasks hit by a static breakpoint, if anything changed since the last interrupt."""
    null = null_version(checkpoint)
    seen = checkpoint["versions_seen"].get("__interrupt__", {})
    changed = any(
        version > seen.get(chan, null) for chan, version in checkpoint["channel_versions"].items()
    )
    if not changed:
        return []
    return [
        t
        for t in tasks
        if (not t.node.hidden if interrupt_nodes == "*" else t.name in interrupt_nodes)
    ]


def make_scratchpad(
    pending_writes: list[PendingWrite],
    task_id_: str,
    task_ns: str,
    *,
    resume_map: Mapping[str, Any] | None,
    parent: Scratchpad | None,
    step: int,
    stop: int,
    null_resume: Callable[[bool], Any] | None = None,
) -> Scratchpad:
    """Rebuild what ``interrupt()`` needs from the step's pending writes and the resume map.

    ``null_resume``: where the step's unaddressed resume value is taken from, when the
    caller shares it between tasks (by default, from ``pending_writes``).
    """
    resume: list[Any] = []
    previous: dict[str, Any] = {}
    if pending_writes:  # a step with none (most) has nothing to rebuild
        for w in pending_writes:
            if w[0] == task_id_ and w[1] == RESUME and not resume:
                resume = list(w[2]) if isinstance(w[2], list) else [w[2]]
            elif w[0] == task_id_ and w[1] == INTERRUPT and isinstance(w[2], tuple | list):
                previous.update((i.id, i) for i in w[2] if isinstance(i, Interrupt))
        if resume_map:
            next_id = interrupt_id(task_ns, len(resume))
            first_id = interrupt_id(task_ns, 0)
            if next_id in resume_map:
                resume.append(resume_map[next_id])
            elif first_id in resume_map:
                resume.append(resume_map[first_id])

    if null_resume is not None:
        return Scratchpad(
            step=step,
            stop=stop,
            resume=resume,
            null_resume=null_resume,
            previous_interrupts=previous,
        )

    null_resume_write: PendingWrite | None = None
    for w in pending_writes:
        if w[0] == NULL_TASK_ID and w[1] == RESUME:
            null_resume_write = w
            break

    def take_null_resume(consume: bool) -> Any:
        if null_resume_write is None:
            return parent.get_null_resume(consume) if parent is not None else None
        if consume:
            try:
                pending_writes.remove(null_resume_write)
            except ValueError:
                return None
        return null_resume_write[2]

    return Scratchpad(
        step=step,
        stop=stop,
        resume=resume,
        null_resume=take_null_resume,
        previous_interrupts=previous,
    )


def task_finished(writes: Sequence[tuple[str, Any]]) -> bool:
    """A task is done when it saved at least one output (non-control) write."""
    return any(c not in CONTROL_WRITES for c, _ in writes)
