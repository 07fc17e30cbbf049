"""The inbox's pages: the pending waits with filters, a thread's waits and history, resumes.

Server-rendered (Starlette and Jinja); the client's calls are synchronous, so they run
in Starlette's thread pool.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, QueryParams
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from graphruntime.errors import GraphRuntimeError
from workers.approvals import Wait
from workers.client import GraphClient
from workers.errors import (
    BrokerUnavailableError,
    NotDispatchedError,
    StoreUnavailableError,
    UnknownGraphError,
)
from workers.ui._actions import Answer, FormError, Item, apply
from workers.ui._agent_inbox import HumanRequest, parse_request
from workers.ui._guard import Csrf, Guard, check_token

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

# Raw HTML in a description is shown as text, never rendered; markdown-it refuses
# javascript:, vbscript:, file: and data: links (but data: images) on its own.
_markdown = MarkdownIt("commonmark", {"html": False}).enable("table")


def render_markdown(text: str | None) -> Markup:
    """``text`` as HTML, safe to embed: any HTML in it is escaped."""
    return Markup(_markdown.render(text or ""))


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


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


def parse_age(text: str) -> timedelta:
    match = _AGE.match(text)
    if match is None:
        raise FormError(f"'older than' takes an age like 90s, 15m, 2h or 3d, got {text!r}.")
    return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])


def parse_where(text: str) -> dict[str, Any]:
    try:
        where = json.loads(text)
    except ValueError as exc:
        raise FormError(f"The value filter is not valid JSON: {exc}.") from exc
    if not isinstance(where, dict):
        raise FormError(
            'The value filter is a JSON object the value contains, e.g. {"team": "ops"}.'
        )
    return where


@dataclass
class Filters:
    graph: str = ""
    node: str = ""
    where: str = ""
    older_than: str = ""
    cursor: str = ""

    @classmethod
    def of(cls, query: QueryParams) -> Filters:
        return cls(**{name: query.get(name, "").strip() for name in cls.__dataclass_fields__})

    def query(self, **changes: str) -> str:
        """This filter as a query string, with ``changes``; empty fields left out."""
        fields = {**self.__dict__, **changes}
        return urlencode({k: v for k, v in fields.items() if v})


@dataclass
class Form:
    """One action form on a page: its submission key and CSRF token."""

    submission: str
    csrf: str


@dataclass
class Row:
    wait: Wait
    item: str
    request: HumanRequest | None
    form: Form
    description: Markup = field(default_factory=Markup)


@dataclass
class PendingWait:
    """One pending interrupt of a thread, as its page shows it."""

    item: str
    interrupt_id: str
    node: str
    value: Any
    deadline: datetime | None
    request: HumanRequest | None
    description: Markup
    forms: dict[str, Form]


def _field(form: FormData, name: str) -> str | None:
    value = form.get(name)
    return value if isinstance(value, str) else None


class InboxApp:
    """The routes, over one client."""

    def __init__(self, client: GraphClient, csrf: Csrf, *, page_size: int, title: str) -> None:
        self.client = client
        self.csrf = csrf
        self.page_size = page_size
        self.title = title
        env = Environment(
            loader=PackageLoader("workers.ui", "templates"),
            autoescape=select_autoescape(default=True),
            undefined=StrictUndefined,
        )
        env.filters.update(
            pretty=pretty,
            markdown=render_markdown,
            when=when,
            relative=relative,
            overdue=overdue,
        )
        self.templates = Jinja2Templates(env=env)

    def form(self) -> Form:
        submission = self.csrf.new_submission()
        return Form(submission, self.csrf.token_for(submission))

    def page(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        root = str(request.scope.get("root_path", "")).rstrip("/")

        def thread_url(graph: str, thread_id: str) -> str:
            return f"{root}/thread?{urlencode({'graph': graph, 'thread': thread_id})}"

        # links are root-relative: right behind a proxy that terminates TLS
        context.update(
            title=self.title, actor=request.state.actor, root=root, thread_url=thread_url
        )
        return self.templates.TemplateResponse(request, name, context, status_code=status)

    def error(self, request: Request, status: int, message: str) -> Response:
        return self.page(request, "error.html", status, message=message)

    # --- pages ---------------------------------------------------------------------------

    def inbox(self, request: Request) -> Response:
        filters = Filters.of(request.query_params)
        context: dict[str, Any] = {
            "filters": filters,
            "graphs": self.client.registry.names(),
            "rows": [],
            "next_query": None,
            "bulk": self.form(),
            "error": None,
        }
        try:
            page = self.client.inbox(
                filters.graph or None,
                where=parse_where(filters.where) if filters.where else None,
                node=filters.node or None,
                older_than=parse_age(filters.older_than) if filters.older_than else None,
                limit=self.page_size,
                cursor=filters.cursor or None,
            )
        except (FormError, UnknownGraphError, ValueError) as exc:
            context["error"] = str(exc)
            return self.page(request, "inbox.html", 400, **context)
        except StoreUnavailableError as exc:
            return self.error(request, 503, f"{exc} Reload the page shortly.")
        context["rows"] = [self._row(wait) for wait in page.items]
        if page.cursor is not None:
            context["next_query"] = filters.query(cursor=page.cursor)
        return self.page(request, "inbox.html", **context)

    def _row(self, wait: Wait) -> Row:
        request = parse_request(wait.value)
        item = Item(wait.graph, wait.thread_id, wait.interrupt_id).key
        description = render_markdown(request.description) if request else Markup()
        return Row(wait, item, request, self.form(), description)

    def thread(self, request: Request) -> Response:
        graph = request.query_params.get("graph", "")
        thread_id = request.query_params.get("thread", "")
        if not graph or not thread_id:
            return self.error(request, 400, "A thread's page needs ?graph=...&thread=...")
        config: Any = {"configurable": {"thread_id": thread_id}}
        try:
            state = self.client.get_state(graph, config)
            history = self.client.resume_history(graph, config)
        except UnknownGraphError as exc:
            return self.error(request, 404, str(exc))
        except StoreUnavailableError as exc:
            return self.error(request, 503, f"{exc} Reload the page shortly.")
        nodes = {i.id: task.name for task in state.tasks for i in task.interrupts}
        waits = []
        for interrupt in state.interrupts:
            parsed = parse_request(interrupt.value)
            waits.append(
                PendingWait(
                    item=Item(graph, thread_id, interrupt.id).key,
                    interrupt_id=interrupt.id,
                    node=nodes.get(interrupt.id, ""),
                    value=interrupt.value,
                    deadline=interrupt.deadline,
                    request=parsed,
                    description=render_markdown(parsed.description) if parsed else Markup(),
                    forms={
                        name: self.form()
                        for name in ("quick", "edit", "response", "json")  # one per <form>
                    },
                )
            )
        return self.page(
            request,
            "thread.html",
            graph=graph,
            thread_id=thread_id,
            state=state,
            waits=waits,
            history=history,
            values=pretty(state.values),
        )

    async def resume(self, request: Request) -> Response:
        form = await request.form()
        submission = _field(form, "submission") or ""
        if not self.csrf.check(submission, _field(form, "csrf") or ""):
            return self.error(
                request,
                403,
                "This form is stale or was not made by this inbox: reload the page and try "
                "again. Nothing was resumed.",
            )
        edits = {
            key.removeprefix("arg:"): value
            for key, value in form.multi_items()
            if key.startswith("arg:") and isinstance(value, str)
        }
        answer = Answer(
            action=_field(form, "action") or "",
            json_text=_field(form, "value"),
            edits=edits or None,
            text=_field(form, "text"),
        )
        note = (_field(form, "note") or "").strip() or None
        try:
            items = [Item.parse(raw) for raw in form.getlist("item") if isinstance(raw, str)]
            outcomes = await run_in_threadpool(
                apply,
                self.client,
                items,
                answer,
                submission=submission,
                actor=request.state.actor,
                note=note,
                bulk=_field(form, "bulk") == "1",
            )
        except NotDispatchedError as exc:
            return self.error(request, 202, str(exc))
        except (StoreUnavailableError, BrokerUnavailableError) as exc:
            return self.error(request, 503, f"{exc} Nothing was resumed; try again shortly.")
        except (FormError, GraphRuntimeError, ValueError) as exc:
            message = str(exc)
            if "nothing was resumed" not in message.lower():
                message += " Nothing was resumed."
            return self.error(request, 400, message)
        threads = list(dict.fromkeys((i.graph, i.thread_id) for i in items))
        return self.page(request, "outcome.html", outcomes=outcomes, threads=threads)


def create_app(
    client: GraphClient,
    *,
    token: str | None = None,
    page_size: int = 50,
    title: str = "graphrun inbox",
) -> Starlette:
    """The inbox as an ASGI app over ``client``.

    Without ``token`` it serves loopback only (peer and ``Host``); with one, every
    request must carry it (basic auth, the user name being the actor, or a bearer
    token). Bind it beyond loopback only with a token (:func:`serve` checks).
    """
    token = check_token(token)
    if not 1 <= page_size <= 1000:
        raise ValueError(f"page_size must be between 1 and 1000, got {page_size}")
    inbox = InboxApp(client, Csrf(token), page_size=page_size, title=title)
    return Starlette(
        routes=[
            Route("/", inbox.inbox, methods=["GET"]),
            Route("/thread", inbox.thread, methods=["GET"]),
            Route("/resume", inbox.resume, methods=["POST"]),
            Mount("/static", StaticFiles(packages=[("workers.ui", "static")]), name="static"),
        ],
        middleware=[Middleware(Guard, token=token)],
    )
