"""LangGraph's serializer name (``langgraph.checkpoint.serde.jsonplus``), for ported code.

``JsonPlusSerializer`` is graphruntime's :class:`~graphruntime.checkpoint.serde.JsonSerializer`
built from LangGraph's constructor arguments: code that makes one (a custom saver's
``serde=``, a subclass overriding ``dumps_typed``) keeps working, and stores what
graphruntime stores (typed JSON only).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from graphruntime.checkpoint.serde import JsonSerializer
from graphruntime.errors import NotSupportedError

__all__ = ("JsonPlusSerializer",)

Allowlist = Iterable[str | tuple[str, ...]] | Literal[True] | None


class JsonPlusSerializer(JsonSerializer):
    """:class:`JsonSerializer` taking LangGraph's ``JsonPlusSerializer`` arguments.

    Args:
        pickle_fallback: LangGraph's name; True is refused (stored data is JSON only).
        allowed_json_modules, allowed_msgpack_modules: LangGraph's allowlists, entries
            ``(module, ..., ClassName)`` or module names. Their modules become
            ``allowed_modules``; ``True`` and ``None`` keep the default (classes this
            process stored load too), since stored data never picks what is imported.
    """

    def __init__(
        self,
        *,
        pickle_fallback: bool = False,
        allowed_json_modules: Allowlist = None,
        allowed_msgpack_modules: Allowlist = None,
        **kwargs: Any,
    ) -> None:
        if pickle_fallback:
            raise NotSupportedError(
                "graphruntime never unpickles stored data; pickle_fallback=True is not supported"
            )
        modules = [*_modules(allowed_json_modules), *_modules(allowed_msgpack_modules)]
        super().__init__(allowed_modules=list(dict.fromkeys(modules)), **kwargs)


def _modules(allowlist: Allowlist) -> list[str]:
    if allowlist is None or allowlist is True:
        return []
    out: list[str] = []
    for entry in allowlist:
        if isinstance(entry, str):
            out.append(entry)
        elif len(entry) > 1:
            out.append(".".join(entry[:-1]))  # (module parts..., ClassName)
        elif entry:
            out.append(entry[0])
    return out
