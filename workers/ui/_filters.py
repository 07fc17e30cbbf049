"""The list's query parameters, checked before they reach the inbox, and value previews.

A bad parameter (not JSON, nested too deep, a NUL or other control character, too
long, an age out of range) is a :class:`FormError`: the page answers 400 with the
reason, never 500.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import QueryParams

from workers.messages import MAX_DEPTH, MAX_NAME, nesting_depth
from workers.ui._actions import FormError

_AGE = re.compile(r"^\s*(\d{1,12}(?:\.\d{1,6})?)\s*([smhd])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_AGE = timedelta(days=36500)
MAX_PARAM = 4096
"""Longest query parameter (a value filter); names and ids are at most MAX_NAME."""
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
PREVIEW_CHARS = 1200
"""How much of an interrupt value the list shows; the thread's page has the whole."""


def parse_age(text: str) -> timedelta:
    match = _AGE.match(text)
    if match is None:
        raise FormError(f"'older than' takes an age like 90s, 15m, 2h or 3d, got {text[:40]!r}.")
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if seconds > MAX_AGE.total_seconds():
        raise FormError(f"'older than' is at most {MAX_AGE.days} days.")
    return timedelta(seconds=seconds)


def _no_nul(value: Any, what: str) -> None:
    """JSON strings must not hold NUL: Postgres text cannot."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and "\x00" in item:
            raise FormError(f"The {what} holds a NUL character.")
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def parse_object(text: str, what: str, example: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except RecursionError as exc:
        raise FormError(f"The {what} nests deeper than {MAX_DEPTH} levels.") from exc
    except ValueError as exc:
        raise FormError(f"The {what} is not valid JSON: {exc}.") from exc
    if not isinstance(value, dict):
        raise FormError(f"The {what} is a JSON object, e.g. {example}.")
    if nesting_depth(value) > MAX_DEPTH:
        raise FormError(f"The {what} nests deeper than {MAX_DEPTH} levels.")
    _no_nul(value, what)
    return value


@dataclass
class Filters:
    graph: str = ""
    node: str = ""
    where: str = ""
    older_than: str = ""
    thread: str = ""
    action: str = ""
    args: str = ""
    cursor: str = ""

    @classmethod
    def of(cls, query: QueryParams | dict[str, str]) -> Filters:
        """The filters of a query string, each checked (a :class:`FormError` if bad)."""
        values = {}
        for name in cls.__dataclass_fields__:
            value = query.get(name, "").strip()
            limit = MAX_PARAM if name in ("where", "args", "cursor") else MAX_NAME
            if len(value) > limit:
                raise FormError(f"The {name} filter is longer than {limit} characters.")
            if _CONTROL.search(value):
                raise FormError(f"The {name} filter holds a control character (NUL or another).")
            values[name] = value
        filters = cls(**values)
        filters.arguments()  # everything parses
        return filters

    @classmethod
    def back(cls, text: str) -> str:
        """A list's query string, as posted with a form: only its filters, checked; ``""``
        for anything else (a post never lands anywhere but on a list of this inbox)."""
        try:
            filters = cls.of(dict(parse_qsl(text[:8192])))
        except FormError:
            return ""
        return filters.query(cursor=filters.cursor)

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of ``GraphClient.inbox`` (but the graph and the limit)."""
        return {
            "where": parse_object(self.where, "value filter", '{"team": "ops"}')
            if self.where
            else None,
            "node": self.node or None,
            "older_than": parse_age(self.older_than) if self.older_than else None,
            "cursor": self.cursor or None,
            "thread": self.thread or None,
            "action": self.action or None,
            "args": parse_object(self.args, "args filter", '{"to": "ops@example.com"}')
            if self.args
            else None,
        }

    def query(self, **changes: str) -> str:
        """This filter as a query string, with ``changes``; empty fields left out."""
        fields = {**asdict(self), "cursor": "", **changes}
        return urlencode({k: v for k, v in fields.items() if v})


def preview(value: Any) -> tuple[str, bool]:
    """The value as the list shows it: pretty JSON, cut at :data:`PREVIEW_CHARS`."""
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    if len(text) <= PREVIEW_CHARS:
        return text, False
    return text[:PREVIEW_CHARS], True
