"""Conditional edges: a router that runs inside its source node's task."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin, get_type_hints

from graphruntime._internal._call import call_async, call_sync, is_async_callable
from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import CONF, CONFIG_KEY_READ, TASKS
from graphruntime.constants import END, START
from graphruntime.errors import InvalidArgumentError, InvalidUpdateError
from graphruntime.graph._schema import first_param_schema
from graphruntime.types import Send


@dataclass(frozen=True)
class BranchSpec:
    """A router and its optional path map (result → node name)."""

    path: Callable[..., Any]
    ends: dict[Hashable, str] | None
    input_schema: Any = None
    """The state type the router's first parameter declares; it reads the state as that."""

    @classmethod
    def from_path(
        cls, path: Callable[..., Any], path_map: dict[Hashable, str] | list[str] | None
    ) -> BranchSpec:
        ends: dict[Hashable, str] | None = None
        if isinstance(path_map, dict):
            ends = dict(path_map)
        elif isinstance(path_map, list):
            ends = {name: name for name in path_map}
        else:
            try:
                func = path if inspect.isfunction(path) or inspect.ismethod(path) else None
                rtn = get_type_hints(func).get("return") if func is not None else None
                if rtn is not None and get_origin(rtn) is Literal:
                    ends = {name: name for name in get_args(rtn)}
            except Exception:  # noqa: BLE001 - unresolvable hints just mean "no path map"
                ends = None
        return cls(path=path, ends=ends, input_schema=first_param_schema(path))

    def writer(
        self, read_keys: Sequence[str] | str, mapper: Callable[[dict[str, Any]], Any] | None
    ) -> Callable[[Any, RunnableConfig], Any]:
        """The node writer that evaluates this router on the task's fresh state.

        An ``async def`` router makes the writer return an awaitable of the writes,
        which the task's driver resolves (awaited under ``ainvoke``).
        """

        def route(output: Any, config: RunnableConfig) -> Any:
            value: Any = config[CONF][CONFIG_KEY_READ](read_keys, True)
            if mapper is not None:
                value = mapper(value)
            elif self.input_schema is None and isinstance(output, dict) and isinstance(value, dict):
                value = {**output, **value}  # the node's extra keys reach its router
            if is_async_callable(self.path):
                return self._aroute(value, config)
            return self.destinations(call_sync(self.path, value, config))

        return route

    async def _aroute(self, value: Any, config: RunnableConfig) -> list[tuple[str, Any]]:
        return self.destinations(await call_async(self.path, value, config))

    def destinations(self, result: Any) -> list[tuple[str, Any]]:
        results = list(result) if isinstance(result, (list, tuple)) else [result]
        if self.ends is not None:
            dests = [r if isinstance(r, Send) else self.ends[r] for r in results]
        else:
            dests = results
        if any(d is None or d == START for d in dests):
            raise InvalidArgumentError("Branch did not return a valid destination")
        if any(isinstance(d, Send) and d.node == END for d in dests):
            raise InvalidUpdateError("Cannot send a packet to the END node")
        writes: list[tuple[str, Any]] = []
        for d in dests:
            if isinstance(d, Send):
                writes.append((TASKS, d))
            elif d != END:
                writes.append((f"branch:to:{d}", None))
        return writes
