"""A connection pool that lends one thread the same connection for a whole job.

A coordinator round borrows a connection a dozen times (the claim, the checkpoint load,
each step's writes, the round's end): each borrow from psycopg_pool costs a lock, a
queue and the return checks, about a tenth of a millisecond. Inside
:meth:`PinnedPool.pinned`, the thread's borrows reuse the one connection it pinned,
whoever borrows (the run store, the saver, the store, the cache): the statements are
the same, in the same transactions. A borrow made while the pinned connection is lent
(a nested borrow: two connections at once, on purpose) gets one of its own from the
pool, as without a pin; so does another thread (the held-checkpoint watchdog).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import pq
from psycopg_pool import ConnectionPool

log = logging.getLogger(__name__)


class _Pin:
    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self.lent = False
        self.spoilt = False  # left in a state a rollback does not mend: not lent again


class PinnedPool(ConnectionPool[Any]):
    """:class:`psycopg_pool.ConnectionPool` with per-thread pins (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pins = threading.local()

    @contextmanager
    def pinned(self) -> Iterator[None]:
        """Lend this thread one connection for the block's borrows (nested: the outer one)."""
        if getattr(self._pins, "pin", None) is not None:
            yield
            return
        with super().connection() as conn:
            self._pins.pin = _Pin(conn)
            try:
                yield
            finally:
                self._pins.pin = None

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[psycopg.Connection[Any]]:
        pin: _Pin | None = getattr(self._pins, "pin", None)
        if pin is None or pin.lent or pin.spoilt or pin.conn.closed:
            with super().connection(timeout) as conn:
                yield conn
            return
        pin.lent = True
        try:
            yield pin.conn
        finally:
            pin.lent = False
            pin.spoilt = not _tidy(pin.conn)


def _tidy(conn: psycopg.Connection[Any]) -> bool:
    """What the pool does to a returned connection: no transaction left open. False if
    it cannot be lent again (the pool then checks it when the pin ends)."""
    if conn.closed:
        return False
    status = conn.info.transaction_status
    if status == pq.TransactionStatus.IDLE:
        return True
    if status not in (pq.TransactionStatus.INTRANS, pq.TransactionStatus.INERROR):
        return False  # a query still running, or a lost connection
    try:
        conn.rollback()
    except psycopg.Error as exc:
        log.debug("rolling back a pinned connection failed: %s", exc)
        return False
    return True
