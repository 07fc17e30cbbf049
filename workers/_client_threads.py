"""A thread through :class:`~workers.client.GraphClient`: read its state, edit it
(``update_state``, ``bulk_update_state``) and cancel it, each edit under the thread's
lease, which the client holds as a worker of its own for the while."""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from graphruntime.config import RunnableConfig
from graphruntime.pregel import Pregel
from graphruntime.types import StateSnapshot
from workers import approvals
from workers._cancel import CANCEL_TASK_WAIT, cancel_request, close_thread, stop_runs
from workers._client_core import ClientCore
from workers._requests import check_text, thread_id_of
from workers.approvals import Route
from workers.errors import (
    CancelPendingError,
    GraphMismatchError,
    ThreadBusyError,
    ThreadLeasedError,
    is_transient,
)
from workers.messages import MAX_NAME

log = logging.getLogger("workers.client")


class Threads(ClientCore):
    """Read, edit and cancel threads."""

    lock_wait = 2.0  # seconds update_state waits for a thread lease held with no run in flight

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
            # plain tuples: StateUpdate is a class the request's serde does not carry
            plain = [[tuple(update) for update in step] for step in supersteps]
            edited: RunnableConfig = self._remote(
                graph, "bulk_update_state", config=config, supersteps=plain
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
