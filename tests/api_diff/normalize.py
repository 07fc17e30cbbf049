"""Answers made comparable: ids numbered by first appearance in each step, times replaced, and the
differences we keep on purpose (each with its reason, also in the README) taken out."""

from __future__ import annotations

import re
from typing import Any

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_HEX = re.compile(r"^[0-9a-f]{32}$")
_RUN_ID = re.compile(r"^(lc_)?run-+[0-9a-f-]{36}(-\d+)?$")
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")

LANGGRAPH_PLATFORM_METADATA = frozenset(
    {
        "langgraph_version",
        "langgraph_api_version",
        "langgraph_plan",
        "langgraph_host",
        "langgraph_api_url",
        "langgraph_auth_user_id",
        "langgraph_request_id",
        "run_attempt",
        "user_id",
        "created_by",
        "thread_id",
        "run_id",
        "graph_id",
        "assistant_id",
    }
)

DIFFERENCES: dict[str, str] = {
    # key path (dotted; * for any key or index) -> why it differs on purpose
    "*.metadata": (
        "checkpoint and run metadata: LangGraph Platform adds its deployment's keys "
        "(langgraph_plan, langgraph_host, request ids...); graphrun serve adds run_id, "
        "graph_id and assistant_id only. Compared without those keys."
    ),
    "*.kwargs": (
        "a run's kwargs echo the request: LangGraph adds its internal config keys "
        "(__request_start_time_ms__, langgraph_auth_user...), graphrun serve the request's "
        "defaults. Not compared."
    ),
    "*.config": (
        "a thread's config: LangGraph fills it from its first run ({'configurable': {}}), "
        "graphrun serve keeps what the thread was created with. Not compared."
    ),
    "*.response_schema": (
        "graphruntime's Interrupt has no response_schema field in the stream JSON of "
        "LangGraph 1.2.22's inmem server when it is null; not compared."
    ),
}


class Ids:
    """Numbers every id by its first appearance, so two runs compare by structure."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def __call__(self, value: str) -> str:
        if value not in self.seen:
            self.seen[value] = f"<id{len(self.seen)}>"
        return self.seen[value]


def normalize(value: Any, ids: Ids, path: str = "") -> Any:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if _ignored(child):
                continue
            if key == "metadata" and isinstance(item, dict):
                item = {k: v for k, v in item.items() if k not in LANGGRAPH_PLATFORM_METADATA}
            out[ids(key) if _UUID.match(str(key)) else key] = normalize(item, ids, child)
        return out
    if isinstance(value, list):
        value = _messages_part(value, ids)
        return [normalize(item, ids, f"{path}.*") for item in value]
    if isinstance(value, str):
        if _UUID.match(value) or _HEX.match(value) or _RUN_ID.match(value):
            return ids(value)
        if _TIME.match(value):
            return "<time>"
    return value


_TASK_NS = re.compile(r"^([^:|]+):([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")


def _messages_part(value: list[Any], ids: Ids) -> list[Any]:
    """A ``messages-tuple`` SSE part, ``[event, [message, metadata]]``, with its metadata
    as a run's (``*.metadata``): without the deployment's keys; its task's namespace
    (``node:<task id>``) numbered like any id."""
    if not (
        len(value) == 2
        and isinstance(value[0], str)
        and value[0].split("|")[0] == "messages"
        and isinstance(value[1], list)
        and len(value[1]) == 2
        and isinstance(value[1][1], dict)
    ):
        return value
    metadata = {}
    for key, item in value[1][1].items():
        if key in LANGGRAPH_PLATFORM_METADATA:
            continue
        found = _TASK_NS.match(item) if isinstance(item, str) else None
        metadata[key] = f"{found.group(1)}:{ids(found.group(2))}" if found else item
    return [value[0], [value[1][0], metadata]]


def _ignored(path: str) -> bool:
    last = path.rsplit(".", 1)[-1]
    return f"*.{last}" in DIFFERENCES and last != "metadata"


def compare(
    ours: list[tuple[str, Any]], reference: list[tuple[str, Any]]
) -> list[tuple[str, Any, Any]]:
    """The steps whose normalized answers differ: (step, ours, reference). Ids are
    numbered per step, so an extra id in one answer does not shift the others."""
    found = []
    for (name, a), (other, b) in zip(ours, reference, strict=True):
        assert name == other, (name, other)
        left, right = normalize(a, Ids(), name), normalize(b, Ids(), name)
        if left != right:
            found.append((name, left, right))
    return found
