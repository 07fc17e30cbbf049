"""Postgres LISTEN/NOTIFY wake-ups for clients waiting on runs and their stream events."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from graphruntime.checkpoint import SerializerProtocol
from graphruntime.errors import CheckpointError
from workers.store import Run, RunStatus

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

    One dedicated autocommit connection per client, opened on the first wait. It
    LISTENs only while someone waits, and ``linger`` seconds after (an idle listener
    would hold back the server's notification queue), and is used by one thread at a
    time: a waiting thread takes the connection, reads notifications and wakes the
    threads whose runs they name; the others wait on a condition. A notification can
    always be lost (a broken connection, a pooler that does not forward them), so
    waiters re-read their run at least every ``fallback`` seconds; without a connection
    they poll as before and the next wait connects again.
    """

    fallback = 0.25  # seconds a waiter goes at most without re-reading its run
    linger = 1.0  # seconds the connection keeps listening after the last waiter left
    retry_after = 5.0  # seconds to poll only, after a failed connect
    connect_timeout = 5  # seconds (libpq's connect_timeout), unless the URL sets one

    def __init__(self, pool: ConnectionPool[Any]) -> None:
        self._pool = pool
        self._cond = threading.Condition()  # guards everything below
        self._conn: psycopg.Connection[Any] | None = None
        self._generation = 0  # bumped whenever the connection is dropped
        self._busy = False  # one thread uses the connection (reads, LISTEN, UNLISTEN)
        self._listening = False  # the connection LISTENs on both channels
        self._watchers = 0
        self._seen: dict[tuple[str, str], int] = {}  # (channel, run id) → notifications
        self._outcomes: dict[str, RunOutcome] = {}  # run id → how it ended, if notified
        self._refs: dict[tuple[str, str], int] = {}
        self._retry_at = 0.0
        self._closed = False
        self._idle_since: float | None = None  # when the last waiter left, while listening
        self._lingering: threading.Thread | None = None

    @contextmanager
    def watch(self, run_id: str, channels: Sequence[str]) -> Iterator[RunWatch]:
        """LISTEN for ``run_id`` on ``channels``; read the run only once this is entered."""
        run_id = _canonical_run_id(run_id)
        keys = [(channel, run_id) for channel in channels]
        with self._cond:
            self._watchers += 1
            for key in keys:
                self._refs[key] = self._refs.get(key, 0) + 1
                self._seen.setdefault(key, 0)
        try:
            yield RunWatch(self, keys, self._listen())
        finally:
            self._unwatch(keys)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            conn = self._conn
            if conn is not None:
                self._drop(conn)
            self._cond.notify_all()
        if conn is not None:
            conn.close()  # a thread reading on it gets an error and polls

    # --- the connection: used only by the thread that set _busy -------------------------

    def _take(self) -> None:
        """Wait for the connection to be free and take it (call with _cond held)."""
        while self._busy:
            self._cond.wait()
        self._busy = True

    def _give_back(self, broken: psycopg.Connection[Any] | None = None) -> None:
        with self._cond:
            if broken is not None:
                self._drop(broken)
            self._busy = False
            self._cond.notify_all()
        if broken is not None:
            broken.close()

    def _drop(self, conn: psycopg.Connection[Any]) -> None:
        """Forget a broken connection (call with _cond held); its watchers poll."""
        if self._conn is conn:
            self._conn = None
            self._listening = False
            self._generation += 1

    def _listen(self) -> int | None:
        """Make sure the connection LISTENs; returns its generation, or None to poll."""
        with self._cond:
            while True:
                if self._closed:
                    return None
                if self._conn is not None and self._listening:
                    return self._generation
                if self._conn is None and time.monotonic() < self._retry_at:
                    return None
                if not self._busy:
                    break
                self._cond.wait()
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
                    self._conn = conn
                    self._listening = True
                    generation = self._generation
                elif conn is not None:
                    self._drop(conn)
                self._busy = False
                self._cond.notify_all()
            if conn is not None and generation is None:
                conn.close()
        return generation

    def _unwatch(self, keys: Sequence[tuple[str, str]]) -> None:
        with self._cond:
            self._watchers -= 1
            for key in keys:
                self._refs[key] -= 1
                if not self._refs[key]:
                    del self._refs[key], self._seen[key]
                    self._outcomes.pop(key[1], None)
            if self._watchers or not self._listening:
                return
            self._idle_since = time.monotonic()
            if self._lingering is None or not self._lingering.is_alive():
                self._lingering = threading.Thread(
                    target=self._linger, name="graphruntime-listener-linger", daemon=True
                )
                self._lingering.start()
            self._cond.notify_all()

    def _linger(self) -> None:
        """UNLISTEN once nobody has waited for ``linger`` seconds (then end): a client
        that waits on one run after another LISTENs once, not for every run."""
        with self._cond:
            while True:
                if self._closed or not self._listening or self._idle_since is None:
                    return
                if self._watchers:
                    self._cond.wait(1.0)  # woken by the last waiter's leaving; bounded anyway
                    continue
                remaining = self._idle_since + self.linger - time.monotonic()
                if remaining > 0:
                    self._cond.wait(remaining)
                    continue
                break
            self._take()
            conn = self._conn
            if self._watchers or not self._listening or conn is None:
                self._busy = False  # someone came meanwhile: keep listening for them
                self._cond.notify_all()
                return
            self._listening = False
            self._idle_since = None
        broken: psycopg.Connection[Any] | None = conn
        try:
            conn.execute("UNLISTEN *", prepare=False)
            broken = None
        except psycopg.Error:
            pass
        finally:
            self._give_back(broken)

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

    def _read(self, conn: psycopg.Connection[Any], timeout: float) -> None:
        """Read notifications for up to ``timeout`` s (until one arrives); wake waiters."""
        received: list[psycopg.Notify] = []
        broken: psycopg.Connection[Any] | None = conn
        try:
            received.extend(conn.notifies(timeout=timeout, stop_after=1))
            broken = None
        except psycopg.Error:
            pass
        finally:
            with self._cond:
                for note in received:
                    run_id, _, rest = note.payload.partition(" ")
                    key = (note.channel, run_id)
                    if key in self._seen:
                        self._seen[key] += 1
                        outcome = RunOutcome.parse(rest) if rest else None
                        if outcome is not None:
                            self._outcomes[run_id] = outcome
            self._give_back(broken)


class RunWatch:
    """One waiter's view of a :class:`RunListener`: block until its run may have changed."""

    def __init__(
        self, listener: RunListener, keys: Iterable[tuple[str, str]], generation: int | None
    ) -> None:
        self._listener = listener
        self._keys = list(keys)
        self._generation = generation
        self._count = self._total()
        self._delay = 0.002  # the polling back-off, when there is no listening connection

    @property
    def listening(self) -> bool:
        listener = self._listener
        return self._generation is not None and self._generation == listener._generation

    def _total(self) -> int:
        seen = self._listener._seen
        return sum(seen.get(key, 0) for key in self._keys)

    def _notified(self) -> bool:
        count = self._total()
        if count != self._count:
            self._count = count
            return True
        return False

    def outcome(self) -> RunOutcome | None:
        """How the watched run ended, if a notification said so."""
        listener = self._listener
        with listener._cond:
            for _channel, run_id in self._keys:
                if (found := listener._outcomes.get(run_id)) is not None:
                    return found
        return None

    def progressed(self) -> None:
        """The run moved on: poll fast again (when polling)."""
        self._delay = 0.002

    def wait(self, timeout: float | None) -> None:
        """Return after a notification for the run, ``fallback`` s, or ``timeout`` s."""
        listener = self._listener
        if timeout is not None and timeout <= 0:
            return
        if not self.listening:
            time.sleep(self._delay if timeout is None else min(self._delay, timeout))
            self._delay = min(self._delay * 1.5, 0.05)
            return
        span = listener.fallback if timeout is None else min(listener.fallback, timeout)
        deadline = time.monotonic() + span
        cond = listener._cond
        while True:
            with cond:
                while True:
                    if self._notified() or not self.listening:
                        return
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return
                    if not listener._busy:
                        break
                    cond.wait(remaining)  # another waiter reads and wakes us
                listener._busy = True
                conn = listener._conn
            if conn is None:  # cannot happen while listening; be safe
                listener._give_back()
                return
            listener._read(conn, remaining)


def _canonical_run_id(run_id: str) -> str:
    """The run id as Postgres prints a uuid (the NOTIFY payload)."""
    try:
        return str(uuid.UUID(run_id))
    except ValueError:
        return run_id
