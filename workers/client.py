"""``GraphClient``: run registered graphs on the workers with the in-process API.

A client is safe to share between threads: every store call borrows one connection
for one statement and gives it back. Submitting a run reads no checkpoint: the run
is queued behind the thread's earlier runs, and the coordinator checks it (a resume
against the pending interrupts) before anything is written; a refused run ends with
the error, which ``wait()``/``invoke()`` raise.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from graphruntime.checkpoint import ClusterSaver, check_round_trip
from graphruntime.config import RunnableConfig
from graphruntime.errors import CheckpointError
from graphruntime.pregel import Pregel
from graphruntime.pregel.driver import run_options
from graphruntime.types import Durability, StateSnapshot
from workers import approvals
from workers._cancel import CANCEL_TASK_WAIT, cancel_request, close_thread, stop_runs
from workers._listener import EVENTS_CHANNEL, RUNS_CHANNEL, RunListener, RunWatch
from workers._queue_runs import queue_runs
from workers._requests import check_text, thread_id_of
from workers.approvals import InboxPage, ResumeOutcome, ResumeRecord, Route
from workers.decisions import DecisionInput
from workers.dispatch import Broker
from workers.errors import (
    CancelPendingError,
    GraphMismatchError,
    NotDispatchedError,
    RunTimeoutError,
    ThreadBusyError,
    ThreadLeasedError,
    is_transient,
    rebuild_error,
)
from workers.messages import MAX_NAME, MAX_NOTE
from workers.registry import GraphRegistry
from workers.remote_graphs import GraphRequests, unknown_graph
from workers.settings import Settings, load_settings
from workers.store import NewRun, PostgresRunStore, Run, RunPayload, RunStore, WaitClaim

log = logging.getLogger(__name__)

NO_WORKER_HINT_AFTER = 10.0
"""Seconds a run may stay queued before the client asks whether any worker is running."""


@dataclass
class RunHandle:
    """A submitted run: wait for its result, read its status, stream its chunks."""

    client: GraphClient
    run_id: str
    thread_id: str
    created: bool = True

    def status(self) -> str:
        return self.client.store.get_run(self.run_id).status

    def run(self) -> Run:
        return self.client.store.get_run(self.run_id)

    def wait(self, timeout: float | None = 120.0) -> Any:
        """The run's output, as ``invoke`` returns it; re-raises the run's error."""
        run = self.client.wait_done(self.run_id, timeout)
        if run.status == "error":
            raise rebuild_error(run.error or {}, run.run_id)
        if run.result_error is not None:
            raise CheckpointError(
                f"Run {run.run_id} finished, but its result cannot be decoded here: "
                f"{run.result_error}"
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
        raise ValueError(
            "durability='exit' saves only a run's last checkpoint; on the workers every step "
            "is saved, since each may run on another worker. Use 'sync' or 'async', or "
            "run the graph in-process for 'exit'."
        )
    raise ValueError(f"durability must be 'sync', 'async' or 'exit', not {durability!r}")


class GraphClient:
    """Submit runs, wait on them and read thread state, against Postgres and the broker."""

    lock_wait = 2.0  # seconds update_state waits for a thread lease held with no run in flight

    def __init__(
        self,
        *,
        settings: Settings,
        registry: GraphRegistry,
        saver: ClusterSaver,
        store: RunStore,
        broker: Broker,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.saver = saver
        self.store = store
        self.broker = broker
        self.name = f"client:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.listener = RunListener(store.pool) if isinstance(store, PostgresRunStore) else None
        self.known_graphs: set[str] = set()
        """Graphs this client takes as served without asking (graphrun serve's config)."""
        redis = getattr(broker, "redis", None)
        self.requests = (
            GraphRequests(redis, settings.coordinator_queue, saver.serde)
            if redis is not None
            else None
        )

    @classmethod
    def from_env(cls, settings: Settings | None = None) -> GraphClient:
        """A client for the cluster the settings (default: the environment) name."""
        from workers.runtime import connect

        ctx = connect(settings or load_settings())
        return cls(
            settings=ctx.settings,
            registry=ctx.registry,
            saver=ctx.saver,
            store=ctx.store,
            broker=ctx.broker,
        )

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()
        close = getattr(self.store, "close", None)
        if callable(close):
            close()

    def _graph(self, name: str) -> Pregel:
        return self.registry.get(name).with_checkpointer(self.saver)

    def local(self, graph: str) -> bool:
        """Whether this process has the graph's code (configured in its own registry);
        otherwise what needs it is asked of the workers that serve it."""
        return graph in self.registry.specs or self.requests is None

    def check_graph(self, graph: str) -> None:
        """Refuse a graph neither this process nor any live worker serves (nothing is
        queued), suggesting the nearest names."""
        if graph in self.registry.specs:
            self.registry.get(graph)  # a broken entry here is a ConfigurationError
            return
        if graph in self.known_graphs:
            return
        served = self.served_graphs() if self.requests is not None else None
        if served is None or graph not in served:
            raise unknown_graph(graph, self.registry.names(), served)

    def served_graphs(self) -> list[str]:
        """The graphs live workers serve (announced within twice the heartbeat interval)."""
        if self.requests is None:
            return self.registry.names()
        return self.requests.served(self.settings.stale_after)

    def _remote(self, graph: str, op: str, **args: Any) -> Any:
        assert self.requests is not None
        return self.requests.call(graph, op, **args)

    # --- runs ----------------------------------------------------------------------------

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
        if control is not None:
            raise TypeError(
                "control= takes an in-process RunControl, which a run on the workers "
                "cannot see: stop a run with GraphClient.cancel(), and let workers "
                "finish their jobs on shutdown (Celery's warm shutdown) instead of draining"
            )
        self.check_graph(graph)  # unknown graph: a clear error, nothing queued
        new = self._new_run(
            graph,
            input,
            config,
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
        run, created = self.store.create_run(new)
        thread_id = new.thread_id
        if created:
            self.send_coordinates([run.run_id], "submit it again (or reuse the same key)")
        return RunHandle(self, run.run_id, thread_id, created=created)

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

    def send_coordinates(self, run_ids: Sequence[str], instead: str) -> None:
        """Send recorded runs to the workers; an unreachable broker is a
        :class:`NotDispatchedError` (nothing is lost: the sweepers send them later)."""
        try:
            self.broker.send_coordinates(run_ids, per_message=self.settings.coordinate_batch)
        except Exception as exc:
            if not is_transient(exc):
                raise
            what = f"Run {run_ids[0]} is" if len(run_ids) == 1 else f"{len(run_ids)} runs are"
            raise NotDispatchedError(
                f"{what} recorded, but the broker could not be reached ({exc}). Nothing is "
                "lost: a running worker's sweeper sends them within "
                f"{2 * self.settings.stale_after:.0f}s of the broker coming back. Do not "
                f"{instead}.",
                run_ids[0],
            ) from exc

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
            run_options(self.registry.get(graph), {}, context=context)  # a bad one fails here
        self._check_payload(payload)
        origin: dict[str, Any] = {"route": route}
        if actor is not None:
            origin["actor"] = actor
        if note is not None:
            origin["note"] = note
        if message is not None:
            origin["message"] = message
        serde = self.saver.serde
        return NewRun.of(
            graph, thread_id, payload, serde, idempotency_key=idempotency_key, origin=origin
        )

    def _check_payload(self, payload: RunPayload) -> None:
        """Refuse a payload the workers could not read back; nothing is written then."""
        try:
            check_round_trip(payload.stored(), self.saver.serde)
        except CheckpointError as exc:
            raise type(exc)(
                f"The run's input or config cannot be stored for the workers: {exc} "
                "Nothing was queued."
            ) from exc

    def wait_done(self, run_id: str, timeout: float | None) -> Run:
        deadline = None if timeout is None else time.monotonic() + timeout
        # LISTEN first, then read: a run finished after the read is always notified
        with self._watch(run_id, (RUNS_CHANNEL,)) as watch:
            status = "unknown"
            hint_at: float | None = time.monotonic() + NO_WORKER_HINT_AFTER
            while True:
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
        return self.submit(graph, input, config, **kwargs).wait(timeout)

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

    # --- state ---------------------------------------------------------------------------

    def get_state(
        self, graph: str, config: RunnableConfig, *, subgraphs: bool = False
    ) -> StateSnapshot:
        if not self.local(graph):
            snapshot: StateSnapshot = self._remote(
                graph, "get_state", config=config, subgraphs=subgraphs
            )
            return snapshot
        return self._graph(graph).get_state(config, subgraphs=subgraphs)

    def get_state_history(
        self, graph: str, config: RunnableConfig, **kwargs: Any
    ) -> Iterator[StateSnapshot]:
        if not self.local(graph):
            return iter(self._remote(graph, "get_state_history", config=config, kwargs=kwargs))
        return self._graph(graph).get_state_history(config, **kwargs)

    def clear_cache(self, graph: str, nodes: Sequence[str] | None = None) -> None:
        """Forget the cached results of ``nodes`` (default: every node), like
        ``clear_cache``: for every worker, whose graphs cache in the shared Postgres
        cache. A graph compiled without a cache is refused, as in-process."""
        self.registry.get(graph).clear_cache(nodes)

    def update_state(
        self, graph: str, config: RunnableConfig, values: Any, as_node: str | None = None
    ) -> RunnableConfig:
        """Edit a thread like ``update_state``; refused while a run is in flight.

        The edit holds the thread's lease (so no coordinator starts a run meanwhile)
        and its checkpoint put is fenced (so it cannot fork the thread).
        """
        if not self.local(graph):
            edited: RunnableConfig = self._remote(
                graph, "update_state", config=config, values=values, as_node=as_node
            )
            return edited
        return self._edit(graph, config, lambda g: g.update_state(config, values, as_node))

    def bulk_update_state(
        self, graph: str, config: RunnableConfig, supersteps: Sequence[Sequence[Any]]
    ) -> RunnableConfig:
        """Several edits, one superstep each, like ``bulk_update_state``; as
        :meth:`update_state`: under the thread's lease, fenced, refused mid-run."""
        if not self.local(graph):
            edited: RunnableConfig = self._remote(
                graph, "bulk_update_state", config=config, supersteps=supersteps
            )
            return edited
        return self._edit(graph, config, lambda g: g.bulk_update_state(config, supersteps))

    def _edit(
        self, graph: str, config: RunnableConfig, edit: Callable[[Pregel], RunnableConfig]
    ) -> RunnableConfig:
        thread_id = thread_id_of(config)
        self.registry.get(graph)
        bound = self.store.bind_thread(thread_id, graph)
        if bound != graph:
            raise GraphMismatchError(
                f"Thread {thread_id!r} belongs to graph {bound!r}, not {graph!r}; nothing "
                "was changed."
            )
        busy = ThreadBusyError(
            f"Thread {thread_id!r} has a run in flight; update its state once the run has "
            "paused or finished."
        )
        if self.store.active_runs(thread_id):
            raise busy
        try:
            with self._holding(thread_id, self.lock_wait):
                if self.store.active_runs(thread_id):
                    raise busy
                # fenced unless it forks an older checkpoint (time travel)
                addressed = (config.get("configurable") or {}).get("checkpoint_id")
                saver = self.saver if addressed else self.saver.fenced()
                edited = edit(self.registry.get(graph).with_checkpointer(saver))
                # the edit leaves the interrupts it answered or replaced behind
                self.store.replace_inbox(thread_id)
                return edited
        except ThreadLeasedError as exc:
            raise busy from exc

    @contextmanager
    def _holding(self, thread_id: str, timeout: float) -> Iterator[None]:
        """Hold the thread's lease as this client (a worker of its own for the while,
        beating), waiting up to ``timeout`` seconds for a live holder to free it
        (:class:`ThreadLeasedError`). Runs queued meanwhile are sent on at the end:
        their own jobs found the lease taken and left them to the holder."""
        stale = self.settings.stale_after
        give_up = time.monotonic() + timeout
        self._beat()
        try:
            delay = 0.005
            while not self.store.acquire_thread(thread_id, self.name, stale):
                if time.monotonic() > give_up:
                    raise ThreadLeasedError(
                        f"thread {thread_id!r} is held by a live worker advancing one of its "
                        f"runs; waited {timeout}s"
                    )
                time.sleep(delay)
                delay = min(2 * delay, 0.1)
                self._beat()
            try:
                yield
            finally:
                following = self.store.release_thread(thread_id, self.name)
                if following is not None:
                    self._send_quietly(following)
        finally:
            self.store.remove_worker(self.name)

    def _beat(self) -> None:
        self.store.heartbeat(self.name, socket.gethostname(), os.getpid())

    def _send_quietly(self, run_id: str) -> None:
        """Send a recorded run on; if the broker is away the sweepers send it later."""
        try:
            self.broker.send_coordinates([run_id], per_message=1)
        except Exception as exc:
            if not is_transient(exc):
                raise
            log.warning("run %s not sent now (%s); the sweepers send it", run_id, exc)

    # --- approvals -------------------------------------------------------------------------

    def inbox(
        self,
        graph: str | None = None,
        *,
        where: dict[str, Any] | None = None,
        node: str | None = None,
        older_than: timedelta | datetime | None = None,
        limit: int = 50,
        cursor: str | None = None,
        thread: str | None = None,
        action: str | None = None,
        args: dict[str, Any] | None = None,
    ) -> InboxPage:
        """A page of pending interrupts across threads, oldest first.

        ``where`` keeps waits whose value contains it (JSON containment, e.g.
        ``{"team": "ops"}``); ``older_than`` an age or a time; ``thread`` one thread's
        waits; ``action``/``args`` the approval requests (LangChain's HITL middleware,
        Agent Inbox) of that action whose args contain ``args``; ``cursor`` is the
        previous page's. Reads the inbox table only, never a checkpoint.
        """
        return approvals.inbox(
            self,
            graph,
            where=where,
            node=node,
            older_than=older_than,
            limit=limit,
            cursor=cursor,
            thread=thread,
            action=action,
            args=args,
        )

    def resume_many(
        self,
        graph: str,
        *,
        value: Any = None,
        decision: DecisionInput | None = None,
        idempotency_key: str,
        where: dict[str, Any] | None = None,
        node: str | None = None,
        items: Iterable[tuple[str, str]] | None = None,
        action: str | None = None,
        args: dict[str, Any] | None = None,
        actor: str | None = None,
        note: str | None = None,
        route: Route = "client",
        progress: Callable[[int, int], None] | None = None,
    ) -> list[ResumeOutcome]:
        """Resume every selected pending interrupt with ``value``, or answer each with
        ``decision`` in its own format (approve / edit / reject / respond; see
        :mod:`workers.decisions`): one outcome per thread. A decision one selected wait
        does not allow resumes none (:class:`~workers.decisions.DecisionError`).

        Safe to repeat: the same ``idempotency_key`` resumes each thread once.
        ``route`` is recorded in the audit trail (``ui``, ``inbox``, ``api``... for the
        product's own front ends).
        """
        check_text("actor", actor, MAX_NAME)
        check_text("note", note, MAX_NOTE)
        return approvals.resume_many(
            self,
            graph,
            value=value,
            decision=decision,
            idempotency_key=idempotency_key,
            where=where,
            node=node,
            items=items,
            action=action,
            args=args,
            actor=actor,
            note=note,
            route=route,
            progress=progress,
        )

    def claim_wait(
        self,
        graph: str,
        thread_id: str,
        interrupt_id: str,
        *,
        actor: str,
        minutes: float = 15,
        take_over: bool = False,
    ) -> WaitClaim:
        """Claim a pending wait for ``minutes`` so other approvers see who answers it;
        the claim as it stands after the attempt (``taken`` False: someone else holds
        it). See :func:`workers.approvals.claim_wait`."""
        return approvals.claim_wait(
            self, graph, thread_id, interrupt_id, actor=actor, minutes=minutes, take_over=take_over
        )

    def release_wait(self, graph: str, thread_id: str, interrupt_id: str, *, actor: str) -> bool:
        """End ``actor``'s claim on a wait; whether there was one."""
        return approvals.release_wait(self, graph, thread_id, interrupt_id, actor=actor)

    def cancel(
        self,
        graph: str,
        config: RunnableConfig,
        *,
        reason: str,
        actor: str | None = None,
        route: Route = "client",
        wait: float = CANCEL_TASK_WAIT,
        timeout: float = 60.0,
    ) -> list[str]:
        """Cancel the thread; returns the runs cancelled. A barrier: once it returns, no
        node of the thread starts, and a resume made later is refused (not pending).

        The cancel takes the thread's lease, so a run a worker is advancing ends first
        (it is not cancelled, and what it did stays: up to ``timeout`` seconds, else a
        :class:`CancelPendingError`, the cancel being queued to apply when the lease is
        free). Then, in one transaction, the thread's queued and running runs end as
        ``cancelled`` (none of them had any effect in the state), their open tasks
        close, and its waits leave the inbox; nodes that live workers started before
        are waited for up to ``wait`` seconds (their writes are refused). A checkpoint
        with nothing left to run, saying who cancelled and why, is put on the thread:
        here if this process has the graph's code, else by the next worker that takes
        the cancel (a run of its own, kind ``cancel``, ahead of the thread's others).
        """
        check_text("actor", actor, MAX_NAME)
        approvals.check_route(route)
        thread_id = thread_id_of(config)
        new = cancel_request(
            graph, thread_id, self.saver.serde, reason=reason, actor=actor, route=route, wait=wait
        )
        run, _ = self.store.create_run(new)  # an unknown thread or graph: refused here
        try:
            with self._holding(thread_id, timeout):
                taken = self.store.get_run(run.run_id)
                if taken.done:  # a worker took the cancel first, under the lease
                    return list((taken.result or {}).get("cancelled", []))
                stopped = stop_runs(self.store, run, self.settings.stale_after, self._beat)
                if graph in self.registry.names():
                    close_thread(self.registry.get(graph), self.saver.fenced(), run, stopped)
                    result = stopped.result()
                    self.store.finish_run(run.run_id, "success", result=result, inbox=[])
                # else: the cancel run is the thread's next run, sent on as the lease goes
        except ThreadLeasedError as exc:
            self._send_quietly(run.run_id)
            raise CancelPendingError(
                f"Cannot cancel thread {thread_id!r} now: {exc}. The cancel is queued as "
                f"run {run.run_id} and applies as soon as that worker frees the thread; "
                "nothing is cancelled yet.",
                run.run_id,
            ) from exc
        return stopped.cancelled

    def resume_history(
        self, graph: str, config: RunnableConfig, *, limit: int = 50
    ) -> list[ResumeRecord]:
        """The thread's resumes, newest first: who, when, which value, which route."""
        return approvals.resume_history(self, graph, config, limit=limit)


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
