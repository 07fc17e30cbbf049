"""Mapping between user-facing inputs/outputs and channel writes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from graphruntime._internal._constants import (
    ERROR,
    INTERRUPT,
    NULL_TASK_ID,
    RESUME,
    RETURN,
    TASKS,
)
from graphruntime._internal._typing import MISSING
from graphruntime.channels import BaseChannel
from graphruntime.constants import START
from graphruntime.errors import InvalidArgumentTypeError, InvalidUpdateError
from graphruntime.pregel._algo import read_channels
from graphruntime.types import Command, Send


def map_command(cmd: Command[Any]) -> Iterator[tuple[str, str, Any]]:
    """A Command given as input → null-task writes (goto, resume, update)."""
    if cmd.graph == Command.PARENT:
        raise InvalidUpdateError("There is no parent graph")
    if cmd.goto:
        targets = cmd.goto if isinstance(cmd.goto, (tuple, list)) else [cmd.goto]
        for target in targets:
            if isinstance(target, Send):
                yield (NULL_TASK_ID, TASKS, target)
            elif isinstance(target, str):
                yield (NULL_TASK_ID, f"branch:to:{target}", START)
            else:
                raise InvalidArgumentTypeError(
                    f"In Command.goto, expected Send/str, got {type(target).__name__}"
                )
    if cmd.resume is not None:
        yield (NULL_TASK_ID, RESUME, cmd.resume)
    if cmd.update:
        for k, v in cmd._update_as_tuples():
            yield (NULL_TASK_ID, k, v)


def map_input(input_channels: str | Sequence[str], chunk: Any) -> list[tuple[str, Any]]:
    """A run's input → writes: the whole value to a single input channel, or a dict's
    entries to the input channels they name (other keys are not inputs: rejected)."""
    if chunk is None:
        return []
    if isinstance(input_channels, str):
        return [(input_channels, chunk)]
    if not isinstance(chunk, dict):
        raise InvalidArgumentTypeError(f"Expected chunk to be a dict, got {type(chunk).__name__}")
    unknown = [k for k in chunk if k not in input_channels]
    if unknown:
        raise InvalidUpdateError(
            f"Input keys {unknown} are not input channels of this graph: {list(input_channels)}"
        )
    return list(chunk.items())


def output_values(
    output_channels: str | Sequence[str],
    writes: bool | Sequence[tuple[str, Any]],
    channels: Mapping[str, BaseChannel],
) -> Any:
    """The ``values`` chunk, if ``writes`` touched an output channel (True: always).

    A single output channel (a string) gives its value as it is (None when empty);
    several give a dict of the available ones. Returns MISSING when nothing is due.
    """
    if writes is not True:
        if isinstance(writes, bool):
            return MISSING
        # a loop, not any(<generator>): this runs after every step
        single = isinstance(output_channels, str)
        for c, _ in writes:
            if (c == output_channels) if single else (c in output_channels):
                break
        else:
            return MISSING
    return read_channels(channels, output_channels)


def output_updates(
    output_channels: str | Sequence[str],
    tasks: Sequence[tuple[str, Sequence[tuple[str, Any]]]],
    *,
    cached: bool = False,
) -> dict[str, Any] | None:
    """The ``updates`` chunk for finished tasks: ``{node: {key: value}}``.

    A ``@task`` call shows its return value; with a single output channel a node
    shows the value it wrote there.
    """
    shown = [(name, ww) for name, ww in tasks if ww and ww[0][0] not in (ERROR, INTERRUPT)]
    if not shown:
        return None
    single = output_channels if isinstance(output_channels, str) else None
    keys = frozenset(output_channels) if single is None else frozenset()
    updated: list[tuple[str, Any]] = []
    for name, writes in shown:
        returned = next((v for c, v in writes if c == RETURN), MISSING)
        if returned is not MISSING:
            updated.append((name, returned))
            continue
        if single is not None:
            updated.extend((name, v) for c, v in writes if c == single)
            continue
        if not any(c in keys for c, _ in writes):
            continue
        counts = Counter(c for c, _ in writes if c in keys)
        if any(n > 1 for n in counts.values()):
            updated.extend((name, {c: v}) for c, v in writes if c in keys)
        else:
            updated.append((name, {c: v for c, v in writes if c in keys}))
    return _grouped(shown, updated, cached)


def _grouped(
    shown: Sequence[tuple[str, Sequence[tuple[str, Any]]]],
    updated: Sequence[tuple[str, Any]],
    cached: bool,
) -> dict[str, Any]:
    grouped: dict[str, Any] = {name: [] for name, _ in shown}
    for name, value in updated:
        grouped[name].append(value)
    for name, values in grouped.items():
        grouped[name] = None if not values else values[0] if len(values) == 1 else values
    if cached:
        grouped["__metadata__"] = {"cached": True}
    return grouped
