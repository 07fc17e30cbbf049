"""The checkpoints a coordinator round's runs hold, stored together in one round trip.

A run with ``durability="async"`` (LangGraph's default) does not wait for each step's
checkpoint to be stored before its next step, as in-process LangGraph does not: the
coordinator holds them (encoded as they were made) and stores every run's at once when
the round ends, before a step's tasks are dispatched, before anything reads them, and,
while a node runs inline, about ``STORE_WITHIN`` seconds after it started (by a
watchdog thread), so a slow node never keeps its predecessors' checkpoints unstored. A worker
killed meanwhile loses only those: the run is redone from its last stored checkpoint.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from graphruntime.checkpoint import ClusterSaver, HeldSave

STORE_WITHIN = 0.01
"""Seconds a node runs inline before the checkpoints held so far are stored (by the
watchdog thread, while it goes on; it looks twice as often)."""


MAX_HELD = 256
"""Saves held at most; then they are stored at once (a long chain of inline steps)."""


class HeldGroup:
    """Held saves of several runs (by run id), each run's in order; thread-safe."""

    def __init__(self, saver: ClusterSaver) -> None:
        self.saver = saver
        self._lock = threading.Lock()
        self._held: dict[str, list[HeldSave]] = {}
        self._errors: dict[str, Exception] = {}
        self._failure: BaseException | None = None
        self._count = 0

    def hold(self, run_id: str, save: HeldSave) -> None:
        """Hold ``save`` as the run's next; a run whose saves were refused gets that error
        instead (its later saves would be refused too: it must stop and start over)."""
        with self._lock:
            error = self._errors.get(run_id)
            if error is None:
                self._held.setdefault(run_id, []).append(save)
                self._count += 1
            full = self._count >= MAX_HELD
        if error is not None:
            self.saver.drop_held([save])
            raise error
        if full:
            self.store()

    def discard(self, run_id: str) -> None:
        """Drop the run's saves still held: it failed here, and is redone from what was
        stored (a run's saves must not land after its lease is freed)."""
        with self._lock:
            dropped = self._held.pop(run_id, [])
            self._count -= len(dropped)
        if dropped:
            self.saver.drop_held(dropped)

    def store(self) -> None:
        """Store everything held, in one round trip. An outage raises (here, or in the
        next call if a timer's store met it): what it took may not be stored."""
        with self._lock:
            if self._failure is not None:
                raise self._failure
            held, self._held = self._held, {}
            self._count = 0
            if not held:
                return
            try:
                errors = self.saver.save_held(list(held.values()))
            except BaseException as exc:  # an outage: what it took may not be stored
                self._failure = exc
                self.saver.drop_held([save for saves in held.values() for save in saves])
                raise
            for run_id, error in zip(held, errors, strict=True):
                if error is not None:
                    self._errors.setdefault(run_id, error)

    def error_of(self, run_id: str) -> Exception | None:
        """Why the run's saves were not all stored (None: all stored so far)."""
        with self._lock:
            return self._errors.get(run_id)

    @contextmanager
    def storing_within(self) -> Iterator[None]:
        """While the block runs (a node), store what is held once ``STORE_WITHIN`` passed."""
        if not self._held:  # a peek: a save held meanwhile is this thread's own
            yield
            return
        dog = _watchdog()
        me = threading.get_ident()
        entry = (self, time.monotonic())
        with dog.lock:
            dog.watched[me] = entry
        try:
            yield
        finally:
            with dog.lock:
                if dog.watched.get(me) is entry:
                    del dog.watched[me]

    def _store_quietly(self) -> None:
        # an outage is kept for the coordinator's next store, which raises it
        try:
            self.store()
        except BaseException:  # noqa: BLE001 (the coordinator's thread raises it)
            return


class _Watchdog(threading.Thread):
    """Stores the held saves of a group whose node has run for ``STORE_WITHIN``.

    One per process, polling: arming it costs a node one dict entry, not a timer thread.
    """

    def __init__(self) -> None:
        super().__init__(name="graphruntime-held-checkpoints", daemon=True)
        self.lock = threading.Lock()
        self.watched: dict[int, tuple[HeldGroup, float]] = {}
        """Per coordinator thread: the group of the node it runs, and since when."""

    def run(self) -> None:
        while True:
            time.sleep(STORE_WITHIN / 2)
            now = time.monotonic()
            with self.lock:
                due = [i for i, (_, since) in self.watched.items() if now - since >= STORE_WITHIN]
                groups = [self.watched.pop(i)[0] for i in due]  # once per node
            for group in groups:
                group._store_quietly()


_dog: _Watchdog | None = None
_dog_lock = threading.Lock()


def _watchdog() -> _Watchdog:
    global _dog
    if _dog is None or not _dog.is_alive():  # a forked pool process starts its own
        with _dog_lock:
            if _dog is None or not _dog.is_alive():
                _dog = _Watchdog()
                _dog.start()
    return _dog
