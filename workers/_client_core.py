"""What every part of :class:`~workers.client.GraphClient` stands on: its connections
(settings, graphs, saver, run store, broker), the graph lookups, and sending runs.

The client's methods live by responsibility in mixins over this core: queueing and
waiting on runs (:mod:`workers._client_runs`), a thread's state, edits and cancel
(:mod:`workers._client_threads`), the inbox (:mod:`workers.client`).
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Sequence
from typing import Any, Self

from graphruntime.checkpoint import ClusterSaver
from graphruntime.pregel import Pregel
from workers._celery_wire import WakeOrPush
from workers._drain_flag import DrainFlag
from workers._listener import RunListener
from workers.dispatch import Broker
from workers.errors import NotDispatchedError, is_transient
from workers.registry import GraphRegistry
from workers.remote_graphs import GraphRequests, unknown_graph
from workers.settings import Settings, load_settings
from workers.store import PostgresRunStore, RunStore


class ClientCore:
    """The client's connections, graph lookups and sending; the rest is in mixins."""

    def __init__(
        self,
        *,
        settings: Settings,
        registry: GraphRegistry,
        saver: ClusterSaver,
        store: RunStore,
        broker: Broker,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.saver = saver
        self.store = store
        self.broker = broker
        self.name = f"client:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.listener = RunListener(store.pool) if isinstance(store, PostgresRunStore) else None
        self.known_graphs: set[str] = set()
        """Graphs this client takes as served without asking (graphrun serve's config)."""
        redis = getattr(broker, "redis", None)
        self.wake_or_push = (
            WakeOrPush(redis, DrainFlag(redis, settings.coordinator_queue))
            if redis is not None and getattr(broker, "lean", False)
            else None
        )
        """A single run's drain-flag read and message in one round trip (Celery's broker
        with messages written straight to Redis); None: :meth:`send_coordinates`."""
        self.requests = (
            GraphRequests(redis, settings.coordinator_queue, saver.serde)
            if redis is not None
            else None
        )

    @classmethod
    def from_env(cls, settings: Settings | None = None, *, broker: Broker | None = None) -> Self:
        """A client for the cluster the settings (default: the environment) name; the
        broker defaults to Celery's."""
        from workers.runtime import connect

        ctx = connect(settings or load_settings(), broker=broker)
        return cls(
            settings=ctx.settings,
            registry=ctx.registry,
            saver=ctx.saver,
            store=ctx.store,
            broker=ctx.broker,
        )

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()
        if self.wake_or_push is not None:
            self.wake_or_push.close()
        close = getattr(self.store, "close", None)
        if callable(close):
            close()

    def _graph(self, name: str) -> Pregel:
        return self.registry.get(name).with_checkpointer(self.saver)

    def local(self, graph: str) -> bool:
        """Whether this process has the graph's code (configured in its own registry);
        otherwise what needs it is asked of the workers that serve it."""
        return graph in self.registry.specs or self.requests is None

    def check_graph(self, graph: str) -> None:
        """Refuse a graph neither this process nor any live worker serves (nothing is
        queued), suggesting the nearest names."""
        if graph in self.registry.specs:
            self.registry.get(graph)  # a broken entry here is a ConfigurationError
            return
        if graph in self.known_graphs:
            return
        served = self.served_graphs() if self.requests is not None else None
        if served is None or graph not in served:
            raise unknown_graph(graph, self.registry.names(), served)

    def served_graphs(self) -> list[str]:
        """The graphs live workers serve (announced within twice the heartbeat interval)."""
        if self.requests is None:
            return self.registry.names()
        return self.requests.served(self.settings.stale_after)

    def _remote(self, graph: str, op: str, **args: Any) -> Any:
        assert self.requests is not None
        return self.requests.call(graph, op, **args)

    def send_coordinates(self, run_ids: Sequence[str], instead: str) -> None:
        """Send recorded runs to the workers; an unreachable broker is a
        :class:`NotDispatchedError` (nothing is lost: the sweepers send them later)."""
        try:
            self.broker.send_coordinates(run_ids, per_message=self.settings.coordinate_batch)
        except Exception as exc:
            if not is_transient(exc):
                raise
            what = f"Run {run_ids[0]} is" if len(run_ids) == 1 else f"{len(run_ids)} runs are"
            raise NotDispatchedError(
                f"{what} recorded, but the broker could not be reached ({exc}). Nothing is "
                "lost: a running worker's sweeper sends them within "
                f"{2 * self.settings.stale_after:.0f}s of the broker coming back. Do not "
                f"{instead}.",
                run_ids[0],
            ) from exc
