"""Stable ids for the LangChain messages written to DeltaChannels.

A DeltaChannel replays its saved writes on every read, and its reducer may not
assign missing message ids; a message saved without an id would come back without
one (or with a new one on every read), and nothing could target it by id
(``RemoveMessage``). So before a write to a DeltaChannel is saved, its messages get
ids, in place: the run applies the very objects it saved.

graphruntime does not depend on langchain-core: this works only when the process
has imported ``langchain_core.messages`` (without it, no message object exists and
message dicts stay dicts). In a channel whose reducer is the messages reducer
(marked :data:`MESSAGES_REDUCER`), every message-like it accepts (a message, a
message dict, a string, a ``(role, content)`` pair; alone, in a list or in an
``Overwrite``) becomes a message with an id. Other DeltaChannels may hold any data:
there message objects get ids, and message dicts outside an ``Overwrite`` get one
too (in a list they become messages). Anything else is left as it is.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Mapping, MutableSequence
from typing import Any

from graphruntime.channels import DeltaChannel
from graphruntime.channels._reduce import overwrite_value
from graphruntime.types import Overwrite

__all__ = ("MESSAGES_REDUCER", "ensure_message_ids")

MESSAGES_REDUCER = "__graphruntime_messages_reducer__"
"""Attribute set (True) on a reducer that takes message-likes, e.g. ``_messages_delta_reducer``."""

_ROLES = frozenset({"user", "human", "assistant", "ai", "tool", "system", "function"})
_TYPES = frozenset({"human", "ai", "tool", "system", "function", "remove"})


def ensure_message_ids(specs: Mapping[str, Any], writes: MutableSequence[tuple[str, Any]]) -> None:
    """Give the messages in ``writes`` to DeltaChannels ids; a changed write is replaced."""
    lc = sys.modules.get("langchain_core.messages")
    if lc is None:
        return
    ids = _Ids(lc)
    for i, (channel, value) in enumerate(writes):
        spec = specs.get(channel)
        if not isinstance(spec, DeltaChannel):
            continue
        if getattr(spec.reducer, MESSAGES_REDUCER, False):
            new = ids.for_messages_channel(value)
        else:
            new = ids.for_other_channel(value)
        if new is not value:
            writes[i] = (channel, new)


def _is_message_dict(item: Any) -> bool:
    return isinstance(item, dict) and (item.get("role") in _ROLES or item.get("type") in _TYPES)


class _Ids:
    def __init__(self, lc: Any) -> None:
        self.base: type = lc.BaseMessage
        self.convert: Callable[[list[Any]], list[Any]] = lc.convert_to_messages

    def stamp(self, item: Any) -> None:
        if isinstance(item, self.base) and not getattr(item, "id", None):
            item.id = str(uuid.uuid4())  # type: ignore[attr-defined]

    def message(self, item: Any, *, strict: bool = False) -> Any:
        """``item`` as a message with an id, or as it is if it is not message-like."""
        if isinstance(item, self.base):
            self.stamp(item)
            return item
        try:
            message = self.convert([item])[0]
        except Exception:
            if strict:
                raise
            return item
        self.stamp(message)
        return message

    def for_messages_channel(self, value: Any) -> Any:
        is_overwrite, replacement = overwrite_value(value)
        if is_overwrite:
            if isinstance(replacement, (list, tuple)):
                items = _mapped(replacement, self.message)
                return value if items is replacement else Overwrite(items)
            return value
        if isinstance(value, list):
            return _mapped(value, self.list_item)
        return self.message(value)

    def for_other_channel(self, value: Any) -> Any:
        is_overwrite, replacement = overwrite_value(value)
        if is_overwrite:
            if isinstance(replacement, (list, tuple)):
                for item in replacement:
                    self.stamp(item)
            return value
        if isinstance(value, list):
            return _mapped(value, self.other_list_item)
        if _is_message_dict(value) and not value.get("id"):
            return {**value, "id": str(uuid.uuid4())}
        self.stamp(value)
        return value

    def list_item(self, item: Any) -> Any:
        return self.message(item, strict=_is_message_dict(item))

    def other_list_item(self, item: Any) -> Any:
        if _is_message_dict(item):
            return self.message(item, strict=True)
        self.stamp(item)
        return item


def _mapped(items: Any, fn: Callable[[Any], Any]) -> Any:
    """``items`` with ``fn`` applied, the same object if nothing changed."""
    mapped = [fn(item) for item in items]
    if all(new is old for new, old in zip(mapped, items, strict=True)):
        return items
    return mapped if isinstance(items, list) else tuple(mapped)
