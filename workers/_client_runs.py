"""Runs through :class:`~workers.client.GraphClient`: queue them (``submit``,
``submit_many``), wait on them (``wait_done``, ``invoke``) and stream their chunks.

Submitting a run reads no checkpoint: the run is queued behind the thread's earlier
runs, and the coordinator checks it (a resume against the pending interrupts) before
anything is written; a refused run ends with the error, which ``wait()``/``invoke()``
raise.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import partial
from typing import Any

from redis.exceptions import ResponseError

from graphruntime.checkpoint import check_round_trip
from graphruntime.config import RunnableConfig
from graphruntime.errors import CheckpointError, InvalidArgumentTypeError
from graphruntime.pregel.driver import run_options
from graphruntime.types import Durability
from workers import approvals
from workers._celery_wire import single
from workers._client_core import ClientCore
from workers._drain import drain_flag
from workers._listener import EVENTS_CHANNEL, RUNS_CHANNEL, RunWatch, ended_as
from workers._queue_runs import queue_runs
from workers._requests import check_text, thread_id_of
from workers.approvals import Route
from workers.errors import InvalidRequestError, RunTimeoutError, is_transient, rebuild_error
from workers.messages import MAX_NAME, MAX_NOTE
from workers.store import NewRun, Run, RunPayload

log = logging.getLogger("workers.client")

CONTROL_REFUSED = (
    "control= takes an in-process RunControl, which a run on the workers "
    "cannot see: stop a run with GraphClient.cancel(), and let workers "
    "finish their jobs on shutdown (Celery's warm shutdown) instead of draining"
)

NO_WORKER_HINT_AFTER = 10.0
"""Seconds a run may stay queued before the client asks whether any worker is running."""


@dataclass
class RunHandle:
    """A submitted run: wait for its result, read its status, stream its chunks."""

    client: Runs
    run_id: str
    thread_id: str
    created: bool = True
    queued: Run | None = None
    """The run as this handle's submit queued it (None: a handle made from a run id)."""

    def status(self) -> str:
        return self.client.store.get_run(self.run_id).status

    def run(self) -> Run:
        return self.client.store.get_run(self.run_id)

    def wait(self, timeout: float | None = 120.0) -> Any:
        """The run's output, as ``invoke`` returns it; re-raises the run's error."""
        return output(self.client.wait_done(self.run_id, timeout, notified=True))


def output(run: Run) -> Any:
    """An ended run's output, as ``invoke`` returns it; raises the run's error."""
    if run.status == "error":
        raise rebuild_error(run.error or {}, run.run_id)
    if run.result_error is not None:
        raise CheckpointError(
            f"Run {run.run_id} finished, but its result cannot be decoded here: {run.result_error}"
        )
    return run.result


def check_durability(durability: Any) -> None:
    """The durability modes a run on the workers can honour: "sync" (each step's
    checkpoint is stored before the next step starts) and "async", the default (stored
    while later steps run, grouped with other runs'; see workers/_saves.py). Both
    store a step's checkpoint before its tasks are sent; "exit" is refused."""
    if durability in (None, "sync", "async"):
        return
    if durability == "exit":
        raise InvalidRequestError(
            "durability='exit' saves only a run's last checkpoint; on the workers every step "
            "is saved, since each may run on another worker. Use 'sync' or 'async', or "
            "run the graph in-process for 'exit'."
        )
    raise InvalidRequestError(f"durability must be 'sync', 'async' or 'exit', not {durability!r}")


class Runs(ClientCore):
    """Queue runs, wait on them and stream them."""

    def submit(
        self,
        graph: str,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        stream_mode: str | Sequence[str] | None = None,
        subgraphs: bool = False,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
        idempotency_key: str | None = None,
        actor: str | None = None,
        note: str | None = None,
        route: Route = "client",
        message: str | None = None,
        context: Any = None,
        durability: Durability | None = None,
        control: Any = None,
    ) -> RunHandle:
        """Queue a run of ``graph`` on the config's thread; returns at once.

        ``context`` is the run's ``Runtime.context`` (checked against the graph's
        ``context_schema`` here). ``durability``: "async" (the default) stores a step's
        checkpoint while the run goes on, as LangGraph does, grouped with other runs'
        (a worker killed meanwhile redoes the steps not yet stored); "sync" stores it
        before the next step starts; "exit" is refused, and so is ``control`` (an
        in-process ``RunControl``).

        Nothing is read from the thread: a resume is checked against its pending
        interrupts when the run starts, after the thread's earlier runs, and a
        refused one ends with the error (``wait()`` raises it; nothing was changed).
        The same ``idempotency_key`` on a thread gives the same run; ``actor`` and
        ``note`` are kept with it. ``route``/``message``: where the run came from (a
        queue message is dead-lettered if its run is refused).
        """
        new = self._checked_run(
            graph,
            input,
            config,
            control=control,
            stream_mode=stream_mode,
            subgraphs=subgraphs,
            interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
            idempotency_key=idempotency_key,
            actor=actor,
            note=note,
            route=route,
            message=message,
            context=context,
            durability=durability,
        )
        return self._queue(new)

    def _checked_run(
        self, graph: str, input: Any, config: RunnableConfig | None, **options: Any
    ) -> NewRun:
        """:meth:`submit`'s run, checked before anything is queued: ``control`` refused,
        the graph known, the rest as :meth:`_new_run` checks it."""
        if options.pop("control", None) is not None:
            raise InvalidArgumentTypeError(CONTROL_REFUSED)
        self.check_graph(graph)  # unknown graph: a clear error, nothing queued
        return self._new_run(graph, input, config, **options)

    def _queue(self, new: NewRun) -> RunHandle:
        run, created = self.store.create_run(new)
        if created:  # after the commit: see workers/_drain.py
            self._dispatch(new.graph, run.run_id)
        return RunHandle(self, run.run_id, new.thread_id, created=created, queued=run)

    def _dispatch(self, graph: str, run_id: str) -> None:
        """Leave a committed run to the job draining its graph, or send its message."""
        wake_or_push = self.wake_or_push
        if wake_or_push is not None:
            try:
                wake_or_push(graph, single(run_id))
                return
            except ResponseError as exc:  # Redis refuses the script: not for each submit
                log.warning(
                    "Redis refused the submit script (%s); this client reads the drain "
                    "flag and sends messages without it from now on",
                    exc,
                )
                self.wake_or_push = None
                wake_or_push.close()
            except Exception as exc:  # noqa: BLE001 - the message then goes as without
                log.debug("the drain flag and message script failed: %s", exc)
        elif self._drained(graph):
            return
        self.send_coordinates([run_id], "submit it again (or reuse the same key)")

    def submit_many(
        self,
        graph: str,
        items: Iterable[tuple[Any, RunnableConfig] | tuple[Any, RunnableConfig, str | None]],
        *,
        actor: str | None = None,
        note: str | None = None,
    ) -> list[RunHandle]:
        """:meth:`submit` for many runs: ``(input, config)`` or ``(input, config,
        idempotency_key)`` each, queued in one transaction per thousand and sent over one
        broker connection. Every item is checked before anything is queued."""
        self.check_graph(graph)
        news = []
        for item in items:
            input, config, *rest = item
            key = rest[0] if rest else None
            news.append(
                self._new_run(graph, input, config, idempotency_key=key, actor=actor, note=note)
            )
        handles: list[RunHandle] = []

        def handle(new: NewRun, run: Run | None, fresh: bool, error: Exception | None) -> None:
            if error is not None:
                raise error
            assert run is not None
            handles.append(RunHandle(self, run.run_id, new.thread_id, created=fresh))

        send = partial(self.send_coordinates, instead="submit them again")
        queue_runs(self.store, news, send, each=handle)
        return handles

    def _new_run(
        self,
        graph: str,
        input: Any,
        config: RunnableConfig | None,
        *,
        stream_mode: str | Sequence[str] | None = None,
        subgraphs: bool = False,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
        idempotency_key: str | None = None,
        actor: str | None = None,
        note: str | None = None,
        route: Route = "client",
        message: str | None = None,
        context: Any = None,
        durability: Durability | None = None,
    ) -> NewRun:
        """A run to queue, checked: names, the payload's round trip through the serde."""
        thread_id = thread_id_of(config)
        approvals.check_route(route)
        check_durability(durability)
        check_text("idempotency_key", idempotency_key, MAX_NAME)
        check_text("actor", actor, MAX_NAME)
        check_text("note", note, MAX_NOTE)
        payload = RunPayload(
            input=input,
            config=_user_config(config),
            stream_modes=tuple(
                [stream_mode] if isinstance(stream_mode, str) else stream_mode or ()
            ),
            subgraphs=subgraphs,
            interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
            context=context,
            durability="sync" if durability == "sync" else None,  # "async" lets puts group
        )
        if context is not None and graph in self.registry.specs:  # else the worker checks it
            run_options(self.registry.get(graph), {}, context=context)  # a bad one fails
        stored = self._check_payload(payload)
        origin: dict[str, Any] = {"route": route}
        if actor is not None:
            origin["actor"] = actor
        if note is not None:
            origin["note"] = note
        if message is not None:
            origin["message"] = message
        serde = self.saver.serde
        return NewRun.of(
            graph,
            thread_id,
            payload,
            serde,
            idempotency_key=idempotency_key,
            origin=origin,
            stored=stored,
        )

    def _check_payload(self, payload: RunPayload) -> tuple[str, bytes]:
        """Refuse a payload the workers could not read back, nothing written then; the
        payload as stored."""
        try:
            return check_round_trip(payload.stored(), self.saver.serde)
        except CheckpointError as exc:
            raise type(exc)(
                f"The run's input or config cannot be stored for the workers: {exc} "
                "Nothing was queued."
            ) from exc

    def _drained(self, graph: str) -> bool:
        """Whether a coordinator job takes ``graph``'s queued runs now (a resident woken
        if one sleeps): no message needed."""
        flag = drain_flag(self.broker, self.settings)
        return flag is not None and flag.wake(graph)

    def wait_done(
        self,
        run_id: str,
        timeout: float | None,
        *,
        notified: bool = False,
        watched: tuple[RunWatch, Run] | None = None,
    ) -> Run:
        """The run once it ended. ``notified``: its status, result and error may come from
        the notification of its end (no read of the run then; its other fields are as
        read before, ``updated_at`` included). ``watched``: a watch entered before the run
        was queued, and the run as queued: its end is then notified, and the run is read
        only if the notification does not say how it ended (or is late)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        # LISTEN first, then read: a run finished after the read is always notified
        with nullcontext(watched[0]) if watched else self._watch(run_id, (RUNS_CHANNEL,)) as watch:
            status = "unknown"
            hint_at: float | None = time.monotonic() + NO_WORKER_HINT_AFTER
            read: Run | None = None
            unread = watched is not None and watched[0].listening
            if watched is not None and unread:
                read = watched[1]  # the watch began before the run existed
                status = read.status
            while True:
                ended = watch.outcome() if notified and watch is not None else None
                if read is not None and ended is not None:
                    return ended_as(read, ended, self.store.serde)
                if unread:  # wait for its end's notification first; then read as usual
                    unread = False
                    _wait(watch, None if deadline is None else deadline - time.monotonic())
                    continue
                try:
                    run: Run | None = self.store.get_run(run_id)
                except Exception as exc:
                    if not is_transient(exc):
                        raise
                    # Postgres restarting: the run goes on; read again until the deadline
                    log.warning("reading run %s failed (%s); retrying", run_id, exc)
                    run = None
                if run is not None and run.done:
                    return run
                read = run or read
                status = run.status if run is not None else status
                now = time.monotonic()
                if deadline is not None and now > deadline:
                    raise RunTimeoutError(
                        f"Run {run_id} is still {status} after {timeout}s; it keeps going. "
                        "Wait on its handle again or read the thread's state."
                        + (f" {self._no_worker_hint()}" if status == "queued" else "")
                    )
                if hint_at is not None and now > hint_at:
                    hint_at = None
                    if status == "queued":
                        log.warning(
                            "run %s is still queued after %.0fs: %s Waiting on.",
                            run_id,
                            NO_WORKER_HINT_AFTER,
                            self._no_worker_hint(),
                        )
                remaining = None if deadline is None else deadline - now
                _wait(watch, remaining)

    def _no_worker_hint(self) -> str:
        settings = self.settings
        try:
            alive = [
                w
                for w in self.store.live_workers(settings.stale_after)
                if not str(w["worker"]).startswith("client:")
            ]
        except Exception:  # noqa: BLE001 - a hint must not fail the wait
            alive = None
        seen = "" if alive is None else f" ({len(alive)} worker processes beat now)"
        return (
            f"Is a worker consuming queue {settings.coordinator_queue!r}{seen}? Start one "
            f"with `graphrun worker` using the same GRAPHRUNTIME_COORDINATOR_QUEUE and REDIS_URL."
        )

    def _watch(
        self, run_id: str, channels: Sequence[str]
    ) -> AbstractContextManager[RunWatch | None]:
        if self.listener is None:
            return nullcontext()
        return self.listener.watch(run_id, channels)

    def invoke(
        self,
        graph: str,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        timeout: float | None = 120.0,
        **kwargs: Any,
    ) -> Any:
        """Run ``graph`` on the workers and return what ``compiled.invoke`` would."""
        new = self._checked_run(graph, input, config, **kwargs)
        # LISTEN before the run exists: its end is notified, with no read of the run
        with self._watch(new.run_id, (RUNS_CHANNEL,)) as watch:
            handle = self._queue(new)
            watched = None
            if watch is not None and handle.created and handle.queued is not None:
                watched = (watch, handle.queued)
            done = self.wait_done(handle.run_id, timeout, notified=True, watched=watched)
        return output(done)

    def stream(
        self,
        graph: str,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        stream_mode: str | Sequence[str] | None = None,
        subgraphs: bool = False,
        timeout: float | None = 120.0,
        **kwargs: Any,
    ) -> Iterator[Any]:
        """Yield stream chunks as the workers complete steps (same shapes as ``stream``)."""
        default = self.registry.get(graph).stream_mode if graph in self.registry.specs else "values"
        mode = stream_mode or default
        modes = [mode] if isinstance(mode, str) else list(mode)
        single = isinstance(mode, str)
        handle = self.submit(graph, input, config, stream_mode=modes, subgraphs=subgraphs, **kwargs)
        deadline = None if timeout is None else time.monotonic() + timeout
        after = 0
        with self._watch(handle.run_id, (RUNS_CHANNEL, EVENTS_CHANNEL)) as watch:
            while True:
                run = handle.run()
                events = self.store.events_after(handle.run_id, after)
                for event in events:
                    after = event.seq
                    if event.mode not in modes or (event.ns and not subgraphs):
                        continue
                    if subgraphs:
                        yield (
                            (event.ns, event.payload)
                            if single
                            else (event.ns, event.mode, event.payload)
                        )
                    else:
                        yield event.payload if single else (event.mode, event.payload)
                if run.done and not events:
                    if run.status == "error":
                        raise rebuild_error(run.error or {}, run.run_id)
                    return
                if events:
                    if watch is not None:
                        watch.progressed()
                    continue
                now = time.monotonic()
                if deadline is not None and now > deadline:
                    raise RunTimeoutError(
                        f"Run {handle.run_id} still {run.status} after {timeout}s"
                    )
                _wait(watch, None if deadline is None else deadline - now)


def _wait(watch: RunWatch | None, timeout: float | None) -> None:
    if watch is not None:
        watch.wait(timeout)
    else:
        time.sleep(0.005 if timeout is None else max(0.0, min(0.005, timeout)))


def _user_config(config: RunnableConfig | None) -> dict[str, Any]:
    """The JSON-safe part of a config that travels with the run."""
    if not config:
        return {}
    out: dict[str, Any] = {}
    for key in ("configurable", "metadata", "tags", "recursion_limit", "max_concurrency"):
        if key in config:
            out[key] = config.get(key)
    return out
