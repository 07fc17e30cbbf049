"""Postgres LISTEN/NOTIFY wake-ups for clients waiting on runs and their stream events."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import logging
import selectors
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from graphruntime.checkpoint import SerializerProtocol
from graphruntime.errors import CheckpointError
from workers.store import Run, RunStatus, canonical_run_id

log = logging.getLogger(__name__)

# NOTIFY channels of workers/sql/queries.sql (end_runs, add_event); payload: the run id,
# on graphruntime_runs followed by how the run ended when that is small (RunOutcome).
RUNS_CHANNEL = "graphruntime_runs"
EVENTS_CHANNEL = "graphruntime_events"


ENDED = ("interrupted", "success", "error", "cancelled")


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended, as end_runs' notification says it: its status, its result as
    the serde stored it (type and bytes), its error."""

    status: RunStatus
    result_type: str | None
    result: bytes | None
    error: dict[str, Any] | None

    @classmethod
    def parse(cls, text: str) -> RunOutcome | None:
        """``<status> <result_type|-> <base64|-> <error JSON>``; None if not that."""
        parts = text.split(" ", 3)
        if len(parts) != 4:
            return None
        status, result_type, data, error = parts
        if status not in ENDED:
            return None
        try:
            return cls(
                cast("RunStatus", status),
                None if result_type == "-" else result_type,
                None if data == "-" else base64.b64decode(data),
                json.loads(error) if error else None,
            )
        except (ValueError, binascii.Error):
            return None


def ended_as(run: Run, ended: RunOutcome, serde: SerializerProtocol) -> Run:
    """``run`` (as read before it ended) with how it ended; a result this process cannot
    decode is ``result_error``, as a read of the run gives it."""
    result: Any = None
    result_error = None
    if ended.result_type is not None and ended.result is not None:
        try:
            result = serde.loads_typed((ended.result_type, ended.result))
        except CheckpointError as exc:
            result_error = str(exc)
    return dataclasses.replace(
        run,
        status=ended.status,
        result=result,
        error=ended.error,
        result_error=result_error,
    )


class RunListener:
    """Wake-ups for the runs a client waits on, from Postgres LISTEN/NOTIFY.

    One dedicated autocommit connection per client, opened on the first wait, and one
    reader thread on it while it LISTENs: the reader takes each notification and wakes
    only the waiters of the run it names (each on its own lock), so waiting threads
    never take turns on the connection or wake one another. The connection LISTENs
    only while someone waits, and ``linger`` seconds after (a client that waits on one
    run after another LISTENs once); then the reader UNLISTENs and ends. A notification
    can always be lost (a broken connection, a pooler that does not forward them), so
    waiters re-read their run at least every ``fallback`` seconds; without a connection
    they poll as before and the next wait connects again.
    """

    fallback = 0.25  # seconds a waiter goes at most without re-reading its run
    linger = 1.0  # seconds the connection keeps listening after the last waiter left
    retry_after = 5.0  # seconds to poll only, after a failed connect
    connect_timeout = 5  # seconds (libpq's connect_timeout), unless the URL sets one
    read_span = 0.5  # seconds the reader waits for notifications before it looks at linger

    def __init__(self, pool: ConnectionPool[Any]) -> None:
        self._pool = pool
        self._cond = threading.Condition()  # guards everything below
        self._conn: psycopg.Connection[Any] | None = None
        self._generation = 0  # bumped whenever the connection is dropped
        self._busy = False  # a thread runs LISTEN or UNLISTEN on the connection
        self._listening = False  # the connection LISTENs on both channels; a reader reads
        self._reader: threading.Thread | None = None
        self._watchers = 0
        self._watches: dict[tuple[str, str], list[RunWatch]] = {}  # (channel, run id) → waiters
        self._outcomes: dict[str, RunOutcome] = {}  # run id → how it ended, if notified
        self._retry_at = 0.0
        self._closed = False
        self._idle_since: float | None = None  # when the last waiter left, while listening

    @contextmanager
    def watch(self, run_id: str, channels: Sequence[str]) -> Iterator[RunWatch]:
        """LISTEN for ``run_id`` on ``channels``; read the run only once this is entered."""
        run_id = canonical_run_id(run_id)
        watch = RunWatch(self, [(channel, run_id) for channel in channels])
        with self._cond:
            self._watchers += 1
            self._idle_since = None
            for key in watch._keys:
                self._watches.setdefault(key, []).append(watch)
        try:
            watch._generation = self._listen()
            yield watch
        finally:
            self._unwatch(watch)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            conn = self._conn
            if conn is not None:
                self._drop(conn)
            self._wake_all()
            self._cond.notify_all()
        if conn is not None:
            conn.close()  # a reader on it gets an error and ends

    # --- the connection ----------------------------------------------------------------

    def _drop(self, conn: psycopg.Connection[Any]) -> None:
        """Forget a broken connection (call with _cond held); its watchers poll."""
        if self._conn is conn:
            self._conn = None
            self._listening = False
            self._generation += 1
            self._wake_all()

    def _wake_all(self) -> None:
        """Wake every waiter (call with _cond held): they see the connection is gone."""
        for watches in self._watches.values():
            for watch in watches:
                watch._wake()

    def _listen(self) -> int | None:
        """Make sure the connection LISTENs and a reader reads it; returns its
        generation, or None to poll."""
        with self._cond:
            give_up = time.monotonic() + self.fallback
            while True:
                if self._closed:
                    return None
                if self._conn is not None and self._listening:
                    return self._generation
                if self._conn is None and time.monotonic() < self._retry_at:
                    return None
                if not self._busy:
                    break
                left = give_up - time.monotonic()
                if left <= 0:  # (UN)LISTEN takes long (a half-open connection): poll
                    return None
                self._cond.wait(left)
            self._busy = True
            conn = self._conn
        listening = False
        generation: int | None = None
        try:
            if conn is None:
                conn = self._connect()
            if conn is not None:
                # one round trip (simple query protocol: several statements, no params)
                conn.execute("LISTEN graphruntime_runs; LISTEN graphruntime_events", prepare=False)
                listening = True
        except psycopg.Error:
            pass
        finally:
            with self._cond:
                if listening and not self._closed:
                    assert conn is not None
                    self._conn = conn
                    self._listening = True
                    generation = self._generation
                    self._reader = threading.Thread(
                        target=self._read,
                        args=(conn, generation),
                        name="graphruntime-listener",
                        daemon=True,
                    )
                    self._reader.start()
                elif conn is not None:
                    self._drop(conn)
                self._busy = False
                self._cond.notify_all()
            if conn is not None and generation is None:
                conn.close()
        return generation

    def _unwatch(self, watch: RunWatch) -> None:
        with self._cond:
            self._watchers -= 1
            for key in watch._keys:
                watches = self._watches[key]
                watches.remove(watch)
                if not watches:
                    del self._watches[key]
                    self._outcomes.pop(key[1], None)
            if not self._watchers:
                self._idle_since = time.monotonic()

    def _connect(self) -> psycopg.Connection[Any] | None:
        """A new autocommit connection to the pool's database, or None (then poll a while)."""
        pool = self._pool
        conninfo = pool.conninfo() if callable(pool.conninfo) else pool.conninfo
        kwargs: dict[str, Any] = dict(
            (pool.kwargs() if callable(pool.kwargs) else pool.kwargs) or {}
        )
        kwargs["autocommit"] = True
        if "connect_timeout" not in {**conninfo_to_dict(conninfo), **kwargs}:
            kwargs["connect_timeout"] = self.connect_timeout
        try:
            return psycopg.Connection.connect(conninfo, **kwargs)
        except psycopg.Error:
            with self._cond:
                self._retry_at = time.monotonic() + self.retry_after
            return None

    # --- the reader thread: the only user of the connection while it LISTENs ------------

    def _read(self, conn: psycopg.Connection[Any], generation: int) -> None:
        """Read notifications and wake their runs' waiters until nobody has waited for
        ``linger`` seconds (then UNLISTEN), the connection breaks or the client closes.

        It reads at libpq's level (wait for the socket, consume input, take the
        notifications): ``Connection.notifies`` costs twice as much a notification, in
        its generator, wait and lock machinery; no other thread uses the connection.
        """
        pgconn = conn.pgconn
        encoding = conn.info.encoding
        try:
            # those psycopg kept while LISTEN ran (the end of a run read right after)
            for kept in conn.notifies(timeout=0):
                self._deliver(kept.channel, kept.payload)
            with selectors.DefaultSelector() as selector:
                selector.register(pgconn.socket, selectors.EVENT_READ)
                while self._reading(generation):
                    if not selector.select(self.read_span):
                        continue
                    pgconn.consume_input()
                    while (note := pgconn.notifies()) is not None:
                        self._deliver(note.relname.decode(encoding), note.extra.decode(encoding))
        except Exception as exc:  # the connection, or anything else: its waiters poll
            if not isinstance(exc, psycopg.Error | OSError | ValueError):
                log.exception("the run listener's reader failed")
            with self._cond:
                self._drop(conn)
                self._cond.notify_all()
            conn.close()
            return
        try:
            conn.execute("UNLISTEN *", prepare=False)
        except psycopg.Error:
            with self._cond:
                self._drop(conn)
            conn.close()
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def _reading(self, generation: int) -> bool:
        """Whether the reader goes on; False with _busy set when it is to UNLISTEN."""
        with self._cond:
            if self._closed or generation != self._generation:
                raise psycopg.OperationalError("the listener was closed")
            idle = self._idle_since
            if self._watchers or idle is None or time.monotonic() - idle < self.linger:
                return True
            self._listening = False
            self._idle_since = None
            self._reader = None
            self._busy = True  # UNLISTEN next; a new waiter LISTENs again after it
            return False

    def _deliver(self, channel: str, payload: str) -> None:
        """Wake the waiters of the run a notification names, with how it ended if it says."""
        run_id, _, rest = payload.partition(" ")
        key = (channel, run_id)
        if key not in self._watches:  # someone else's run: most notifications
            return
        outcome = RunOutcome.parse(rest) if rest else None
        with self._cond:
            watches = self._watches.get(key)
            if not watches:
                return
            if outcome is not None:
                self._outcomes[run_id] = outcome
            for watch in watches:
                watch._wake()


class RunWatch:
    """One waiter's view of a :class:`RunListener`: block until its run may have changed."""

    def __init__(self, listener: RunListener, keys: Iterable[tuple[str, str]]) -> None:
        self._listener = listener
        self._keys = list(keys)
        self._generation: int | None = None
        # released by the reader for each notification of the run (a binary semaphore:
        # held means nothing new); only the listener releases it, holding its _cond
        self._signal = threading.Lock()
        self._signal.acquire()
        self._delay = 0.002  # the polling back-off, when there is no listening connection

    def _wake(self) -> None:
        """(The listener, holding its _cond.) Something happened to the run."""
        if self._signal.locked():
            self._signal.release()

    @property
    def listening(self) -> bool:
        listener = self._listener
        return self._generation is not None and self._generation == listener._generation

    def outcome(self) -> RunOutcome | None:
        """How the watched run ended, if a notification said so."""
        outcomes = self._listener._outcomes
        for _channel, run_id in self._keys:
            if (found := outcomes.get(run_id)) is not None:
                return found
        return None

    def progressed(self) -> None:
        """The run moved on: poll fast again (when polling)."""
        self._delay = 0.002

    def wait(self, timeout: float | None) -> None:
        """Return after a notification for the run, ``fallback`` s, or ``timeout`` s."""
        if timeout is not None and timeout <= 0:
            return
        if not self.listening:
            time.sleep(self._delay if timeout is None else min(self._delay, timeout))
            self._delay = min(self._delay * 1.5, 0.05)
            return
        fallback = self._listener.fallback
        self._signal.acquire(timeout=fallback if timeout is None else min(fallback, timeout))
