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
from collections.abc import Callable

from workers.store import RunStore

log = logging.getLogger(__name__)


class Heartbeat(threading.Thread):
    """Beats for ``worker`` until stopped; the first beat is sent before ``start`` returns.

    ``current_token`` reads the claim token of the job the process is running: each
    beat frees the process's task claims that no job of it holds any more (a job that
    gave up on an outage and was re-queued, maybe to another worker). ``orphaned_leases``
    holds threads whose leases a job of the process could not free: each beat frees
    them (unless leased again meanwhile) and forgets them once freed.
    """

    def __init__(
        self,
        store: RunStore,
        worker: str,
        interval: float,
        current_token: Callable[[], str | None] = lambda: None,
        orphaned_leases: set[str] | None = None,
    ) -> None:
        super().__init__(name="graphruntime-heartbeat", daemon=True)
        self.store = store
        self.worker = worker
        self.interval = interval
        self.current_token = current_token
        self.orphaned_leases = orphaned_leases if orphaned_leases is not None else set()
        self._stop_event = threading.Event()

    def beat(self) -> None:
        orphans = sorted(self.orphaned_leases)
        held = self.store.heartbeat(
            self.worker,
            socket.gethostname(),
            os.getpid(),
            keep=self.current_token(),
            free_leases=orphans,
            grace=self.interval,
        )
        self.orphaned_leases.difference_update(set(orphans) - set(held))

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
