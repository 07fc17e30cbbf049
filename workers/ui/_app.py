"""The inbox's pages: the pending waits with filters and claims, a thread's waits and
history, and the posts that answer or claim them.

Server-rendered (Starlette and Jinja); the client's calls are synchronous, so they run
in Starlette's thread pool. A post lands back on the list it came from, with what it
did (sealed in the URL, so a reload shows the same and nobody can forge it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from graphruntime.errors import GraphRuntimeError
from workers.approvals import ResumeOutcome, Wait
from workers.client import GraphClient
from workers.decisions import Request as WaitRequest
from workers.decisions import Review, read_request
from workers.errors import (
    BrokerUnavailableError,
    ConfigurationError,
    NotDispatchedError,
    StoreUnavailableError,
    UnknownGraphError,
    WaitNotPendingError,
)
from workers.ui._actions import Answer, FormError, Item, apply
from workers.ui._filters import Filters, preview
from workers.ui._guard import Csrf, Guard
from workers.ui._identity import Auth
from workers.ui._render import Templates, render_markdown

log = logging.getLogger(__name__)

FLASH_ROWS = 50
"""Most outcomes a post's flash lists one by one (the counts cover them all)."""


@dataclass
class Form:
    """One action form on a page: its submission key and CSRF token."""

    submission: str
    csrf: str


@dataclass
class Row:
    wait: Wait
    item: str
    request: WaitRequest
    form: Form
    claim: Form
    preview: str
    truncated: bool
    descriptions: list[Markup] = field(default_factory=list)


@dataclass
class PendingWait:
    """One pending interrupt of a thread, as its page shows it."""

    item: str
    interrupt_id: str
    node: str
    value: Any
    deadline: Any
    request: WaitRequest
    descriptions: list[Markup]
    forms: dict[str, Form]


def _field(form: FormData, name: str) -> str | None:
    value = form.get(name)
    return value if isinstance(value, str) else None


def _descriptions(request: WaitRequest) -> list[Markup]:
    if isinstance(request, Review):
        return [render_markdown(a.description) for a in request.actions]
    return []


class InboxApp:
    """The routes, over one client."""

    def __init__(
        self,
        client: GraphClient,
        csrf: Csrf,
        *,
        page_size: int,
        title: str,
        claim_minutes: float,
        refresh_seconds: float,
    ) -> None:
        self.client = client
        self.csrf = csrf
        self.page_size = page_size
        self.title = title
        self.claim_minutes = claim_minutes
        self.refresh_seconds = refresh_seconds
        self.templates = Templates()

    def form(self) -> Form:
        submission = self.csrf.new_submission()
        return Form(submission, self.csrf.token_for(submission))

    def page(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        root = str(request.scope.get("root_path", "")).rstrip("/")

        def thread_url(graph: str, thread_id: str, back: str = "") -> str:
            query = {"graph": graph, "thread": thread_id, **({"back": back} if back else {})}
            return f"{root}/thread?{urlencode(query)}"

        # links are root-relative: right behind a proxy that terminates TLS
        context.setdefault("back", "")
        context.update(
            title=self.title,
            actor=request.state.actor,
            root=root,
            thread_url=thread_url,
            claim_minutes=self.claim_minutes,
            refresh_seconds=self.refresh_seconds,
        )
        return self.templates.response(request, name, context, status)

    def error(self, request: Request, status: int, message: str, back: str = "") -> Response:
        return self.page(request, "error.html", status, message=message, back=back)

    # --- pages ---------------------------------------------------------------------------

    def inbox(self, request: Request) -> Response:
        context: dict[str, Any] = {
            "filters": Filters(),
            "graphs": self.client.registry.names(),
            "rows": [],
            "next_query": None,
            "bulk": self.form(),
            "error": None,
            "flash": None,
        }
        try:
            filters = context["filters"] = Filters.of(request.query_params)
            page = self.client.inbox(
                filters.graph or None, limit=self.page_size, **filters.arguments()
            )
        except (FormError, UnknownGraphError, GraphRuntimeError, ValueError) as exc:
            context["error"] = str(exc)
            return self.page(request, "inbox.html", 400, **context)
        except StoreUnavailableError as exc:
            return self.error(request, 503, f"{exc} Reload the page shortly.")
        context["back"] = filters.query(cursor=filters.cursor)
        context["rows"] = [self._row(wait) for wait in page.items]
        context["flash"] = self._flash(request.query_params.get("done", ""))
        if page.cursor is not None:
            context["next_query"] = filters.query(cursor=page.cursor)
        return self.page(request, "inbox.html", **context)

    def _row(self, wait: Wait) -> Row:
        request = read_request(wait.value, wait.response_schema)
        item = Item(wait.graph, wait.thread_id, wait.interrupt_id).key
        text, truncated = preview(wait.value)
        return Row(
            wait, item, request, self.form(), self.form(), text, truncated, _descriptions(request)
        )

    def _flash(self, sealed: str) -> dict[str, Any] | None:
        data = self.csrf.unseal(sealed) if sealed else None
        return data if isinstance(data, dict) else None

    def thread(self, request: Request) -> Response:
        graph = request.query_params.get("graph", "")
        thread_id = request.query_params.get("thread", "")
        back = Filters.back(request.query_params.get("back", ""))
        if not graph or not thread_id:
            return self.error(request, 400, "A thread's page needs ?graph=...&thread=...")
        config: Any = {"configurable": {"thread_id": thread_id}}
        try:
            state = self.client.get_state(graph, config)
            history = self.client.resume_history(graph, config)
            claims = {w.interrupt_id: w for w in self.client.inbox(graph, thread=thread_id).items}
        except UnknownGraphError as exc:
            return self.error(request, 404, str(exc), back)
        except StoreUnavailableError as exc:
            return self.error(request, 503, f"{exc} Reload the page shortly.", back)
        except (GraphRuntimeError, ValueError) as exc:
            return self.error(request, 400, str(exc), back)
        nodes = {i.id: task.name for task in state.tasks for i in task.interrupts}
        waits = []
        for interrupt in state.interrupts:
            parsed = read_request(interrupt.value, interrupt.response_schema)
            waits.append(
                PendingWait(
                    item=Item(graph, thread_id, interrupt.id).key,
                    interrupt_id=interrupt.id,
                    node=nodes.get(interrupt.id, ""),
                    value=interrupt.value,
                    deadline=interrupt.deadline,
                    request=parsed,
                    descriptions=_descriptions(parsed),
                    # one per <form>: a form's key makes its resume idempotent
                    forms={name: self.form() for name in ("quick", "decide", "json", "claim")},
                )
            )
        return self.page(
            request,
            "thread.html",
            graph=graph,
            thread_id=thread_id,
            state=state,
            waits=waits,
            claims=claims,
            history=history,
            values=state.values,
            back=back,
        )

    def _landing(self, request: Request, back: str, flash: dict[str, Any] | None) -> Response:
        """Back to the list the post came from (303: a reload does not post again)."""
        root = str(request.scope.get("root_path", "")).rstrip("/")
        query = dict(parse_qsl(back))
        if flash is not None:
            query["done"] = self.csrf.seal(flash)
        return RedirectResponse(f"{root}/?{urlencode(query)}", status_code=303)

    async def resume(self, request: Request) -> Response:
        form = await request.form()
        back = Filters.back(_field(form, "back") or "")
        submission = _field(form, "submission") or ""
        if not self.csrf.check(submission, _field(form, "csrf") or ""):
            return self.error(
                request,
                403,
                "This form is stale or was not made by this inbox: reload the page and try "
                "again. Nothing was resumed.",
                back,
            )
        fields = {
            key: value
            for key, value in form.multi_items()
            if isinstance(value, str) and key.split(":", 1)[0] in ("decision", "message", "arg")
        }
        choice = _field(form, "choice")
        answer = Answer(
            action=_field(form, "action") or ("choice" if choice is not None else ""),
            json_text=_field(form, "value"),
            choice=choice,
            fields=fields,
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
            )
        except NotDispatchedError as exc:
            return self.error(request, 202, str(exc), back)
        except (StoreUnavailableError, BrokerUnavailableError) as exc:
            return self.error(request, 503, f"{exc} Nothing was resumed; try again shortly.", back)
        except (FormError, GraphRuntimeError, ValueError) as exc:
            message = str(exc)
            if "nothing was resumed" not in message.lower():
                message += " Nothing was resumed."
            return self.error(request, 400, message, back)
        return self._landing(request, back, _outcomes(outcomes))

    async def claim(self, request: Request) -> Response:
        form = await request.form()
        back = Filters.back(_field(form, "back") or "")
        submission = _field(form, "submission") or ""
        if not self.csrf.check(submission, _field(form, "csrf") or ""):
            return self.error(request, 403, "This form is stale: reload the page.", back)
        action = _field(form, "action") or ""
        actor = request.state.actor
        try:
            item = Item.parse(_field(form, "item") or "")
            if action == "release":
                call: Callable[[], Any] = lambda: self.client.release_wait(  # noqa: E731
                    item.graph, item.thread_id, item.interrupt_id, actor=actor
                )
            elif action in ("claim", "take over"):
                call = lambda: self.client.claim_wait(  # noqa: E731
                    item.graph,
                    item.thread_id,
                    item.interrupt_id,
                    actor=actor,
                    minutes=self.claim_minutes,
                    take_over=action == "take over",
                )
            else:
                raise FormError(f"Unknown claim action {action!r}.")
            result = await run_in_threadpool(call)
        except WaitNotPendingError as exc:
            return self.error(request, 409, str(exc), back)
        except StoreUnavailableError as exc:
            return self.error(request, 503, f"{exc} Try again shortly.", back)
        except (FormError, GraphRuntimeError, ValueError) as exc:
            return self.error(request, 400, str(exc), back)
        if action != "release" and not result.taken:
            return self.error(
                request,
                409,
                f"Thread {item.thread_id!r} is claimed by {result.holder!r} until "
                f"{result.until:%H:%M:%S} UTC; take it over to answer it yourself.",
                back,
            )
        return self._landing(request, back, None)


def _outcomes(outcomes: list[ResumeOutcome]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.outcome] = counts.get(o.outcome, 0) + 1
    rows = [[o.thread_id, o.outcome, o.run_id, (o.detail or "")[:300]] for o in outcomes]
    return {"counts": counts, "rows": rows[:FLASH_ROWS], "total": len(outcomes)}


async def _server_error(request: Request, exc: Exception) -> Response:
    """No traceback for the browser: the reason goes to the log."""
    log.exception("inbox request %s %s failed", request.method, request.url.path)
    return Response(
        "The inbox failed on this request; its log has the reason. Nothing more was changed.",
        status_code=500,
        media_type="text/plain",
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return Response(exc.detail, status_code=exc.status_code, media_type="text/plain")


def create_app(
    client: GraphClient,
    *,
    token: str | None = None,
    auth: Auth | None = None,
    page_size: int = 50,
    title: str = "graphrun inbox",
    claim_minutes: float = 15,
    refresh_seconds: float = 15,
) -> Starlette:
    """The inbox as an ASGI app over ``client``.

    Without authentication it serves loopback only (peer and ``Host``); with ``auth``
    (:class:`Auth`: a tokens file naming each approver, a trusted proxy's identity
    header, or a shared ``token``), every request must authenticate and its identity is
    the actor of what it resumes. Bind it beyond loopback only with authentication
    (:func:`serve` checks). ``claim_minutes``: how long an approver's claim on a wait
    lasts; ``refresh_seconds``: how often an open list fetches itself again (0: never).
    """
    if auth is None:
        auth = Auth.of(token=token)
    elif token is not None:
        raise ConfigurationError("give token= or auth=, not both")
    if not 1 <= page_size <= 1000:
        raise ConfigurationError(f"page_size must be between 1 and 1000, got {page_size}")
    if not 0 < claim_minutes <= 24 * 60:
        raise ConfigurationError(
            f"claim_minutes must be more than 0 and at most 1440, got {claim_minutes}"
        )
    if refresh_seconds < 0:
        raise ConfigurationError(
            f"refresh_seconds must be 0 (never) or more, got {refresh_seconds}"
        )
    inbox = InboxApp(
        client,
        Csrf(auth.seed()),
        page_size=page_size,
        title=title,
        claim_minutes=claim_minutes,
        refresh_seconds=refresh_seconds,
    )
    return Starlette(
        routes=[
            Route("/", inbox.inbox, methods=["GET"]),
            Route("/thread", inbox.thread, methods=["GET"]),
            Route("/resume", inbox.resume, methods=["POST"]),
            Route("/claim", inbox.claim, methods=["POST"]),
            Mount("/static", StaticFiles(packages=[("workers.ui", "static")]), name="static"),
        ],
        middleware=[Middleware(Guard, auth=auth)],
        exception_handlers={Exception: _server_error, HTTPException: _http_error},
    )
