"""A run's stream chunks stored while a node runs: tokens reach a streaming client live.

A task's chunks are otherwise kept when the task is recorded (a task job) or when the
next step starts (the coordinator). A run that streams what nodes produce as they run
(``messages``, ``custom``, or its subgraphs') would show a node's tokens only once the
node is over; :class:`LiveEvents` stores them while it runs instead: a thread of its
own takes what the sink holds, at most ``interval`` seconds after a chunk arrived (or
at once past ``batch`` chunks), and keeps it with one statement
(:meth:`~workers.store.RunStore.append_events`), in order. The rest of the node's
chunks are stored as it returns; what its step makes of it (``updates``, ``values``)
goes the usual way, after them.

A node run again (its RetryPolicy, a job redelivered after its worker died, a caller
run again after its ``@task`` jobs) streams its tokens again: a client sees each
attempt's, as LangGraph streams a failed attempt's tokens before the retry's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from types import TracebackType

from graphruntime.pregel.driver import StreamChunk, StreamSink
from workers.store import Run, RunStore

log = logging.getLogger(__name__)

FLUSH_INTERVAL = 0.05
"""Seconds a chunk waits at most before it is stored (while the store answers)."""

FLUSH_BATCH = 64
"""Chunks that are stored at once, without waiting for the interval."""


class LiveEvents:
    """``with LiveEvents(store, run, sink):`` around a node's run.

    Does nothing unless a client streams the run and its sink shows chunks while tasks
    run (:attr:`StreamSink.eager`).
    A batch the store refuses (an outage) is tried again with the next one; what is
    still unstored when the node returns goes back to the front of the sink, where the
    task's other chunks take it (and fail the job the usual way if the store is away).
    """

    def __init__(
        self,
        store: RunStore,
        run: Run,
        sink: StreamSink,
        *,
        interval: float = FLUSH_INTERVAL,
        batch: int = FLUSH_BATCH,
    ) -> None:
        self.store = store
        self.run_id = run.run_id
        self.live = bool(run.payload.stream_modes) and sink.eager
        self.sink = sink
        self.interval = interval
        self.batch = batch
        self._arrived = threading.Event()
        self._full = threading.Event()
        self._count = 0
        self._stop = threading.Event()
        self._unstored: list[StreamChunk] = []
        self._listener: Callable[[], None] | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LiveEvents:
        if not self.live:
            return self
        self._listener = self.sink.listener
        self.sink.listener = self._on_chunk
        self._thread = threading.Thread(
            target=self._flushing, name=f"graphruntime-live-events-{self.run_id}", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._thread is None:
            return
        self.sink.listener = self._listener
        self._stop.set()
        self._arrived.set()
        self._full.set()
        self._thread.join()
        self._thread = None
        self._flush()  # what arrived since the last batch
        if self._unstored:
            self.sink.chunks.extendleft(reversed(self._unstored))
            self._unstored = []

    def _on_chunk(self) -> None:
        # in the thread that put the chunk (the node's): cheap, never a statement
        self._count += 1
        self._arrived.set()
        if self._count >= self.batch:
            self._full.set()
        if self._listener is not None:
            self._listener()

    def _flushing(self) -> None:
        while True:
            self._arrived.wait()
            if self._stop.is_set():
                return
            self._full.wait(self.interval)  # more chunks may come meanwhile: one statement
            if self._stop.is_set():
                return
            # cleared before the sink is read: a chunk put after that wakes the next round
            self._arrived.clear()
            self._full.clear()
            self._count = 0
            self._flush()

    def _flush(self) -> None:
        chunks = [*self._unstored, *self.sink.drain()]
        if not chunks:
            return
        try:
            self.store.append_events(self.run_id, chunks)
        except Exception as exc:  # noqa: BLE001 - the node goes on; the batch is tried again
            if not self._unstored:
                log.warning(
                    "run %s: its stream chunks could not be stored yet: %s", self.run_id, exc
                )
            self._unstored = chunks
        else:
            self._unstored = []
