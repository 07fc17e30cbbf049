"""A background thread that deletes a store's expired items now and then."""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable

from graphruntime.store._errors import InvalidStoreRequestError

__all__ = ("TTLSweeper",)

logger = logging.getLogger("graphruntime.store")


class TTLSweeper:
    """Calls ``sweep()`` every ``interval`` seconds on a daemon thread until stopped.

    A failing sweep is logged and retried at the next interval: one bad round
    (a database restart) must not end the sweeping for good.
    """

    def __init__(self, sweep: Callable[[], int], name: str) -> None:
        self._sweep = sweep
        self._name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._future: concurrent.futures.Future[None] | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, interval: float) -> concurrent.futures.Future[None]:
        """Start sweeping (or return the running sweeper's future).

        The future completes when the sweeper stops; cancelling it stops it.
        """
        if interval <= 0:
            raise InvalidStoreRequestError(f"The sweep interval must be positive, got {interval!r}")
        with self._lock:
            if self.running and self._future is not None:
                return self._future
            self._stop.clear()
            future: concurrent.futures.Future[None] = concurrent.futures.Future()
            future.add_done_callback(lambda f: self._stop.set() if f.cancelled() else None)
            thread = threading.Thread(
                target=self._loop, args=(interval, future), name=self._name, daemon=True
            )
            self._thread, self._future = thread, future
            thread.start()
            return future

    def stop(self, timeout: float | None = None) -> bool:
        """Stop the thread; ``True`` once it has ended (or was not running)."""
        with self._lock:
            thread = self._thread
            self._stop.set()
        if thread is None:
            return True
        thread.join(timeout)
        if thread.is_alive():
            return False
        with self._lock:
            if self._thread is thread:
                self._thread = None
        return True

    def _loop(self, interval: float, future: concurrent.futures.Future[None]) -> None:
        while not self._stop.wait(interval):
            try:
                swept = self._sweep()
            except Exception:
                logger.exception("TTL sweep failed; retrying in %s s", interval)
                continue
            if swept:
                logger.debug("TTL sweep deleted %d expired items", swept)
        if not future.done():
            future.set_result(None)
