"""An in-memory saver that stores like PostgresSaver.pipelined(): a block's puts and
writes at its end, all at once, and a refused fenced put stops only its thread; each
block is recorded (one round trip on Postgres). ``verdict`` may refuse or fail a
thread's saves; tests/integration covers the real saver."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from checkpoint_pg import CheckpointStoreUnavailable
from graphruntime.checkpoint import ChannelVersions, Checkpoint, CheckpointMetadata, InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.errors import CheckpointConflict

Call = tuple[str, bool, tuple[Any, ...]]
"""``("put" | "put_writes", fenced, args)``."""


class BlockSaver(InMemorySaver):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.blocks: list[list[str]] = []
        """Per block: the thread of each call, in order."""
        self.verdict: Callable[[str], Exception | None] = lambda thread_id: None
        """A thread's fate in a block: None (stored), a conflict (refused) or an error
        (the block fails)."""
        self.outage_on_writes_of: str | None = None
        """A block with writes of this channel meets an outage (once)."""

    @contextmanager
    def pipelined(self, *, durable: bool = True) -> Iterator[Block]:
        block = Block(self, [], False)
        yield block
        block.commit()


class Block:
    """A pipelined() view: calls are kept until the block ends."""

    def __init__(self, saver: BlockSaver, calls: list[Call], fenced: bool) -> None:
        self.saver = saver
        self.calls = calls
        self.fence = fenced
        self.refused: dict[str, CheckpointConflict] = {}

    def fenced(self) -> Block:
        view = Block(self.saver, self.calls, True)
        view.refused = self.refused
        return view

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self.calls.append(("put", self.fence, (config, checkpoint, metadata, new_versions)))
        return {"configurable": {**config["configurable"], "checkpoint_id": checkpoint["id"]}}

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self.calls.append(("put_writes", self.fence, (config, writes, task_id, task_path)))

    def commit(self) -> None:
        saver = self.saver
        threads = [_thread(args[0]) for _, _, args in self.calls]
        saver.blocks.append(threads)
        channel = saver.outage_on_writes_of
        if channel is not None and any(
            kind == "put_writes" and any(ch == channel for ch, _ in args[1])
            for kind, _, args in self.calls
        ):
            saver.outage_on_writes_of = None
            raise CheckpointStoreUnavailable("PostgresSaver.pipelined failed: outage (test)")
        verdicts = {t: saver.verdict(t) for t in dict.fromkeys(threads)}
        for error in verdicts.values():
            if error is not None and not isinstance(error, CheckpointConflict):
                raise error  # the transaction stores none of the block
        for kind, fenced, args in self.calls:
            thread_id = _thread(args[0])
            if (error := verdicts[thread_id]) is not None:
                assert isinstance(error, CheckpointConflict)
                self.refused.setdefault(thread_id, error)
            if thread_id in self.refused and kind == "put":
                continue  # refused, as its thread's later puts
            target = saver.fenced() if fenced else saver
            if kind == "put_writes":
                target.put_writes(*args)
                continue
            try:
                target.put(*args)
            except CheckpointConflict as exc:
                self.refused.setdefault(thread_id, exc)


def _thread(config: RunnableConfig) -> str:
    return str(config["configurable"]["thread_id"])
