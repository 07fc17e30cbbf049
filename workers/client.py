"""``GraphClient``: run registered graphs on the workers with the in-process API."""

from __future__ import annotations

import builtins
import hashlib
import importlib
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from graphruntime.checkpoint import BaseCheckpointSaver
from graphruntime.config import RunnableConfig
from graphruntime.errors import InvalidResumeError
from graphruntime.pregel import Pregel
from graphruntime.types import Command, StateSnapshot
from workers._listener import EVENTS_CHANNEL, RUNS_CHANNEL, RunListener
from workers.context import Dispatcher
from workers.errors import (
    RemoteGraphError,
    RunTimeoutError,
    ThreadBusyError,
    WorkerError,
    is_transient,
)
from workers.registry import GraphRegistry
from workers.settings import Settings
from workers.store import Run, RunStore

log = logging.getLogger(__name__)

_SAFE_MODULES = ("builtins", "graphruntime.", "workers.", "pydantic_core")


def rebuild_error(info: dict[str, Any]) -> BaseException:
    """Re-create a node's exception from its recorded type and message.

    Only built-in and graphruntime/workers exception classes are re-created; any
    other type becomes a :class:`RemoteGraphError` subclass with the same name.
    """
    name = str(info.get("type", "Exception"))
    module = str(info.get("module", "builtins"))
    message = str(info.get("message", ""))
    cls: Any = None
    if module == "builtins":
        cls = getattr(builtins, name, None)
    elif module.startswith(("graphruntime.", "workers.")):
        try:
            cls = getattr(importlib.import_module(module), name, None)
        except ImportError:
            cls = None
    args = info.get("args")
    if isinstance(cls, type) and issubclass(cls, BaseException):
        try:
            rebuilt: BaseException = cls(*args) if isinstance(args, list) else cls(message)
        except TypeError:
            pass
        else:
            return rebuilt
    remote: type[RemoteGraphError] = type(
        name, (RemoteGraphError,), {"__module__": "workers.remote"}
    )
    return remote(name, message)


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
            raise rebuild_error(run.error or {})
        return run.result


class GraphClient:
    """Submit runs, wait on them and read thread state, against Postgres and the broker."""

    lock_wait = 2.0  # seconds update_state waits for a thread lock held with no run in flight

    def __init__(
        self,
        *,
        settings: Settings,
        registry: GraphRegistry,
        saver: BaseCheckpointSaver,
        store: RunStore,
        dispatcher: Dispatcher,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.saver = saver
        self.store = store
        self.dispatcher = dispatcher
        self.listener = RunListener(store.pool)

    @classmethod
    def from_env(cls, settings: Settings | None = None) -> GraphClient:
        from workers.app import CeleryDispatcher, create_app
        from workers.runtime import build_context

        settings = settings or Settings()
        app = create_app(settings)
        ctx = build_context(app.conf.graphruntime_settings, CeleryDispatcher(app, settings))
        return cls(
            settings=ctx.settings,
            registry=ctx.registry,
            saver=ctx.saver,
            store=ctx.store,
            dispatcher=ctx.dispatcher,
        )

    def close(self) -> None:
        self.listener.close()
        self.store.pool.close()

    def _graph(self, name: str) -> Pregel:
        return self.registry.get(name).with_checkpointer(self.saver)

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
    ) -> RunHandle:
        """Queue a run of ``graph`` on the config's thread; returns at once."""
        compiled = self.registry.get(graph)  # unknown graph: a clear error, nothing queued
        thread_id = _thread_id(config)
        if idempotency_key is not None and "\x00" in idempotency_key:
            raise ValueError("idempotency_key contains a NUL character; use printable keys")
        if idempotency_key is not None:
            existing = self.store.find_by_idempotency_key(thread_id, idempotency_key)
            if existing is not None:
                return RunHandle(self, existing.run_id, thread_id, created=False)
        kind = "input"
        resumes: str | None = None
        if isinstance(input, Command):
            kind = "command"
            if input.resume is not None:
                kind = "resume"
                try:
                    input, resumes = self._prepare_resume(compiled, input, config or {}, thread_id)
                except (WorkerError, InvalidResumeError):
                    # the same keyed resume may have been accepted a moment ago (a twin
                    # delivery racing this one): then this one is that run, not an error
                    if idempotency_key is not None:
                        twin = self.store.find_by_idempotency_key(thread_id, idempotency_key)
                        if twin is not None:
                            return RunHandle(self, twin.run_id, thread_id, created=False)
                    raise
        modes = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode or ())
        payload = {
            "input": input,
            "config": _user_config(config),
            "stream_modes": modes,
            "subgraphs": subgraphs,
            "interrupt_before": interrupt_before,
            "interrupt_after": interrupt_after,
        }
        run, created = self.store.create_run(
            thread_id=thread_id,
            graph=graph,
            kind=kind,
            payload=payload,
            idempotency_key=idempotency_key,
            resumes_checkpoint=resumes,
        )
        if created:
            self.dispatcher.coordinate(run.run_id)
        return RunHandle(self, run.run_id, thread_id, created=created)

    def _prepare_resume(
        self, graph: Pregel, cmd: Command[Any], config: RunnableConfig, thread_id: str
    ) -> tuple[Command[Any], str]:
        """Validate a resume against the thread now (nothing is written if it is wrong)."""
        if self.store.active_runs(thread_id):
            raise ThreadBusyError(
                f"Thread {thread_id!r} has a run in flight; resume it once the run has paused "
                "at an interrupt (wait on the run, then resume)."
            )
        loop = graph.create_loop(cmd, _pin(config, thread_id), checkpointer=self.saver)
        loop.validate_command(cmd)
        # One resume per (checkpoint, set of pending interrupts): two racing resumes of the
        # same pause collide in the database; a later resume of a re-interrupted step, whose
        # pending interrupts differ, does not.
        pending = ",".join(sorted(loop.pending_interrupts()))
        digest = hashlib.sha256(pending.encode()).hexdigest()[:16]
        return cmd, f"{loop.checkpoint['id']}:{digest}"

    def wait_done(self, run_id: str, timeout: float | None) -> Run:
        deadline = None if timeout is None else time.monotonic() + timeout
        # LISTEN first, then read: a run finished after the read is always notified
        with self.listener.watch(run_id, (RUNS_CHANNEL,)) as watch:
            status = "unknown"
            while True:
                try:
                    run = self.store.get_run(run_id)
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
                    )
                remaining = None if deadline is None else deadline - now
                if run is None:
                    time.sleep(min(0.25, remaining if remaining is not None else 0.25))
                else:
                    watch.wait(remaining)

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
        compiled = self.registry.get(graph)
        mode = stream_mode or compiled.stream_mode
        modes = [mode] if isinstance(mode, str) else list(mode)
        single = isinstance(mode, str)
        handle = self.submit(graph, input, config, stream_mode=modes, subgraphs=subgraphs, **kwargs)
        deadline = None if timeout is None else time.monotonic() + timeout
        after = 0
        with self.listener.watch(handle.run_id, (RUNS_CHANNEL, EVENTS_CHANNEL)) as watch:
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
                        raise rebuild_error(run.error or {})
                    return
                if events:
                    watch.progressed()
                    continue
                now = time.monotonic()
                if deadline is not None and now > deadline:
                    raise RunTimeoutError(
                        f"Run {handle.run_id} still {run.status} after {timeout}s"
                    )
                watch.wait(None if deadline is None else deadline - now)

    # --- state ---------------------------------------------------------------------------

    def get_state(
        self, graph: str, config: RunnableConfig, *, subgraphs: bool = False
    ) -> StateSnapshot:
        return self._graph(graph).get_state(config, subgraphs=subgraphs)

    def get_state_history(
        self, graph: str, config: RunnableConfig, **kwargs: Any
    ) -> Iterator[StateSnapshot]:
        return self._graph(graph).get_state_history(config, **kwargs)

    def update_state(
        self, graph: str, config: RunnableConfig, values: Any, as_node: str | None = None
    ) -> RunnableConfig:
        """Edit a thread like ``update_state``; refused while a run is in flight."""
        thread_id = _thread_id(config)
        # The coordinator finishes a run before it lets go of the thread's lock, and a
        # waiter is woken at that commit: a lock held with no run in flight is let go of
        # in a moment, so wait for it (briefly) instead of calling the thread busy.
        give_up = time.monotonic() + self.lock_wait
        while True:
            with self.store.thread_lock(thread_id) as locked:
                busy = bool(self.store.active_runs(thread_id))
                if locked and not busy:
                    return self._graph(graph).update_state(config, values, as_node)
            if busy or time.monotonic() > give_up:
                raise ThreadBusyError(
                    f"Thread {thread_id!r} has a run in flight; update its state once the run "
                    "has paused or finished."
                )
            time.sleep(0.005)


def _thread_id(config: RunnableConfig | None) -> str:
    thread_id = (config or {}).get("configurable", {}).get("thread_id")
    if thread_id and "\x00" in str(thread_id):
        raise ValueError(f"thread_id {thread_id!r} contains a NUL character; use printable ids")
    if not thread_id:
        raise ValueError(
            "Checkpointer requires one or more of the following 'configurable' keys: "
            "thread_id, checkpoint_ns, checkpoint_id"
        )
    return str(thread_id)


def _pin(config: RunnableConfig, thread_id: str) -> RunnableConfig:
    return {**config, "configurable": {**config.get("configurable", {}), "thread_id": thread_id}}


def _user_config(config: RunnableConfig | None) -> dict[str, Any]:
    """The JSON-safe part of a config that travels with the run."""
    if not config:
        return {}
    out: dict[str, Any] = {}
    for key in ("configurable", "metadata", "tags", "recursion_limit", "max_concurrency"):
        if key in config:
            out[key] = config.get(key)
    return out
