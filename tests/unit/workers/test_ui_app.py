"""The web inbox over an in-memory cluster: pages, filters, form posts, auth and CSRF."""

from __future__ import annotations

import base64
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, TypedDict

import httpx2 as httpx
import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from graphruntime.graph import START, StateGraph
from graphruntime.pregel import Pregel
from graphruntime.types import interrupt
from workers.errors import ConfigurationError
from workers.testing import InlineCluster
from workers.ui import check_bind, create_app

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "s3cret-token-for-tests"
FLAGS = ("allow_accept", "allow_edit", "allow_respond", "allow_ignore")


class Review(TypedDict, total=False):
    ask: Any
    minutes: int
    answer: Any


def review() -> Pregel:
    """Waits with the input's ``ask`` as the interrupt value; keeps the answer as it came."""

    def node(state: Review) -> dict[str, Any]:
        if state.get("minutes"):
            deadline = timedelta(minutes=state["minutes"])
            return {"answer": interrupt(state["ask"], deadline=deadline, default="timed out")}
        return {"answer": interrupt(state["ask"])}

    g = StateGraph(Review)
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


@pytest.fixture
def cluster() -> InlineCluster:
    c = InlineCluster({"review": review(), "other": review()})
    c.clock.now = datetime.now(UTC)  # deadlines are computed from wall time
    return c


def pause(
    cluster: InlineCluster, thread_id: str, ask: Any, graph: str = "review", **kw: Any
) -> None:
    cluster.run(graph, {"ask": ask, **kw}, {"configurable": {"thread_id": thread_id}})
    cluster.clock.advance(60)


def state(cluster: InlineCluster, thread_id: str, graph: str = "review") -> Any:
    return cluster.client.get_state(graph, {"configurable": {"thread_id": thread_id}})


def local(cluster: InlineCluster, **kwargs: Any) -> TestClient:
    """The inbox as a browser on this machine sees it."""
    return TestClient(
        create_app(cluster.client, **kwargs),
        base_url="http://localhost:8765",
        client=("127.0.0.1", 50000),
    )


# --- reading the pages -------------------------------------------------------------------


@dataclass
class Form:
    id: str | None
    cls: str
    inputs: dict[str, str] = field(default_factory=dict)
    checkboxes: list[str] = field(default_factory=list)
    textareas: dict[str, str] = field(default_factory=dict)
    buttons: list[str] = field(default_factory=list)


class Page(HTMLParser):
    """The forms, their buttons (also those outside, by form=) and the inbox rows of a page."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__()
        self.html = response.text
        self.forms: list[Form] = []
        self.rows: list[str] = []
        self._form: Form | None = None
        self._textarea: str | None = None
        self._outside: list[tuple[str, str]] = []
        self.feed(self.html)
        by_id = {f.id: f for f in self.forms if f.id}
        for form_id, value in self._outside:
            by_id[form_id].buttons.append(value)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self._form = Form(a.get("id"), a.get("class", ""))
            self.forms.append(self._form)
        elif tag == "tr" and "data-thread" in a:
            self.rows.append(a["data-thread"])
        elif tag == "button" and "value" in a:
            if "form" in a:
                self._outside.append((a["form"], a["value"]))
            elif self._form is not None:
                self._form.buttons.append(a["value"])
        elif self._form is not None and tag == "input":
            if a.get("type") == "hidden":
                self._form.inputs[a["name"]] = a["value"]
            elif a.get("type") == "checkbox" and a.get("name") == "item":
                self._form.checkboxes.append(a["value"])
        elif self._form is not None and tag == "textarea":
            self._textarea = a["name"]
            self._form.textareas[a["name"]] = ""

    def handle_data(self, data: str) -> None:
        if self._form is not None and self._textarea is not None:
            self._form.textareas[self._textarea] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._form = None
        elif tag == "textarea":
            self._textarea = None

    def form(self, cls: str) -> Form:
        (found,) = [f for f in self.forms if cls in f.cls.split() or f.id == cls]
        return found

    def row_form(self, thread_id: str) -> Form:
        (found,) = [
            f
            for f in self.forms
            if "row-form" in f.cls.split() and f'"{thread_id}"' in f.inputs["item"]
        ]
        return found


def thread_page(tc: TestClient, thread_id: str, graph: str = "review") -> Page:
    response = tc.get("/thread", params={"graph": graph, "thread": thread_id})
    assert response.status_code == 200, response.text
    return Page(response)


def post(tc: TestClient, form: Form, action: str, **fields: Any) -> httpx.Response:
    return tc.post("/resume", data={**form.inputs, "action": action, **fields})


# --- the list ----------------------------------------------------------------------------


def test_the_inbox_lists_every_pending_wait_with_its_value(cluster: InlineCluster) -> None:
    pause(cluster, "t1", {"team": "ops", "amount": 120})
    pause(cluster, "t2", human_interrupt(allow_accept=True))
    pause(cluster, "t3", "just a question", graph="other")
    response = local(cluster).get("/")
    assert response.status_code == 200
    page = Page(response)
    assert page.rows == ["t1", "t2", "t3"]
    assert "&#34;amount&#34;: 120" in page.html  # the JSON value, escaped
    assert "send_email" in page.html
    assert "Send the <strong>mail</strong>?" in page.html  # the description's Markdown
    assert response.headers["content-security-policy"].startswith("default-src 'none'")


def test_the_inbox_filters_on_graph_value_node_and_age(cluster: InlineCluster) -> None:
    pause(cluster, "t1", {"team": "ops"})
    pause(cluster, "t2", {"team": "sales"})
    pause(cluster, "t3", {"team": "ops"}, graph="other")
    tc = local(cluster)

    def rows(**params: str) -> list[str]:
        response = tc.get("/", params=params)
        assert response.status_code == 200, response.text
        return Page(response).rows

    assert rows(graph="review") == ["t1", "t2"]
    assert rows(where='{"team": "ops"}') == ["t1", "t3"]
    assert rows(graph="other", where='{"team": "ops"}') == ["t3"]
    assert rows(node="review") == ["t1", "t2", "t3"]
    assert rows(node="elsewhere") == []
    assert rows(older_than="90s") == ["t1", "t2"]  # paused 180 s, 120 s and 60 s ago
    assert rows(older_than="1d") == []


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"where": "{team"}, "not valid JSON"),
        ({"where": "[1]"}, "JSON object"),
        ({"older_than": "soon"}, "like 90s, 15m"),
        ({"graph": "nope"}, "nope"),
        ({"cursor": "garbage"}, "cursor"),
    ],
)
def test_a_bad_filter_is_a_clear_error(
    cluster: InlineCluster, params: dict[str, str], message: str
) -> None:
    pause(cluster, "t1", "q")
    response = local(cluster).get("/", params=params)
    assert response.status_code == 400
    assert message in response.text
    assert Page(response).rows == []


def test_the_inbox_pages_with_its_cursor(cluster: InlineCluster) -> None:
    for i in range(5):
        pause(cluster, f"t{i}", "q")
    tc = local(cluster, page_size=2)
    seen: list[str] = []
    url = "/"
    for _ in range(5):
        page = Page(tc.get(url))
        seen += page.rows
        if 'id="next"' not in page.html:
            break
        url = page.html.split('id="next" href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    assert seen == [f"t{i}" for i in range(5)]


def test_deadlines_are_shown(cluster: InlineCluster) -> None:
    pause(cluster, "late", "q", minutes=30)
    pause(cluster, "open", "q")
    html = local(cluster).get("/").text
    assert "(in 29 min)" in html
    assert '<span class="deadline none">none</span>' in html
    assert "(in 29 min)" in thread_page(local(cluster), "late").html


# --- Agent Inbox requests ----------------------------------------------------------------


@pytest.mark.parametrize(
    "flags",
    [
        {"allow_accept": True},
        {"allow_ignore": True, "allow_respond": True},
        {"allow_edit": True},
        dict.fromkeys(FLAGS, True),
        {},
    ],
)
def test_an_agent_inbox_request_offers_exactly_its_allowed_actions(
    cluster: InlineCluster, flags: dict[str, bool]
) -> None:
    pause(cluster, "t1", human_interrupt(flags))
    tc = local(cluster)
    allowed = {
        a
        for a, f in zip(("accept", "edit", "response", "ignore"), FLAGS, strict=True)
        if flags.get(f)
    }
    row = Page(tc.get("/")).row_form("t1")
    assert set(row.buttons) == allowed & {"accept", "ignore"}
    page = thread_page(tc, "t1")
    offered = {b for f in page.forms for b in f.buttons}
    assert offered == allowed | {"json"}  # custom JSON always
    if "edit" in allowed:
        assert page.form("edit").textareas == {"arg:to": "a@b.c", "arg:n": "3"}


def test_each_agent_inbox_action_resumes_with_its_human_response(cluster: InlineCluster) -> None:
    everything = dict.fromkeys(FLAGS, True)
    for name in ("accept", "edit", "response", "ignore"):
        pause(cluster, name, human_interrupt(everything))
    tc = local(cluster)
    quick = thread_page(tc, "accept").form("quick")
    assert post(tc, quick, "accept").status_code == 200
    assert post(tc, thread_page(tc, "ignore").form("quick"), "ignore").status_code == 200
    edit = thread_page(tc, "edit").form("edit")
    assert post(tc, edit, "edit", **{"arg:to": "x@y.z", "arg:n": "4"}).status_code == 200
    response = thread_page(tc, "response").form("response")
    assert post(tc, response, "response", text="Not this week.").status_code == 200
    cluster.deliver()
    request = {"action": "send_email", "args": {"to": "a@b.c", "n": 3}}
    assert state(cluster, "accept").values["answer"] == [{"type": "accept", "args": request}]
    assert state(cluster, "edit").values["answer"] == [
        {"type": "edit", "args": {"action": "send_email", "args": {"to": "x@y.z", "n": "4"}}}
    ]
    assert state(cluster, "response").values["answer"] == [
        {"type": "response", "args": "Not this week."}
    ]
    assert state(cluster, "ignore").values["answer"] == [{"type": "ignore", "args": None}]
    assert Page(tc.get("/")).rows == []


def test_an_action_the_request_does_not_allow_is_refused_and_changes_nothing(
    cluster: InlineCluster,
) -> None:
    pause(cluster, "t1", human_interrupt(allow_respond=True))
    tc = local(cluster)
    form = thread_page(tc, "t1").form("response")
    response = post(tc, form, "accept")
    assert response.status_code == 400
    assert "does not allow 'accept'" in unescape(response.text)
    cluster.deliver()
    assert state(cluster, "t1").next == ("review",)
    assert cluster.client.resume_history("review", {"configurable": {"thread_id": "t1"}}) == []


def test_the_description_is_markdown_with_html_escaped(cluster: InlineCluster) -> None:
    text = "# Title\n<script>alert(1)</script> [x](javascript:alert(1)) **ok**"
    pause(cluster, "t1", human_interrupt(description=text, allow_accept=True))
    for html in (local(cluster).get("/").text, thread_page(local(cluster), "t1").html):
        assert "<script>alert" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert 'href="javascript:' not in html
        assert "<strong>ok</strong>" in html


# --- plain values, bulk, idempotence -----------------------------------------------------


def test_approve_resumes_once_however_often_the_form_is_sent(cluster: InlineCluster) -> None:
    pause(cluster, "t1", {"amount": 120})
    tc = local(cluster)
    form = Page(tc.get("/")).row_form("t1")
    first = post(tc, form, "approve", note="fine")
    again = post(tc, form, "approve", note="fine")
    assert 'data-outcome="applied"' in first.text
    assert 'data-outcome="already applied"' in again.text
    cluster.deliver()
    assert post(tc, form, "approve").status_code == 200  # after the run: nothing more
    cluster.deliver()
    assert state(cluster, "t1").values["answer"] is True
    (record,) = cluster.client.resume_history("review", {"configurable": {"thread_id": "t1"}})
    assert (record.actor, record.note, record.status) == ("ui", "fine", "success")
    assert Page(tc.get("/")).rows == []


def test_reject_and_custom_json(cluster: InlineCluster) -> None:
    pause(cluster, "no", "deploy?")
    pause(cluster, "custom", "deploy?")
    tc = local(cluster)
    assert post(tc, thread_page(tc, "no").form("quick"), "reject").status_code == 200
    json_form = thread_page(tc, "custom").form("json")
    assert post(tc, json_form, "json", value='{"approved": true, "by": "ops"}').status_code == 200
    cluster.deliver()
    assert state(cluster, "no").values["answer"] is False
    assert state(cluster, "custom").values["answer"] == {"approved": True, "by": "ops"}


def test_bulk_approve_answers_each_selected_wait_in_its_own_shape(cluster: InlineCluster) -> None:
    pause(cluster, "plain", "ok?")
    pause(cluster, "inbox", human_interrupt(allow_accept=True))
    pause(cluster, "elsewhere", "ok?", graph="other")
    pause(cluster, "left", "ok?")
    tc = local(cluster)
    bulk = Page(tc.get("/")).form("bulk")
    chosen = [c for c in bulk.checkboxes if '"left"' not in c]
    assert len(chosen) == 3
    response = post(tc, bulk, "approve", item=chosen)
    assert response.text.count('data-outcome="applied"') == 3
    assert post(tc, bulk, "approve", item=chosen).text.count('data-outcome="already applied"') == 3
    cluster.deliver()
    assert state(cluster, "plain").values["answer"] is True
    assert state(cluster, "elsewhere", graph="other").values["answer"] is True
    assert state(cluster, "inbox").values["answer"][0]["type"] == "accept"
    assert Page(tc.get("/")).rows == ["left"]


def test_a_bulk_action_one_selected_wait_refuses_resumes_none(cluster: InlineCluster) -> None:
    pause(cluster, "plain", "ok?")
    pause(cluster, "edit-only", human_interrupt(allow_edit=True))
    tc = local(cluster)
    bulk = Page(tc.get("/")).form("bulk")
    sent = len(cluster.broker.sent)
    response = post(tc, bulk, "approve", item=bulk.checkboxes)
    assert response.status_code == 400
    assert "does not allow 'accept'" in unescape(response.text)
    assert len(cluster.broker.sent) == sent
    cluster.deliver()
    assert Page(tc.get("/")).rows == ["plain", "edit-only"]
    assert "answer" not in state(cluster, "plain").values


@pytest.mark.parametrize(
    ("value", "message"),
    [("{oops", "not valid JSON"), ("", "Type a resume value"), ("null", "null resumes nothing")],
)
def test_bad_json_is_a_clear_error_and_changes_nothing(
    cluster: InlineCluster, value: str, message: str
) -> None:
    pause(cluster, "t1", "deploy?")
    tc = local(cluster)
    sent = len(cluster.broker.sent)
    response = post(tc, thread_page(tc, "t1").form("json"), "json", value=value)
    assert response.status_code == 400
    assert message in response.text
    assert "Nothing was resumed" in response.text
    assert len(cluster.broker.sent) == sent
    assert Page(tc.get("/")).rows == ["t1"]
    assert cluster.client.resume_history("review", {"configurable": {"thread_id": "t1"}}) == []


def test_an_answered_wait_is_reported_not_pending(cluster: InlineCluster) -> None:
    pause(cluster, "t1", "deploy?")
    tc = local(cluster)
    stale = thread_page(tc, "t1").form("quick")
    post(tc, thread_page(tc, "t1").form("quick"), "approve")
    cluster.deliver()
    response = post(tc, stale, "reject")
    assert 'data-outcome="not pending"' in response.text
    cluster.deliver()
    assert state(cluster, "t1").values["answer"] is True


def test_the_thread_page_shows_its_history(cluster: InlineCluster) -> None:
    pause(cluster, "t1", "deploy?")
    tc = local(cluster)
    assert 'id="no-history"' in thread_page(tc, "t1").html
    post(tc, thread_page(tc, "t1").form("quick"), "approve", note="ship it")
    cluster.deliver()
    page = thread_page(tc, "t1")
    assert 'id="no-waits"' in page.html
    assert 'data-status="success"' in page.html
    assert "ship it" in page.html
    assert tc.get("/thread", params={"graph": "nope", "thread": "t1"}).status_code == 404


# --- who may post what -------------------------------------------------------------------


def test_a_form_without_its_csrf_token_or_from_another_site_is_refused(
    cluster: InlineCluster,
) -> None:
    pause(cluster, "t1", "deploy?")
    tc = local(cluster)
    form = thread_page(tc, "t1").form("quick")
    forged = Form(form.id, form.cls, {**form.inputs, "csrf": "0" * 64})
    assert post(tc, forged, "approve").status_code == 403
    other = Form(form.id, form.cls, {**form.inputs, "submission": "f" * 32})
    assert post(tc, other, "approve").status_code == 403  # a token is for its own form
    cross = tc.post(
        "/resume",
        data={**form.inputs, "action": "approve"},
        headers={"origin": "http://evil.example"},
    )
    assert cross.status_code == 403
    cluster.deliver()
    assert Page(tc.get("/")).rows == ["t1"]


def test_without_a_token_only_loopback_is_served(cluster: InlineCluster) -> None:
    app = create_app(cluster.client)
    remote = TestClient(app, base_url="http://localhost", client=("10.1.2.3", 4000))
    assert remote.get("/").status_code == 403
    # DNS rebinding: a loopback peer, but a page of another site's name
    rebound = TestClient(app, base_url="http://evil.example", client=("127.0.0.1", 4000))
    assert rebound.get("/").status_code == 403
    v6 = TestClient(app, base_url="http://[::1]:8765", client=("::1", 4000))
    assert v6.get("/").status_code == 200


def test_binding_beyond_loopback_needs_a_token() -> None:
    for host in ("127.0.0.1", "localhost", "::1"):
        check_bind(host, None)
    with pytest.raises(ConfigurationError, match="without a token"):
        check_bind("0.0.0.0", None)
    with pytest.raises(ConfigurationError, match="without a token"):
        check_bind("inbox.example.com", "")
    check_bind("0.0.0.0", TOKEN)
    with pytest.raises(ConfigurationError, match="at least 16"):
        check_bind("0.0.0.0", "short")


def test_the_cli_refuses_to_serve_beyond_loopback_without_a_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from workers.cli import app

    monkeypatch.delenv("GRAPHRUNTIME_UI_TOKEN", raising=False)
    result = CliRunner().invoke(app, ["ui", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "without a token" in result.output


def _basic(user: str, password: str) -> dict[str, str]:
    raw = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"authorization": f"Basic {raw}"}


def test_with_a_token_every_request_needs_it_and_the_user_is_the_actor(
    cluster: InlineCluster,
) -> None:
    pause(cluster, "t1", "deploy?")
    app = create_app(cluster.client, token=TOKEN)
    tc = TestClient(app, base_url="http://inbox.example", client=("10.1.2.3", 4000))
    refused = tc.get("/")
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].startswith("Basic")
    assert tc.get("/", headers=_basic("alice", "wrong-token-wrong-token")).status_code == 401
    assert tc.get("/", headers={"authorization": f"Bearer {TOKEN}x"}).status_code == 401
    assert tc.get("/static/inbox.css").status_code == 401
    assert tc.get("/", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    tc.headers.update(_basic("alice", TOKEN))
    page = thread_page(tc, "t1")
    assert "acting as <strong>alice</strong>" in page.html
    assert post(tc, page.form("quick"), "approve").status_code == 200
    cluster.deliver()
    (record,) = cluster.client.resume_history("review", {"configurable": {"thread_id": "t1"}})
    assert record.actor == "alice"


def test_static_files_are_served(cluster: InlineCluster) -> None:
    tc = local(cluster)
    assert "select-all" in tc.get("/static/inbox.js").text
    assert tc.get("/static/inbox.css").status_code == 200


def test_the_import_contract_names_every_workers_module() -> None:
    """ui-at-the-edge must list every module of workers but the CLI and the inbox itself."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        contracts = tomllib.load(f)["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["id"] == "ui-at-the-edge"]
    modules = {
        f"workers.{p.stem}" for p in (ROOT / "workers").glob("*.py") if p.stem != "__init__"
    } | {f"workers.{p.name}" for p in (ROOT / "workers").iterdir() if (p / "__init__.py").exists()}
    assert set(contract["source_modules"]) == modules - {"workers.cli", "workers.ui"}
