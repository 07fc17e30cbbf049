"""Which checkpoint a subgraph starts from while its parent replays an old step."""

from __future__ import annotations

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import CONF, CONFIG_KEY_CHECKPOINT_ID, NS_END
from graphruntime.checkpoint.base import BaseCheckpointSaver, CheckpointTuple


class ReplayState:
    """Shared by every task of a replaying run (it travels in their config).

    The first time a subgraph namespace runs, it starts from its latest checkpoint
    saved before the parent checkpoint the run replays, so a stateful subgraph
    sees its state as of then; later calls (a subgraph in a loop) load as usual,
    picking up what the replay itself saved.
    """

    __slots__ = ("checkpoint_id", "_visited")

    def __init__(self, checkpoint_id: str) -> None:
        self.checkpoint_id = checkpoint_id
        self._visited: set[str] = set()

    def _first_visit(self, ns: str) -> bool:
        stable = ns.rsplit(NS_END, 1)[0]  # the same subgraph whatever its task id
        if stable in self._visited:
            return False
        self._visited.add(stable)
        return True

    def load(
        self, ns: str, saver: BaseCheckpointSaver, config: RunnableConfig
    ) -> CheckpointTuple | None:
        """The checkpoint the subgraph at ``ns`` (addressed by ``config``) starts from."""
        if not self._first_visit(ns):
            return saver.get_tuple(config)
        before: RunnableConfig = {CONF: {CONFIG_KEY_CHECKPOINT_ID: self.checkpoint_id}}
        for saved in saver.list(config, before=before, limit=1):
            return saved
        return None

    async def aload(
        self, ns: str, saver: BaseCheckpointSaver, config: RunnableConfig
    ) -> CheckpointTuple | None:
        """Async :meth:`load`."""
        if not self._first_visit(ns):
            return await saver.aget_tuple(config)
        before: RunnableConfig = {CONF: {CONFIG_KEY_CHECKPOINT_ID: self.checkpoint_id}}
        async for saved in saver.alist(config, before=before, limit=1):
            return saved
        return None
