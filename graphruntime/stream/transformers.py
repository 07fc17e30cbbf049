"""The built-in stream transformers (as ``langgraph.stream.transformers``).

Each projects one kind of protocol event at the run's own scope onto a
:class:`StreamChannel`: ``values``, ``updates``, ``custom``, ``checkpoints``, ``debug``,
``tasks``. :class:`LifecycleTransformer` and :class:`SubgraphTransformer` read the
``tasks`` events to follow subgraphs: the first task event inside a namespace starts
it, the result of the parent task that ran it ends it.

``MessagesTransformer`` (``run.messages``: one LangChain ``ChatModelStream`` per
model call) needs langchain-core; it is loaded from
:mod:`graphruntime.stream._messages` on first use.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from graphruntime import errors
from graphruntime.errors import GraphInterrupt
from graphruntime.stream._types import (
    LifecycleCause,
    LifecyclePayload,
    ProtocolEvent,
    StreamTransformer,
    SubgraphStatus,
)
from graphruntime.stream.run_stream import AsyncSubgraphRunStream, SubgraphRunStream
from graphruntime.stream.stream_channel import StreamChannel

if TYPE_CHECKING:
    from graphruntime.stream._messages import MessagesTransformer
    from graphruntime.stream._mux import StreamMux

__all__ = (
    "CheckpointsTransformer",
    "CustomTransformer",
    "DebugTransformer",
    "LifecycleCause",
    "LifecyclePayload",
    "LifecycleTransformer",
    "MessagesTransformer",
    "SubgraphStatus",
    "SubgraphTransformer",
    "TasksTransformer",
    "UpdatesTransformer",
    "ValuesTransformer",
)

_logger = logging.getLogger(__name__)


def __getattr__(name: str) -> Any:
    if name == "MessagesTransformer":
        from graphruntime.stream._messages import MessagesTransformer

        return MessagesTransformer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _ModeTransformer(StreamTransformer):
    """Pushes the data of every ``mode`` event at this scope onto its projection."""

    _native = True
    mode: str

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._log: StreamChannel[Any] = StreamChannel()
        self._scope_list: list[str] = list(scope)

    def init(self) -> dict[str, Any]:
        return {self.mode: self._log}

    def _own(self, event: ProtocolEvent) -> bool:
        return event["method"] == self.mode and event["params"]["namespace"] == self._scope_list

    def process(self, event: ProtocolEvent) -> bool:
        if self._own(event):
            self._log.push(event["params"]["data"])
        return True


class ValuesTransformer(_ModeTransformer):
    """``run.values``: the state after each step of this graph (not of its subgraphs)."""

    mode = "values"
    required_stream_modes = ("values",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._latest: dict[str, Any] | None = None
        self._interrupted = False
        self._interrupts: list[Any] = []

    @property
    def error(self) -> BaseException | None:
        """The error the run ended with, or None."""
        return self._log._error

    def process(self, event: ProtocolEvent) -> bool:
        if self._own(event):
            params = event["params"]
            self._latest = params["data"]
            interrupts = params.get("interrupts", ())
            if interrupts:
                self._interrupted = True
                self._interrupts.extend(interrupts)
            self._log.push(params["data"])
        return True


class CustomTransformer(_ModeTransformer):
    """``run.custom``: what this graph's nodes wrote with their ``StreamWriter``."""

    mode = "custom"
    required_stream_modes = ("custom",)


class UpdatesTransformer(_ModeTransformer):
    """``run.updates``: what each node of this graph returned, step by step."""

    mode = "updates"
    required_stream_modes = ("updates",)


class CheckpointsTransformer(_ModeTransformer):
    """``run.checkpoints``: each checkpoint this graph saved (empty without a saver)."""

    mode = "checkpoints"
    required_stream_modes = ("checkpoints",)


class DebugTransformer(_ModeTransformer):
    """``run.debug``: this graph's checkpoints, tasks and task results, with their step."""

    mode = "debug"
    required_stream_modes = ("debug",)


class TasksTransformer(_ModeTransformer):
    """``run.tasks``: this graph's task starts and results."""

    mode = "tasks"
    required_stream_modes = ("tasks",)


def _parse_ns_segment(segment: str) -> tuple[str, str | None]:
    """``"node:task_id"`` -> ``("node", "task_id")``; no ``:`` -> ``(segment, None)``."""
    name, sep, task_id = segment.partition(":")
    return name, task_id if sep else None


def _status_from_exception(err: BaseException) -> tuple[SubgraphStatus, str | None]:
    drained = getattr(errors, "GraphDrained", None)  # present once run control is
    if drained is not None and isinstance(err, drained):
        return "drained", None
    if isinstance(err, GraphInterrupt):
        return "interrupted", None
    return "failed", str(err)


def _terminal_from_result(payload: dict[str, Any]) -> tuple[SubgraphStatus, str | None]:
    # an interrupt shows as interrupts, not as an error: it wins
    if payload.get("interrupts"):
        return "interrupted", None
    if error := payload.get("error"):
        return "failed", str(error)
    return "completed", None


def _tool_call_id(payload: Any) -> str | None:
    """The id of the LLM tool call a task runs, if its input is one (or a list of them)."""
    if isinstance(payload, dict) and isinstance(payload.get("tool_call"), dict):
        candidate = payload["tool_call"].get("id")
        return candidate if isinstance(candidate, str) else None
    if isinstance(payload, list):
        for call in payload:
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                return str(call["id"])
    return None


class _TasksLifecycleBase(StreamTransformer):
    """Follows subgraphs through ``tasks`` events (shared by lifecycle and handles).

    A tracked namespace starts at its first task event and ends when the result of
    the parent task that ran it arrives (``node:<task id>`` names that task), or when
    the run ends. A task carrying ``lc_agent_name`` in its metadata marks a subagent:
    it is named after it, and linked to the tool call that spawned it. Tasks events
    are folded into the projections, so they are kept out of the main log.

    Subclasses say which namespaces they track and what starting and ending do.
    """

    required_stream_modes = ("tasks",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._seen: set[tuple[str, ...]] = set()
        self._open: dict[tuple[str, ...], str] = {}  # namespace -> id of the task running it
        self._lc_by_ns: dict[tuple[str, ...], str | None] = {}
        self._pending_tool_calls: dict[str, str] = {}  # task id -> tool call id
        # the cause of the start being reported; an attribute, so that subclasses'
        # _on_started keeps its three-argument signature
        self._pending_cause: LifecycleCause | None = None

    def _should_track(self, ns: tuple[str, ...]) -> bool:
        raise NotImplementedError

    def _on_started(
        self, ns: tuple[str, ...], graph_name: str | None, trigger_call_id: str | None
    ) -> None:
        raise NotImplementedError

    def _on_terminal(self, ns: tuple[str, ...], status: SubgraphStatus, error: str | None) -> None:
        raise NotImplementedError

    def process(self, event: ProtocolEvent) -> bool:
        if event["method"] != "tasks":
            return True
        ns = tuple(event["params"]["namespace"])
        data = event["params"]["data"]
        if "result" in data:
            self._handle_task_result(ns, data)
        else:
            self._record_identity(ns, data)
            self._record_pending_tool_calls(data)
            self._handle_task_start(ns, data)
        return False

    def _record_identity(self, ns: tuple[str, ...], data: dict[str, Any]) -> None:
        if ns not in self._lc_by_ns:
            self._lc_by_ns[ns] = (data.get("metadata") or {}).get("lc_agent_name")

    def _record_pending_tool_calls(self, data: dict[str, Any]) -> None:
        task_id = data.get("id")
        if isinstance(task_id, str) and (call_id := _tool_call_id(data.get("input"))):
            self._pending_tool_calls[task_id] = call_id

    def _handle_task_start(self, ns: tuple[str, ...], data: dict[str, Any]) -> None:
        if not self._should_track(ns) or ns in self._seen:
            return
        self._seen.add(ns)
        parsed_name, trigger_call_id = _parse_ns_segment(ns[-1])
        agent = (data.get("metadata") or {}).get("lc_agent_name")
        cause: LifecycleCause | None = None
        call_id = self._pending_tool_calls.get(trigger_call_id) if trigger_call_id else None
        if agent is not None and call_id:
            cause = {"type": "toolCall", "tool_call_id": str(call_id)}
        self._pending_cause = cause
        self._on_started(ns, agent if agent is not None else (parsed_name or None), trigger_call_id)
        if trigger_call_id is not None:
            self._open[ns] = trigger_call_id

    def _pop_terminal_transitions(
        self, ns: tuple[str, ...], data: dict[str, Any]
    ) -> list[tuple[tuple[str, ...], SubgraphStatus, str | None]]:
        """The tracked children this task result ends (removed from the open set)."""
        result_id = data.get("id")
        if not result_id:
            return []
        ended = []
        for child, parent_task in list(self._open.items()):
            if child[:-1] == ns and parent_task == result_id:
                ended.append((child, *_terminal_from_result(data)))
                del self._open[child]
        return ended

    def _handle_task_result(self, ns: tuple[str, ...], data: dict[str, Any]) -> None:
        for child, status, error in self._pop_terminal_transitions(ns, data):
            self._on_terminal(child, status, error)

    def finalize(self) -> None:
        for ns in list(self._open):
            self._on_terminal(ns, "completed", None)
        self._open.clear()

    def fail(self, err: BaseException) -> None:
        status, error = _status_from_exception(err)
        for ns in list(self._open):
            self._on_terminal(ns, status, error)
        self._open.clear()


class LifecycleTransformer(_TasksLifecycleBase):
    """``run.lifecycle``: subgraph starts and ends at every depth below this scope.

    Its channel is named ``lifecycle``, so the payloads are in the main log too.
    """

    _native = True

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._channel: StreamChannel[LifecyclePayload] = StreamChannel("lifecycle")

    def init(self) -> dict[str, Any]:
        return {"lifecycle": self._channel}

    def _should_track(self, ns: tuple[str, ...]) -> bool:
        depth = len(self.scope)
        return len(ns) > depth and ns[:depth] == self.scope

    def _on_started(
        self, ns: tuple[str, ...], graph_name: str | None, trigger_call_id: str | None
    ) -> None:
        if trigger_call_id is None:
            return  # no parent task to end it: finalize/fail will
        payload: LifecyclePayload = {"event": "started", "namespace": list(ns)}
        if graph_name:
            payload["graph_name"] = graph_name
        payload["trigger_call_id"] = trigger_call_id
        if self._pending_cause is not None:
            payload["cause"] = self._pending_cause
        self._channel.push(payload)

    def _on_terminal(self, ns: tuple[str, ...], status: SubgraphStatus, error: str | None) -> None:
        payload: LifecyclePayload = {"event": status, "namespace": list(ns)}
        if error is not None:
            payload["error"] = error
        self._channel.push(payload)


_Handle = SubgraphRunStream | AsyncSubgraphRunStream


class SubgraphTransformer(_TasksLifecycleBase):
    """``run.subgraphs``: a run-stream handle per direct child subgraph.

    Each handle has a child mux with the run's transformers at the child's scope;
    events inside the child's namespace are forwarded to it, so ``handle.values``,
    ``handle.subgraphs`` (grandchildren)... fill as the run goes.
    """

    _native = True
    supports_sync = True

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._log: StreamChannel[_Handle] = StreamChannel()
        self._handles: dict[tuple[str, ...], _Handle] = {}
        self._mux: StreamMux | None = None

    def init(self) -> dict[str, Any]:
        return {"subgraphs": self._log}

    def _on_register(self, mux: Any) -> None:
        self._mux = mux

    def _should_track(self, ns: tuple[str, ...]) -> bool:
        depth = len(self.scope)
        return len(ns) == depth + 1 and ns[:depth] == self.scope

    def _on_started(
        self, ns: tuple[str, ...], graph_name: str | None, trigger_call_id: str | None
    ) -> None:
        if self._mux is None:
            return
        try:
            child = self._mux._make_child(ns)
        except RuntimeError:
            return
        handle_cls = AsyncSubgraphRunStream if child.is_async else SubgraphRunStream
        handle = handle_cls(child, path=ns, graph_name=graph_name, trigger_call_id=trigger_call_id)
        self._handles[ns] = handle
        self._log.push(handle)

    @staticmethod
    def _mark_terminal(handle: _Handle, status: SubgraphStatus, error: str | None) -> bool:
        """Record the handle's end once; True the first time."""
        if handle._seen_terminal:
            return False
        handle.status = status
        if error is not None and handle.error is None:
            handle.error = error
        handle._seen_terminal = True
        return True

    def _on_terminal(self, ns: tuple[str, ...], status: SubgraphStatus, error: str | None) -> None:
        handle = self._handles.get(ns)
        if handle is None or not self._mark_terminal(handle, status, error):
            return
        if handle._mux._events._closed:
            return
        if status == "failed":
            handle._mux.fail(RuntimeError(error or "Subgraph failed"))
        else:
            handle._mux.close()

    async def _aon_terminal(
        self, ns: tuple[str, ...], status: SubgraphStatus, error: str | None
    ) -> None:
        handle = self._handles.get(ns)
        if handle is None or not self._mark_terminal(handle, status, error):
            return
        if handle._mux._events._closed:
            return
        if status == "failed":
            await handle._mux.afail(RuntimeError(error or "Subgraph failed"))
        else:
            await handle._mux.aclose()

    def _handle_for_event(self, event: ProtocolEvent) -> _Handle | None:
        ns = tuple(event["params"]["namespace"])
        depth = len(self.scope)
        if len(ns) <= depth:
            return None
        handle = self._handles.get(ns[: depth + 1])
        if handle is None or handle._mux._events._closed:
            return None
        return handle

    def process(self, event: ProtocolEvent) -> bool:
        keep = super().process(event)  # a new child's handle exists before forwarding
        handle = self._handle_for_event(event)
        if handle is not None:
            handle._observe_event(event)
            handle._mux.push(event)
        return keep

    async def aprocess(self, event: ProtocolEvent) -> bool:
        keep = True
        if event["method"] == "tasks":
            keep = False
            ns = tuple(event["params"]["namespace"])
            data = event["params"]["data"]
            if "result" in data:
                for child, status, error in self._pop_terminal_transitions(ns, data):
                    await self._aon_terminal(child, status, error)
            else:
                self._record_identity(ns, data)
                self._record_pending_tool_calls(data)
                self._handle_task_start(ns, data)
        handle = self._handle_for_event(event)
        if handle is not None:
            handle._observe_event(event)
            await handle._mux.apush(event)
        return keep

    def finalize(self) -> None:
        first: BaseException | None = None
        for ns in list(self._open):
            try:
                self._on_terminal(ns, "completed", None)
            except BaseException as exc:  # noqa: BLE001 - re-raised after the cleanup
                first = first or exc
        self._open.clear()
        for handle in self._handles.values():
            if self._mark_terminal(handle, "completed", None) and not handle._mux._events._closed:
                try:
                    handle._mux.close()
                except BaseException as exc:  # noqa: BLE001 - re-raised after the cleanup
                    first = first or exc
        if first is not None:
            raise first

    async def afinalize(self) -> None:
        first: BaseException | None = None
        for ns in list(self._open):
            try:
                await self._aon_terminal(ns, "completed", None)
            except BaseException as exc:  # noqa: BLE001 - re-raised after the cleanup
                first = first or exc
        self._open.clear()
        for handle in self._handles.values():
            if self._mark_terminal(handle, "completed", None) and not handle._mux._events._closed:
                try:
                    await handle._mux.aclose()
                except BaseException as exc:  # noqa: BLE001 - re-raised after the cleanup
                    first = first or exc
        if first is not None:
            raise first

    def fail(self, err: BaseException) -> None:
        status, error = _status_from_exception(err)
        self._open.clear()
        for handle in self._handles.values():
            self._mark_terminal(handle, status, error)
            if not handle._mux._events._closed:
                try:
                    handle._mux.fail(err)
                except Exception:  # noqa: BLE001 - the run's own failure is being reported
                    _logger.warning("Could not fail the subgraph stream at %s", handle.path)

    async def afail(self, err: BaseException) -> None:
        status, error = _status_from_exception(err)
        self._open.clear()
        for handle in self._handles.values():
            self._mark_terminal(handle, status, error)
            if not handle._mux._events._closed:
                try:
                    await handle._mux.afail(err)
                except Exception:  # noqa: BLE001 - the run's own failure is being reported
                    _logger.warning("Could not fail the subgraph stream at %s", handle.path)
