"""Rendering: the Jinja environment and its filters (JSON, Markdown, times)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

# Raw HTML in a description is shown as text, never rendered; markdown-it refuses
# javascript:, vbscript:, file: and data: links (but data: images) on its own.
_markdown = MarkdownIt("commonmark", {"html": False}).enable("table")


def render_markdown(text: str | None) -> Markup:
    """``text`` as HTML, safe to embed: any HTML in it is escaped."""
    return Markup(_markdown.render(text or ""))


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def compact(value: Any) -> str:
    """One-line JSON (a form field's value)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def when(moment: datetime | None) -> str:
    if moment is None:
        return ""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def relative(moment: datetime | None, now: datetime | None = None) -> str:
    """``in 5 min`` / ``5 min ago``, in the largest whole unit."""
    if moment is None:
        return ""
    delta = moment - (now or datetime.now(UTC))
    seconds = abs(delta.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            amount = f"{int(seconds // size)} {unit}"
            break
    else:
        amount = f"{int(seconds)} s"
    return f"in {amount}" if delta.total_seconds() > 0 else f"{amount} ago"


def overdue(moment: datetime | None) -> bool:
    return moment is not None and moment <= datetime.now(UTC)


def kind(request: Any) -> str:
    """``review``, ``choices`` or ``question``: which form a wait gets."""
    return type(request).__name__.lower()


class Templates:
    """The inbox's templates, with its filters."""

    def __init__(self) -> None:
        env = Environment(
            loader=PackageLoader("workers.ui", "templates"),
            autoescape=select_autoescape(default=True),
            undefined=StrictUndefined,
        )
        env.filters.update(
            pretty=pretty,
            compact=compact,
            markdown=render_markdown,
            when=when,
            relative=relative,
            overdue=overdue,
            kind=kind,
        )
        self._templates = Jinja2Templates(env=env)

    def response(
        self, request: Request, name: str, context: dict[str, Any], status: int
    ) -> Response:
        return self._templates.TemplateResponse(request, name, context, status_code=status)
