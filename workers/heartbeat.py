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

    ``current_token`` reads the token of the job the process is running: each beat
    frees the process's task claims and thread leases that no job of it holds any more
    (a job that gave up on an outage and was re-queued, maybe to another worker; a
    lease release that an outage kept the job from making, or that a Postgres crash
    took back).
    """

    def __init__(
        self,
        store: RunStore,
        worker: str,
        interval: float,
        current_token: Callable[[], str | None] = lambda: None,
    ) -> None:
        super().__init__(name="graphruntime-heartbeat", daemon=True)
        self.store = store
        self.worker = worker
        self.interval = interval
        self.current_token = current_token
        self._stop_event = threading.Event()

    def beat(self) -> None:
        freed = self.store.heartbeat(
            self.worker,
            socket.gethostname(),
            os.getpid(),
            keep=self.current_token(),
            grace=self.interval,
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
