"""Where a run's saver requests go on the workers: held, then stored in one round trip.

The loop makes its writes as requests (``graphruntime.pregel.driver.SaverIO``); a run's
:class:`RunSaves` takes them, its subgraphs' too, in order:

- a task's pending writes are kept until the next checkpoint put, which takes them
  ahead of it, or until :meth:`RunSaves.flush` (a task job's end: all its tasks' writes
  at once);
- with a ``round`` (the coordinator's, durability ``"async"``), puts are held too, and
  stored with the round's other runs' (:class:`RoundSaves`); without one (``"sync"``, a
  task job), each put is stored at once.

Whatever is stored goes with :func:`store_saves`: on a saver that can pipeline
(``checkpoint_pg.PostgresSaver.pipelined``), every run's requests in one transaction and
one round trip, committed without waiting for the WAL flush; the durable commit that
follows (a run's end, a step's dispatch, a task's completion) makes them durable before
anything outside Postgres depends on them. Nothing is lost by waiting: a task counts as
done only after that, so a job that dies first is run again (at least once, as always).

A held checkpoint is stored as its values are when it is stored: a node that mutates its
input in place meanwhile changes it, as with LangGraph's ``durability="async"``, which
saves a checkpoint while the next step runs.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Protocol, runtime_checkable

from graphruntime.checkpoint import BaseCheckpointSaver, ClusterSaver
from graphruntime.errors import CheckpointConflict
from graphruntime.pregel.driver import PutWrites, SaverRequest, perform_now
from workers.errors import is_transient

STORE_WITHIN = 0.01
"""Seconds a node runs inline before the checkpoints held so far are stored (by the
watchdog thread, while it goes on; it looks twice as often)."""

MAX_HELD = 256
"""Requests held at most; then they are stored at once (a long chain of inline steps)."""

_UNCHANGEABLE = frozenset({str, int, float, bool, bytes, type(None)})
"""Types of write values that cannot change after they were written (exact types)."""


@runtime_checkable
class _Pipelining(Protocol):
    """A saver that sends a block's calls in one transaction and one round trip
    (``checkpoint_pg.PostgresSaver.pipelined``)."""

    def pipelined(self, *, durable: bool = True) -> AbstractContextManager[Any]: ...


RunRequests = tuple[bool, Sequence[SaverRequest]]
"""``(fenced, requests)``: one run's requests, in order, and whether its puts are fenced."""


def store_saves(saver: ClusterSaver, runs: Sequence[RunRequests]) -> list[Exception | None]:
    """Store each run's requests, in order; per run, None or the error that stopped it
    (:class:`~graphruntime.errors.CheckpointConflict`: a fenced put refused, whose later
    puts are not stored either). An outage raises: then none of it may be stored.

    A saver that pipelines stores them all in one transaction and one round trip (its
    commit does not wait for the WAL flush); a statement that fails takes that
    transaction with it, so then each run is stored in a transaction of its own and only
    the failing one fails. Another saver performs them one by one.
    """
    if not isinstance(saver, _Pipelining):
        return [_one_by_one(saver, fenced, requests) for fenced, requests in runs]
    try:
        return _pipelined(saver, runs)
    except Exception as exc:
        if is_transient(exc):
            raise
        if len(runs) == 1:
            return [exc]
    out: list[Exception | None] = []
    for run in runs:  # which run failed: each alone
        try:
            out.extend(_pipelined(saver, [run]))
        except Exception as exc:
            if is_transient(exc):
                raise
            out.append(exc)
    return out


def _pipelined(saver: _Pipelining, runs: Sequence[RunRequests]) -> list[Exception | None]:
    with saver.pipelined(durable=False) as batch:
        for fenced, requests in runs:
            perform_now(batch.fenced() if fenced else batch, requests)
    refused: dict[str, CheckpointConflict] = batch.refused
    return [_refusal(refused, requests) for _, requests in runs]


def _refusal(
    refused: dict[str, CheckpointConflict], requests: Sequence[SaverRequest]
) -> Exception | None:
    """The conflict a run's puts met (a round has one run per thread)."""
    for request in requests:
        thread_id = request.config["configurable"].get("thread_id")
        if thread_id is not None and str(thread_id) in refused:
            return refused[str(thread_id)]
    return None


def _one_by_one(
    saver: ClusterSaver, fenced: bool, requests: Sequence[SaverRequest]
) -> Exception | None:
    try:
        perform_now(saver.fenced() if fenced else saver, requests)
    except CheckpointConflict as exc:
        return exc
    return None


def _kept(request: PutWrites) -> PutWrites:
    """A copy of a task's writes a later task of the job cannot change (values that
    cannot change need none); a task's error is kept as it is (an exception need not be
    copyable, and nothing changes it)."""
    writes = request.writes
    if all(type(value) in _UNCHANGEABLE for _, value in writes):
        return PutWrites(request.config, list(writes), request.task_id, request.task_path)
    errors = {id(value): value for _, value in writes if isinstance(value, BaseException)}
    kept = copy.deepcopy(list(writes), errors)
    return PutWrites(request.config, kept, request.task_id, request.task_path)


class RunSaves:
    """The ``SaverIO`` of one run on the workers (see the module's docstring).

    ``saver``: the workers' saver; the run's loop gets :attr:`saver`, its fenced view
    (unless :meth:`unfence`). Requests for another saver (a subgraph's own) are
    performed at once. ``key``: the run's, in the ``round``.
    """

    def __init__(
        self, saver: ClusterSaver, *, round: RoundSaves | None = None, key: str = ""
    ) -> None:
        self.base = saver
        self.fenced = True
        self.saver: ClusterSaver = saver.fenced()
        self.round = round
        self.key = key
        self._kept: list[SaverRequest] = []
        self._holding = False

    def perform(self, saver: BaseCheckpointSaver, requests: Sequence[SaverRequest]) -> None:
        if saver is not self.saver:
            perform_now(saver, requests)
            return
        for request in requests:
            if isinstance(request, PutWrites):
                self._kept.append(_kept(request))
            else:  # a put: the writes kept so far go ahead of it
                self._kept.append(request)
                self._hand_over()

    def settle(self, saver: BaseCheckpointSaver) -> None:
        """Before a read (a subgraph loads its own puts): what is held is stored."""
        if self._holding:
            self.flush()

    def unfence(self) -> None:
        """Time travel forks the thread: what is held is stored, and the run's later puts
        are not fenced."""
        self.flush()
        self.fenced = False
        self.saver = self.base

    def _hand_over(self) -> None:
        """What is kept goes to the round (or, with no round, is stored now)."""
        requests, self._kept = self._kept, []
        if not requests:
            return
        if self.round is None:
            (error,) = store_saves(self.base, [(self.fenced, requests)])
            if error is not None:
                raise error
            return
        self.round.hold(self.key, self.fenced, requests)
        self._holding = True

    def hand_over(self) -> None:
        """The writes still kept go to the round with the held puts (or, with no round,
        are stored now); the round's :meth:`RoundSaves.store` stores them."""
        self._hand_over()

    def flush(self) -> None:
        """Store everything held now (other runs' held in the round too); a refused put
        raises (CheckpointConflict)."""
        self._hand_over()
        if self.round is not None and self._holding:
            self._holding = False
            self.round.store()
            if (error := self.round.error_of(self.key)) is not None:
                raise error

    def storing_within(self) -> AbstractContextManager[None]:
        """Around a node's run: the round stores what is held if the node is slow."""
        return self.round.storing_within() if self.round is not None else nullcontext()


class RoundSaves:
    """The requests the runs of a coordinator round hold (by run id, each run's in
    order), stored together with :func:`store_saves`; thread-safe.

    Stored when the round ends, before a step's tasks are dispatched, before anything
    reads them, past :data:`MAX_HELD`, and, while a node runs inline, about
    :data:`STORE_WITHIN` seconds after it started (by a watchdog thread), so a slow node
    never keeps its predecessors' checkpoints unstored. A worker killed meanwhile loses
    only those: the run is redone from its last stored checkpoint.
    """

    def __init__(self, saver: ClusterSaver) -> None:
        self.saver = saver
        self._lock = threading.Lock()
        self._held: dict[str, tuple[bool, list[SaverRequest]]] = {}
        self._errors: dict[str, Exception] = {}
        self._failure: BaseException | None = None
        self._count = 0

    def hold(self, run_id: str, fenced: bool, requests: Sequence[SaverRequest]) -> None:
        """Hold ``requests`` as the run's next; a run whose saves were refused gets that
        error instead (its later puts would be refused too: it must stop and start over)."""
        with self._lock:
            error = self._errors.get(run_id)
            if error is None:
                self._held.setdefault(run_id, (fenced, []))[1].extend(requests)
                self._count += len(requests)
            full = self._count >= MAX_HELD
        if error is not None:
            raise error
        if full:
            self.store()

    def discard(self, run_id: str) -> None:
        """Drop the run's requests still held: it failed here, and is redone from what was
        stored (a run's saves must not land after its lease is freed)."""
        with self._lock:
            _, dropped = self._held.pop(run_id, (True, []))
            self._count -= len(dropped)

    def store(self) -> None:
        """Store everything held, in one round trip. An outage raises (here, or in the
        next call if the watchdog's store met it): what it took may not be stored."""
        with self._lock:
            if self._failure is not None:
                raise self._failure
            held, self._held = self._held, {}
            self._count = 0
            if not held:
                return
            try:
                errors = store_saves(self.saver, list(held.values()))
            except BaseException as exc:  # an outage: what it took may not be stored
                self._failure = exc
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
        if not self._held:  # a peek: a request held meanwhile is this thread's own
            yield
            return
        dog = _watchdog()
        me = threading.get_ident()
        entry = (self, time.monotonic())
        with dog.armed:
            dog.watched[me] = entry
            dog.armed.notify()
        try:
            yield
        finally:
            with dog.armed:
                if dog.watched.get(me) is entry:
                    del dog.watched[me]

    def _store_quietly(self) -> None:
        # an outage is kept for the coordinator's next store, which raises it
        try:
            self.store()
        except BaseException:  # noqa: BLE001 (the coordinator's thread raises it)
            return


class _Watchdog(threading.Thread):
    """Stores the held requests of a round whose node has run for ``STORE_WITHIN``.

    One per process: arming it costs a node one dict entry and a notify, not a timer
    thread; it sleeps while no node is watched.
    """

    def __init__(self) -> None:
        super().__init__(name="graphruntime-held-checkpoints", daemon=True)
        self.armed = threading.Condition()
        self.watched: dict[int, tuple[RoundSaves, float]] = {}
        """Per coordinator thread: the round of the node it runs, and since when."""

    def run(self) -> None:
        while True:
            with self.armed:
                while not self.watched:
                    self.armed.wait()
                now = time.monotonic()
                first = min(since for _, since in self.watched.values())
                if now - first < STORE_WITHIN:
                    self.armed.wait(first + STORE_WITHIN - now)
                    continue
                due = [i for i, (_, since) in self.watched.items() if now - since >= STORE_WITHIN]
                rounds = [self.watched.pop(i)[0] for i in due]  # once per node
            for held in rounds:
                held._store_quietly()


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
