"""Worker heartbeats: how the cluster knows which processes are alive.

Every worker process (each Celery pool process, which claims tasks and leases
threads under its own name) records a heartbeat every ``heartbeat_interval``
seconds. A process silent for twice that is dead: its task claims and thread leases
become free, and the sweeper re-sends its work. A process that is merely busy (a
long node) keeps beating from this thread, so nothing of it runs twice.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Sequence

from workers.store import RunStore

log = logging.getLogger(__name__)


class Heartbeat(threading.Thread):
    """Beats for ``worker`` until stopped; the first beat is sent before ``start`` returns.

    ``current_token`` reads the token of the job the process is running: each beat
    frees the process's task claims and thread leases that no job of it holds any more
    (a job that gave up on an outage and was re-queued, maybe to another worker; a
    lease release that an outage kept the job from making, or that a Postgres crash
    took back). ``node`` is the Celery worker the process belongs to and ``graphs`` the
    graphs it serves: the status counts workers by node, and a run of a graph no live
    worker serves fails at once.
    """

    def __init__(
        self,
        store: RunStore,
        worker: str,
        interval: float,
        current_token: Callable[[], str | None] = lambda: None,
        *,
        node: str | None = None,
        graphs: Sequence[str] | None = None,
    ) -> None:
        super().__init__(name="graphruntime-heartbeat", daemon=True)
        self.store = store
        self.worker = worker
        self.interval = interval
        self.current_token = current_token
        self.node = node
        self.graphs = None if graphs is None else list(graphs)
        self._stop_event = threading.Event()

    def beat(self) -> None:
        freed = self.store.heartbeat(
            self.worker,
            socket.gethostname(),
            os.getpid(),
            keep=self.current_token(),
            grace=self.interval,
            node=self.node,
            graphs=self.graphs,
        )
        if freed:
            log.warning(
                "heartbeat of %s freed %d thread leases no job of it holds: %s",
                self.worker,
                len(freed),
                ", ".join(freed[:10]),
            )

    def start(self) -> None:
        self.beat()
        super().start()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            try:
                self.beat()
            except Exception:  # a missed beat is retried next interval
                log.warning("heartbeat of %s failed", self.worker, exc_info=True)

    def stop(self, *, remove: bool = True) -> None:
        """Stop beating; ``remove`` forgets the worker at once (a clean shutdown)."""
        self._stop_event.set()
        self.join(timeout=5)
        if remove:
            try:
                self.store.remove_worker(self.worker)
            except Exception:  # shutting down: the row just goes stale
                log.warning("could not remove worker %s", self.worker, exc_info=True)


def unserved_reason(store: RunStore, graph: str, stale: float, waited: float) -> str | None:
    """Why a run of ``graph``, queued ``waited`` seconds ago, can be failed now: no live
    worker serves the graph (their heartbeats say which graphs they serve) and it has been
    so longer than ``stale`` seconds, in which a worker that serves it could have started.
    None: a live worker serves it, one does not say which graphs it serves (an older
    release), or it is too early to tell."""
    if waited <= stale:
        return None
    live = [w for w in store.live_workers(stale) if not str(w["worker"]).startswith("client:")]
    if any(w.get("graphs") is None for w in live):
        return None
    served = sorted({g for w in live for g in w["graphs"]})
    if graph in served:
        return None
    nodes = len({w.get("node") or w["worker"] for w in live})
    return (
        f"No live worker serves graph {graph!r}: the {nodes} live worker(s) serve "
        f"{', '.join(served) or 'no graph'}. Start workers with it in GRAPHRUNTIME_GRAPHS, "
        "then submit the run again."
    )
