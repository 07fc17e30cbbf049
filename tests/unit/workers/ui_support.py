"""Helpers of the web inbox's tests: a graph that pauses as told, and a reader of its pages."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from html.parser import HTMLParser
from typing import Any, Literal, TypedDict

import httpx2 as httpx
from starlette.testclient import TestClient

from graphruntime.graph import START, StateGraph
from graphruntime.pregel import Pregel
from graphruntime.types import interrupt
from tests.unit.workers.test_decisions import per_call_type
from workers.testing import InlineCluster
from workers.ui import create_app

TOKEN = "s3cret-token-for-tests"
FLAGS = ("allow_accept", "allow_edit", "allow_respond", "allow_ignore")


class Ask(TypedDict, total=False):
    ask: Any
    minutes: int
    choices: list[str]
    per_call: list[str]
    answer: Any


def review() -> Pregel:
    """Waits with the input's ``ask`` as the interrupt value; keeps the answer as it came.

    ``choices``: the interrupt's response_schema is ``Literal[*choices]``; ``per_call``:
    it is LangChain's per-call decision union of those decisions; ``minutes``: a deadline.
    """

    def node(state: Ask) -> dict[str, Any]:
        if state.get("minutes"):
            deadline = timedelta(minutes=state["minutes"])
            return {"answer": interrupt(state["ask"], deadline=deadline, default="timed out")}
        if state.get("choices"):
            kind: Any = Literal[tuple(state["choices"])]
            return {"answer": interrupt(state["ask"], response_schema=kind)}
        if state.get("per_call"):
            schema = per_call_type(state["per_call"])
            return {"answer": interrupt(state["ask"], response_schema=schema)}
        return {"answer": interrupt(state["ask"])}

    g = StateGraph(Ask)
    g.add_node("review", node)
    g.add_edge(START, "review")
    return g.compile()


def human_interrupt(
    on: Mapping[str, bool] | None = None,
    /,
    *,
    description: str = "Send the **mail**?",
    **flags: bool,
) -> list[Any]:
    flags = {**(on or {}), **flags}
    return [
        {
            "action_request": {"action": "send_email", "args": {"to": "a@b.c", "n": 3}},
            "config": {flag: flags.get(flag, False) for flag in FLAGS},
            "description": description,
        }
    ]


def make_cluster() -> InlineCluster:
    from datetime import UTC, datetime

    c = InlineCluster({"review": review(), "other": review()})
    c.clock.now = datetime.now(UTC)  # deadlines are computed from wall time
    return c


def pause(
    cluster: InlineCluster, thread_id: str, ask: Any, graph: str = "review", **kw: Any
) -> None:
    cluster.run(graph, {"ask": ask, **kw}, {"configurable": {"thread_id": thread_id}})
    cluster.clock.advance(60)


def cfg(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


def state(cluster: InlineCluster, thread_id: str, graph: str = "review") -> Any:
    return cluster.client.get_state(graph, cfg(thread_id))


def answer(cluster: InlineCluster, thread_id: str, graph: str = "review") -> Any:
    """The answer the thread's node got, once its resume ran (None while it waits)."""
    cluster.deliver()
    snapshot = state(cluster, thread_id, graph)
    return snapshot.values.get("answer") if not snapshot.next else None


def local(cluster: InlineCluster, **kwargs: Any) -> TestClient:
    """The inbox as a browser on this machine sees it."""
    return TestClient(
        create_app(cluster.client, **kwargs),
        base_url="http://localhost:8765",
        client=("127.0.0.1", 50000),
    )


def basic(user: str, password: str) -> dict[str, str]:
    raw = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"authorization": f"Basic {raw}"}


@dataclass
class Form:
    id: str | None
    cls: str
    action: str = ""
    inputs: dict[str, str] = field(default_factory=dict)
    checkboxes: list[str] = field(default_factory=list)
    radios: dict[str, list[str]] = field(default_factory=dict)
    textareas: dict[str, str] = field(default_factory=dict)
    buttons: list[str] = field(default_factory=list)
    """Each button's value; a choice button as ``choice=<its JSON>``."""


class Page(HTMLParser):
    """The forms, their buttons (also those outside, by form=) and the inbox rows of a page."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__()
        self.status = response.status_code
        self.html = response.text
        self.forms: list[Form] = []
        self.rows: list[str] = []
        self.outcomes: list[tuple[str, str]] = []
        self._form: Form | None = None
        self._textarea: tuple[Form, str] | None = None
        self._outside: list[tuple[str, str, str]] = []
        self.feed(self.html)
        by_id = {f.id: f for f in self.forms if f.id}
        for form_id, kind, value in self._outside:
            if kind == "textarea":
                by_id[form_id].textareas[value] = ""
            else:
                by_id[form_id].buttons.append(value)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self._form = Form(a.get("id"), a.get("class", ""), a.get("action", ""))
            self.forms.append(self._form)
        elif tag == "tr" and "data-thread" in a and "wait" in a.get("class", ""):
            self.rows.append(a["data-thread"])
        elif tag == "tr" and "data-outcome" in a:
            self.outcomes.append((a["data-thread"], a["data-outcome"]))
        elif tag == "button" and "value" in a:
            value = f"choice={a['value']}" if a.get("name") == "choice" else a["value"]
            if "form" in a:
                self._outside.append((a["form"], "button", value))
            elif self._form is not None:
                self._form.buttons.append(value)
        elif tag == "textarea" and "form" in a:
            self._outside.append((a["form"], "textarea", a["name"]))
        elif self._form is not None and tag == "input":
            if a.get("type") == "hidden":
                self._form.inputs[a["name"]] = a["value"]
            elif a.get("type") == "checkbox" and a.get("name") == "item":
                self._form.checkboxes.append(a["value"])
            elif a.get("type") == "radio":
                self._form.radios.setdefault(a["name"], []).append(a["value"])
        elif self._form is not None and tag == "textarea":
            self._textarea = (self._form, a["name"])
            self._form.textareas[a["name"]] = ""

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            form, name = self._textarea
            form.textareas[name] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._form = None
        elif tag == "textarea":
            self._textarea = None

    def form(self, cls: str) -> Form:
        (found,) = [f for f in self.forms if cls in f.cls.split() or f.id == cls]
        return found

    def row_form(self, thread_id: str, cls: str = "row-form") -> Form:
        (found,) = [
            f
            for f in self.forms
            if cls in f.cls.split() and f'"{thread_id}"' in f.inputs.get("item", "")
        ]
        return found

    def offered(self) -> set[str]:
        """Every answer the page offers: buttons and decision radios."""
        out = {b for f in self.forms for b in f.buttons}
        for f in self.forms:
            for name, values in f.radios.items():
                out |= {f"{name}={v}" for v in values}
        return out - {"claim", "release", "take over"}


def thread_page(tc: TestClient, thread_id: str, graph: str = "review") -> Page:
    response = tc.get("/thread", params={"graph": graph, "thread": thread_id})
    assert response.status_code == 200, response.text
    return Page(response)


def post(tc: TestClient, form: Form, action: str | None = None, **fields: Any) -> Page:
    """Post ``form`` (to its own action) and follow the landing; the page it lands on."""
    data = {**form.inputs, **({"action": action} if action else {}), **fields}
    return Page(tc.post(form.action, data=data))
