"""LangChain messages in graph state (as ``langgraph.graph.message``).

Needs langchain-core: ``pip install 'graphruntime[messages]'``. This is the only
graphruntime module that imports it; ``import graphruntime.graph`` does not.

``add_messages`` merges message lists by id, ``MessagesState`` is the usual
``{"messages": [...]}`` state. The typed serializer stores LangChain's message
classes by default, so such state checkpoints as is. ``push_message`` sends a
message to the ``messages`` stream (and the state) from inside a node;
``MessageGraph`` is LangGraph's deprecated graph whose whole state is one list.
"""

from __future__ import annotations

import inspect
import uuid
import warnings
from collections.abc import Sequence
from functools import partial
from typing import Annotated, Any, Literal, cast

from typing_extensions import TypedDict

from graphruntime._internal._config import get_config
from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_SEND,
    CONFIG_KEY_STREAM,
    NS_SEP,
    PUSH,
)
from graphruntime.errors import InvalidArgumentError, MissingDependencyError
from graphruntime.graph.state import StateGraph
from graphruntime.pregel._message_ids import MESSAGES_REDUCER
from graphruntime.pregel._stream import StreamSink
from graphruntime.warnings import LangGraphDeprecatedSinceV10

try:
    from langchain_core.messages import (
        AnyMessage,
        BaseMessage,
        BaseMessageChunk,
        MessageLikeRepresentation,
        RemoveMessage,
        convert_to_messages,
        convert_to_openai_messages,
        message_chunk_to_message,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError(
        "graphruntime.graph.message needs langchain-core: pip install 'graphruntime[messages]'"
    ) from exc

__all__ = (
    "REMOVE_ALL_MESSAGES",
    "AnyMessage",
    "MessageGraph",
    "Messages",
    "MessagesState",
    "RemoveMessage",
    "add_messages",
    "messages_delta_reducer",
    "push_message",
)

# list[Any]: lists are invariant, and a list[HumanMessage] must pass; every item is
# converted (or rejected) at run time.
Messages = list[Any] | MessageLikeRepresentation
"""One message or a list of them, as messages, dicts, ``(role, content)`` pairs or strings."""

REMOVE_ALL_MESSAGES = "__remove_all__"
"""``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` in an update drops every earlier message."""

_FORMATS = (None, "langchain-openai")


def add_messages(
    left: Messages | None = None,
    right: Messages | None = None,
    *,
    format: Literal["langchain-openai"] | None = None,
) -> Any:
    """Merge ``right`` into ``left`` by message id: the reducer of a messages key.

    Messages without an id get a new UUID; a message whose id is already in
    ``left`` replaces it in place; ``RemoveMessage(id=...)`` deletes that
    message (``ValueError`` if no message has the id), and
    ``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` drops everything before it.
    Message-likes (dicts, ``("user", "hi")``, strings) and chunks are converted
    to messages. Returns a new list.

    Called with only ``format``, returns the reducer with that option:
    ``Annotated[list[AnyMessage], add_messages(format="langchain-openai")]``
    converts the merged messages to OpenAI's content format.
    """
    if format not in _FORMATS:
        raise InvalidArgumentError(
            f"Unrecognized {format=}. Expected one of 'langchain-openai', None."
        )
    if left is None and right is None:
        return partial(_merge, format=format)
    if left is None or right is None:
        missing = "left" if left is None else "right"
        raise InvalidArgumentError(
            f"add_messages needs both 'left' and 'right' (got no {missing!r}); call it "
            "with only format=... to configure the reducer"
        )
    return _merge(left, right, format=format)


def _merge(
    left: Messages,
    right: Messages,
    *,
    format: Literal["langchain-openai"] | None = None,
) -> list[BaseMessage]:
    lefts = _as_messages(left)
    rights = _as_messages(right)
    for m in lefts:
        if m.id is None:
            m.id = str(uuid.uuid4())
    remove_all_at = None
    for i, m in enumerate(rights):
        if m.id is None:
            m.id = str(uuid.uuid4())
        if isinstance(m, RemoveMessage) and m.id == REMOVE_ALL_MESSAGES:
            remove_all_at = i
    if remove_all_at is not None:
        return rights[remove_all_at + 1 :]

    merged = list(lefts)
    position = {m.id: i for i, m in enumerate(merged)}
    removed: set[str] = set()
    for m in rights:
        at = position.get(m.id)
        if at is not None:
            if isinstance(m, RemoveMessage):
                removed.add(cast(str, m.id))
            else:
                removed.discard(cast(str, m.id))
                merged[at] = m
        elif isinstance(m, RemoveMessage):
            raise InvalidArgumentError(
                f"Attempting to delete a message with an ID that doesn't exist ('{m.id}')"
            )
        else:
            position[m.id] = len(merged)
            merged.append(m)
    if removed:
        merged = [m for m in merged if m.id not in removed]
    if format == "langchain-openai":
        return list(convert_to_messages(convert_to_openai_messages(merged)))
    return merged


# The graph builder recognises a reducer by its two required positional
# parameters; add_messages has defaults only so it can also be called as a
# factory, so it advertises the signature of the merge it performs.
add_messages.__signature__ = inspect.signature(_merge)  # type: ignore[attr-defined]


def _as_messages(value: Messages) -> list[BaseMessage]:
    items: list[Any] = value if isinstance(value, list) else [value]
    # A long history is all plain messages: check its few distinct types, not each item.
    if all(
        issubclass(t, BaseMessage) and not issubclass(t, BaseMessageChunk)
        for t in set(map(type, items))
    ):
        return items
    return [
        message_chunk_to_message(m) if isinstance(m, BaseMessageChunk) else m
        for m in convert_to_messages(cast(Sequence[MessageLikeRepresentation], items))
    ]


def messages_delta_reducer(state: list[Any], writes: Sequence[Any]) -> list[AnyMessage]:
    """The batch reducer of a messages ``DeltaChannel`` (LangGraph's experimental
    ``_messages_delta_reducer``)::

        messages: Annotated[list, DeltaChannel(messages_delta_reducer)]

    Folds a whole batch of writes in one pass: a list write adds its items, any
    other write is one message; message-likes (dicts, strings, pairs) become
    messages; an id already present replaces that message, a ``RemoveMessage``
    drops it, others append. Batching-invariant, as a DeltaChannel requires. Unlike
    :func:`add_messages` it does not handle ``REMOVE_ALL_MESSAGES`` nor refuse an
    unknown ``RemoveMessage`` id; ids are given before writes are saved.
    """
    flat: list[Any] = []
    for write in writes:
        if isinstance(write, list):
            flat.extend(write)
        else:
            flat.append(write)
    current: list[Any] = (
        list(state)
        if state and isinstance(state[0], BaseMessage)
        else convert_to_messages(cast(Sequence[MessageLikeRepresentation], state))
    )
    position = {m.id: i for i, m in enumerate(current) if m.id is not None}
    result: list[Any] = list(current)
    for message in convert_to_messages(cast(Sequence[MessageLikeRepresentation], flat)):
        found = position.get(message.id) if message.id is not None else None
        if isinstance(message, RemoveMessage):
            if found is not None:
                result[found] = None
                del position[message.id]
        elif found is not None:
            result[found] = message
        else:
            if message.id is not None:
                position[message.id] = len(result)
            result.append(message)
    return [m for m in result if m is not None]


setattr(messages_delta_reducer, MESSAGES_REDUCER, True)
_messages_delta_reducer = messages_delta_reducer
"""LangGraph's name."""


class MessagesState(TypedDict):
    """State with one key, ``messages``, merged by :func:`add_messages`."""

    messages: Annotated[list[AnyMessage], add_messages]


class MessageGraph(StateGraph):
    """Deprecated: a graph whose whole state is one list of messages (``add_messages``).

    Nodes get the list and return messages to add. Use a ``StateGraph`` with a
    ``messages`` key (``MessagesState``) instead.
    """

    def __init__(self) -> None:
        warnings.warn(
            "MessageGraph is deprecated in LangGraph v1.0.0, to be removed in v2.0.0. Please "
            "use StateGraph with a `messages` key instead.",
            category=LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        super().__init__(Annotated[list[AnyMessage], add_messages])


def _graph_namespace(config: Any) -> tuple[str, ...]:
    """The namespace of the graph the running task belongs to (its own segment dropped).

    A functional-API call (path ``(PUSH, caller_path, index, True)``) runs in its
    caller's graph but nests under the caller's segment: one more is dropped per call.
    """
    ns = config[CONF].get(CONFIG_KEY_CHECKPOINT_NS) or ""
    parts = tuple(ns.split(NS_SEP)) if ns else ()
    path = config.get("metadata", {}).get("langgraph_path", ())
    drop = 1
    while len(path) == 4 and path[0] == PUSH and path[-1] is True:
        drop += 1
        path = path[1]
    return parts[: max(len(parts) - drop, 0)]


def push_message(
    message: MessageLikeRepresentation | BaseMessageChunk,
    *,
    state_key: str | None = "messages",
) -> AnyMessage:
    """Send ``message`` to the ``messages`` stream now, from inside a node.

    It also goes into the state under ``state_key`` (as if the node returned it),
    unless ``state_key`` is None. The message needs an id, so that the stream and
    the state can be matched. Returns the message (converted from a message-like).
    """
    config = get_config()
    converted = convert_to_messages([message])[0]
    if converted.id is None:
        raise InvalidArgumentError("Message ID is required")
    sink = config[CONF].get(CONFIG_KEY_STREAM)
    if isinstance(sink, StreamSink) and "messages" in sink.modes:
        sink.put(_graph_namespace(config), "messages", (converted, config.get("metadata", {})))
    if state_key:
        config[CONF][CONFIG_KEY_SEND]([(state_key, converted)])
    return cast(AnyMessage, converted)
