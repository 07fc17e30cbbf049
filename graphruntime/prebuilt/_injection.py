"""Arguments a tool gets from the graph, not the model: state, store and runtime."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

from langchain_core.messages import ToolCall
from langchain_core.tools import BaseTool, InjectedToolArg
from langchain_core.tools.base import get_all_basemodel_annotations

from graphruntime.prebuilt._errors import InjectedStateError, PrebuiltInputError
from graphruntime.prebuilt._runtime import ToolRuntime


class InjectedState(InjectedToolArg):
    """Marks a tool argument the graph state is passed to; the model never sees it.

    ``Annotated[dict, InjectedState]`` gets the whole state,
    ``Annotated[str, InjectedState("foo")]`` only its ``foo`` key.
    """

    def __init__(self, field: str | None = None) -> None:
        self.field = field


class InjectedStore(InjectedToolArg):
    """Marks a tool argument the graph's store is passed to; the model never sees it.

    The graph must be compiled with a store (``compile(store=...)``).
    """


@dataclass(frozen=True)
class InjectedArgs:
    """Which arguments of one tool the graph fills in, found once per tool.

    ``state`` maps an argument to the state key it gets (``None``: the whole state).
    """

    state: dict[str, str | None] = field(default_factory=dict)
    store: str | None = None
    runtime: str | None = None
    all_injected: frozenset[str] = frozenset()
    optional_state: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.state or self.store or self.runtime or self.all_injected)


def _marks(hint: Any, kind: type) -> bool:
    """Whether ``hint`` is, or (inside Annotated/Union/a generic) carries, ``kind``."""
    if isinstance(hint, kind) or (isinstance(hint, type) and issubclass(hint, kind)):
        return True
    origin = get_origin(hint)
    if origin in (Union, UnionType, Annotated):
        return any(_marks(arg, kind) for arg in get_args(hint))
    return origin is not None and isinstance(origin, type) and issubclass(origin, kind)


def _marker(hint: Any, kind: type) -> Any:
    """The ``kind`` marker of an argument's type, ``True`` for a bare one, else None."""
    found = [arg for arg in get_args(hint) if _marks(arg, kind)]
    if len(found) > 1:
        raise PrebuiltInputError(
            f"A tool argument should not be annotated with {kind.__name__} more than once. "
            f"Found: {found}"
        )
    if found:
        return found[0]
    return True if _marks(hint, kind) else None


def _is_injected(hint: Any) -> bool:
    return _marks(hint, InjectedToolArg) or _marks(hint, ToolRuntime)


def injected_args(tool: BaseTool) -> InjectedArgs:
    """Read a tool's injected arguments from its input schema and its function."""
    schema = tool.get_input_schema()
    hints: dict[str, Any] = {}
    func = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    if func is not None:
        hints.update(get_type_hints(func, include_extras=True))
    hints.update(get_all_basemodel_annotations(schema))

    state: dict[str, str | None] = {}
    optional: set[str] = set()
    store = runtime = None
    for name, hint in hints.items():
        if name == "runtime" or _marker(hint, ToolRuntime):
            runtime = name
        if state_mark := _marker(hint, InjectedState):
            key = state_mark.field if isinstance(state_mark, InjectedState) else None
            state[name] = key
            field_info = getattr(schema, "model_fields", {}).get(name)
            if key and field_info is not None and not field_info.is_required():
                optional.add(name)
        if _marker(hint, InjectedStore):
            store = name
    return InjectedArgs(
        state=state,
        store=store,
        runtime=runtime,
        all_injected=frozenset(name for name, hint in hints.items() if _is_injected(hint)),
        optional_state=frozenset(optional),
    )


def _state_values(
    injected: InjectedArgs, state: Any, tool_name: str, messages_key: str
) -> dict[str, Any]:
    if isinstance(state, list):
        wanted = list(injected.state.values())
        if wanted[0] is None or wanted == [messages_key]:
            state = {messages_key: state}
        else:
            keys = ", ".join(key for key in wanted if key)
            hint = f" State should contain fields {keys}." if keys else ""
            raise PrebuiltInputError(
                f"Invalid input to ToolNode. Tool {tool_name} requires graph state dict as "
                f"input.{hint}"
            )
    values: dict[str, Any] = {}
    for arg, key in injected.state.items():
        if not key:
            values[arg] = state
        elif isinstance(state, dict) and key in state:
            values[arg] = state[key]
        elif not isinstance(state, dict) and hasattr(state, key):
            values[arg] = getattr(state, key)
        elif arg not in injected.optional_state:
            raise InjectedStateError(
                f"Tool {tool_name!r} needs state key {key!r} (argument {arg!r}), "
                "which the graph state does not have"
            )
    return values


def inject(
    call: ToolCall, injected: InjectedArgs, runtime: ToolRuntime[Any, Any], messages_key: str
) -> ToolCall:
    """``call`` with its injected arguments filled in from the graph.

    Values the model put under an injected argument's name are dropped first: a
    model must not be able to forge the state, the store or the runtime.
    """
    if not injected:
        return call
    values: dict[str, Any] = {}
    if injected.state:
        values.update(_state_values(injected, runtime.state, call["name"], messages_key))
    if injected.store:
        if runtime.store is None:
            raise PrebuiltInputError(
                "Cannot inject store into tools with InjectedStore annotations - "
                "please compile your graph with a store."
            )
        values[injected.store] = runtime.store
    if injected.runtime:
        values[injected.runtime] = runtime
    args = {k: v for k, v in call["args"].items() if k not in injected.all_injected}
    return {**call, "args": {**args, **values}}
