"""The saver requests a run's loop makes, and how a driver performs them.

The loop never writes to its saver itself. Each pending write and checkpoint it keeps
becomes a request in its outbox (:class:`PutWrites`, :class:`PutCheckpoint`), as psycopg
keeps its protocol apart from its I/O and ``_retry.py`` hands a retry's sleep to its
driver: whoever drives the loop performs them, in the order they were made.

- :func:`drive <graphruntime.pregel._driver.drive>` performs them at once, with the
  saver's sync methods, after each call of the step API (:func:`perform_now`);
- :func:`adrive <graphruntime.pregel._driver.adrive>` awaits the saver's async methods
  (:func:`aperform`);
- a run given a :class:`SaverIO` (``RunOptions.saver_io``) hands them to it instead, and
  so do the runs its nodes start (subgraphs): the workers' coordinator holds a round's
  requests and stores them together.

Reads stay direct; a loop with a :class:`SaverIO` asks it to store what it holds first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from graphruntime._internal._config import RunnableConfig
from graphruntime.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
)
from graphruntime.pregel._saved import takes_task_path

__all__ = ("PutCheckpoint", "PutWrites", "SaverIO", "SaverRequest", "aperform", "perform_now")


# not frozen (treat them as immutable): the loop makes one per task and per step, and
# a frozen dataclass's fields cost several times more to set
@dataclass(slots=True)
class PutWrites:
    """Request: ``saver.put_writes(config, writes, task_id, task_path)``."""

    config: RunnableConfig
    writes: Sequence[tuple[str, Any]]
    task_id: str
    task_path: str = ""


@dataclass(slots=True)
class PutCheckpoint:
    """Request: ``saver.put(config, checkpoint, metadata, new_versions)``.

    ``config`` names the parent; the loop already goes on under the config the saver
    returns for it (thread, namespace and the checkpoint's id), as LangGraph's do.
    """

    config: RunnableConfig
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    new_versions: ChannelVersions


SaverRequest = PutWrites | PutCheckpoint


class SaverIO(Protocol):
    """Performs a run's saver requests (and its subgraphs'), in the order they come.

    It may hold them to store later, all together; it must store what it holds before
    :meth:`settle` returns.
    """

    def perform(self, saver: BaseCheckpointSaver, requests: Sequence[SaverRequest]) -> None: ...

    def settle(self, saver: BaseCheckpointSaver) -> None:
        """Store what is held now: a read of ``saver`` follows."""
        ...


def perform_now(
    saver: BaseCheckpointSaver, requests: Sequence[SaverRequest]
) -> list[RunnableConfig]:
    """Perform ``requests`` with the saver's sync methods, in order; the configs its puts
    returned (a ``put_writes`` returns nothing), for ``LoopSave.saves_performed``."""
    puts: list[RunnableConfig] = []
    with_path: bool | None = None
    for request in requests:
        if isinstance(request, PutCheckpoint):
            puts.append(
                saver.put(
                    request.config, request.checkpoint, request.metadata, request.new_versions
                )
            )
            continue
        if with_path is None:
            with_path = takes_task_path(type(saver))
        if with_path:
            saver.put_writes(request.config, request.writes, request.task_id, request.task_path)
        else:  # a saver written against the older three-argument contract
            saver.put_writes(request.config, request.writes, request.task_id)
    return puts


async def aperform(
    saver: BaseCheckpointSaver, requests: Sequence[SaverRequest]
) -> list[RunnableConfig]:
    """Perform ``requests`` with the saver's async methods, one after another; the
    configs its puts returned."""
    puts: list[RunnableConfig] = []
    for request in requests:
        if isinstance(request, PutCheckpoint):
            puts.append(
                await saver.aput(
                    request.config, request.checkpoint, request.metadata, request.new_versions
                )
            )
        elif takes_task_path(type(saver), "aput_writes"):
            await saver.aput_writes(
                request.config, request.writes, request.task_id, request.task_path
            )
        else:
            await saver.aput_writes(request.config, request.writes, request.task_id)
    return puts
