"""The web inbox over an in-memory cluster: the list, what each wait offers, the posts.

Auth, identities, claims and CSRF: test_ui_auth.py.
"""

from __future__ import annotations

import json
import tomllib
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.unit.workers.test_decisions import hitl, tool_approval
from tests.unit.workers.ui_support import (
    FLAGS,
    Page,
    answer,
    cfg,
    human_interrupt,
    local,
    make_cluster,
    pause,
    post,
    state,
    thread_page,
)
from workers.testing import InlineCluster
from workers.ui import create_app

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def cluster() -> InlineCluster:
    return make_cluster()


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


def test_the_inbox_filters_on_graph_value_node_age_thread_and_action(
    cluster: InlineCluster,
) -> None:
    pause(cluster, "t1", {"team": "ops"})
    pause(cluster, "t2", {"team": "sales"})
    pause(cluster, "t3", {"team": "ops"}, graph="other")
    pause(cluster, "t4", human_interrupt(allow_accept=True))
    pause(cluster, "t5", hitl(("delete_file", {"path": "/x"}, ["approve"])))
    tc = local(cluster)

    def rows(**params: str) -> list[str]:
        response = tc.get("/", params=params)
        assert response.status_code == 200, response.text
        return Page(response).rows

    assert rows(graph="review") == ["t1", "t2", "t4", "t5"]
    assert rows(where='{"team": "ops"}') == ["t1", "t3"]
    assert rows(graph="other", where='{"team": "ops"}') == ["t3"]
    assert rows(node="elsewhere") == []
    assert rows(older_than="150s") == ["t1", "t2", "t3"]  # paused 300 s to 60 s ago
    assert rows(older_than="1d") == []
    assert rows(thread="t2") == ["t2"]
    assert rows(action="send_email") == ["t4"]
    assert rows(action="delete_file", args='{"path": "/x"}') == ["t5"]
    assert rows(args='{"path": "/y"}') == []


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"where": "{team"}, "not valid JSON"),
        ({"where": "[1]"}, "JSON object"),
        ({"older_than": "soon"}, "like 90s, 15m"),
        ({"graph": "nope"}, "nope"),
        ({"cursor": "garbage"}, "cursor"),
        ({"where": '{"a": "\\u0000"}'}, "NUL"),
        ({"where": "\x00"}, "control character"),
        ({"node": "re\x00view"}, "control character"),
        ({"thread": "t\x001"}, "control character"),
        ({"cursor": "abc\x00"}, "control character"),
        ({"where": '{"a":' * 600 + "1" + "}" * 600}, "nests deeper"),
        ({"where": "[" * 1500 + "]" * 1500}, "nests deeper"),
        ({"where": "[" * 5000 + "]" * 5000}, "longer than 4096"),
        ({"older_than": "99999999999d"}, "at most 36500 days"),
        ({"older_than": "9999999999999d"}, "like 90s"),
        ({"older_than": "999999999d"}, "at most 36500 days"),
        ({"args": "[1]"}, "args filter is a JSON object"),
        ({"action": "x" * 300}, "longer than 256"),
    ],
)
def test_hostile_filter_input_is_a_400_with_the_reason_never_a_500(
    cluster: InlineCluster, params: dict[str, str], message: str
) -> None:
    pause(cluster, "t1", "q")
    tc = TestClient(
        create_app(cluster.client),
        base_url="http://localhost:8765",
        client=("127.0.0.1", 50000),
        raise_server_exceptions=False,
    )
    response = tc.get("/", params=params)
    assert response.status_code == 400, response.text
    assert message in unescape(response.text)
    assert "Traceback" not in response.text
    assert Page(response).rows == []


def test_an_unexpected_failure_is_a_500_without_a_traceback(
    cluster: InlineCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(cluster.client, "inbox", broken)
    tc = TestClient(
        create_app(cluster.client),
        base_url="http://localhost:8765",
        client=("127.0.0.1", 50000),
        raise_server_exceptions=False,
    )
    response = tc.get("/")
    assert response.status_code == 500
    assert "secret internals" not in response.text
    assert "Traceback" not in response.text


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


def test_big_values_are_cut_in_the_list_with_a_link_to_the_whole(cluster: InlineCluster) -> None:
    big = {"report": "x" * 5_000_000}
    for i in range(3):
        pause(cluster, f"big{i}", big)
    tc = local(cluster)
    response = tc.get("/")
    assert len(response.content) < 100_000  # three 5 MB values
    page = Page(response)
    assert page.rows == ["big0", "big1", "big2"]
    assert page.html.count('class="whole"') == 3
    whole = page.html.split('class="whole" href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    assert "x" * 5_000_000 in tc.get(whole).text


# --- what each wait offers: only the answers it declares ---------------------------------


def test_a_plain_wait_offers_no_approve_only_a_json_answer_under_its_question(
    cluster: InlineCluster,
) -> None:
    """LangGraph's docs' approve/reject graph compares the answer with "approve": a
    silent ``true`` took its rejected path. Its wait now offers a JSON answer only."""
    pause(cluster, "t1", {"question": "Is this correct?", "llm_output": "draft"})
    tc = local(cluster)
    listing = Page(tc.get("/"))
    assert listing.row_form("t1").buttons == ["json"]
    assert "Is this correct?" in listing.html
    page = thread_page(tc, "t1")
    assert page.offered() == {"json"}
    assert '<h3 class="question">Is this correct?</h3>' in page.html
    landed = post(tc, listing.row_form("t1"), "json", value='"approve"')
    assert landed.outcomes == [("t1", "applied")]
    assert answer(cluster, "t1") == "approve"


def test_approve_on_a_plain_wait_is_refused_and_resumes_nothing(cluster: InlineCluster) -> None:
    pause(cluster, "plain", {"question": "Deploy?"})
    pause(cluster, "declared", "Deploy?", choices=["approve", "reject"])
    tc = local(cluster)
    bulk = Page(tc.get("/")).form("bulk")
    sent = len(cluster.broker.sent)
    response = tc.post(
        "/resume", data={**bulk.inputs, "action": "approve", "item": bulk.checkboxes}
    )
    assert response.status_code == 400
    assert "does not say what 'approve' means" in unescape(response.text)
    assert "Nothing was resumed" in response.text
    assert len(cluster.broker.sent) == sent
    assert answer(cluster, "declared") is None


def test_declared_choices_are_offered_and_resume_with_exactly_their_value(
    cluster: InlineCluster,
) -> None:
    pause(cluster, "words", "Ship it?", choices=["approve", "reject"])
    pause(cluster, "listed", {"question": "Route to?", "options": ["ops", "sales"]})
    tc = local(cluster)
    listing = Page(tc.get("/"))
    assert listing.row_form("words").buttons == ['choice="approve"', 'choice="reject"']
    assert listing.row_form("listed").buttons == ['choice="ops"', 'choice="sales"']
    assert post(tc, listing.row_form("words"), choice='"approve"').outcomes == [
        ("words", "applied")
    ]
    post(tc, thread_page(tc, "listed").form("quick"), choice='"sales"')
    assert answer(cluster, "words") == "approve"
    assert answer(cluster, "listed") == "sales"
    # a choice the wait does not declare is refused
    pause(cluster, "again", "Ship it?", choices=["approve", "reject"])
    form = Page(tc.get("/")).row_form("again")
    refused = tc.post("/resume", data={**form.inputs, "choice": '"maybe"'})
    assert refused.status_code == 400
    assert "not one of this wait's choices" in unescape(refused.text)


def test_bulk_approve_answers_each_selected_wait_in_its_own_format(cluster: InlineCluster) -> None:
    pause(cluster, "words", "ok?", choices=["approve", "reject"])
    pause(cluster, "inbox", human_interrupt(allow_accept=True))
    pause(cluster, "batched", hitl(("a", {}, ["approve"]), ("b", {}, ["approve", "reject"])))
    pause(cluster, "left", "ok?")
    tc = local(cluster)
    bulk = Page(tc.get("/")).form("bulk")
    chosen = [c for c in bulk.checkboxes if '"left"' not in c]
    landed = post(tc, bulk, "approve", item=chosen)
    assert sorted(landed.outcomes) == [
        ("batched", "applied"),
        ("inbox", "applied"),
        ("words", "applied"),
    ]
    again = post(tc, bulk, "approve", item=chosen)
    assert {o for _, o in again.outcomes} == {"already applied"}
    assert answer(cluster, "words") == "approve"
    assert answer(cluster, "inbox")[0]["type"] == "accept"
    assert answer(cluster, "batched") == {"decisions": [{"type": "approve"}] * 2}
    assert Page(tc.get("/")).rows == ["left"]


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
def test_an_agent_inbox_request_offers_exactly_its_allowed_decisions(
    cluster: InlineCluster, flags: dict[str, bool]
) -> None:
    pause(cluster, "t1", human_interrupt(flags))
    tc = local(cluster)
    allowed = {
        d
        for d, f in zip(("approve", "edit", "respond", "reject"), FLAGS, strict=True)
        if flags.get(f)
    }
    row = Page(tc.get("/")).row_form("t1")
    assert set(row.buttons) == allowed & {"approve", "reject"}
    page = thread_page(tc, "t1")
    assert page.offered() == {f"decision:0={d}" for d in allowed} | {"decide", "json"} | (
        allowed & {"approve", "reject"}
    )
    if "edit" in allowed:
        assert page.form("decide").textareas["arg:0:to"] == "a@b.c"
        assert page.form("decide").textareas["arg:0:n"] == "3"


def test_each_agent_inbox_decision_resumes_with_its_human_response(cluster: InlineCluster) -> None:
    everything = dict.fromkeys(FLAGS, True)
    for name in ("approve", "edit", "respond", "reject"):
        pause(cluster, name, human_interrupt(everything))
    tc = local(cluster)
    post(tc, thread_page(tc, "approve").form("decide"), "decide", **{"decision:0": "approve"})
    post(tc, thread_page(tc, "reject").form("quick"), "reject")
    edit = thread_page(tc, "edit").form("decide")
    post(tc, edit, "decide", **{"decision:0": "edit", "arg:0:to": "x@y.z", "arg:0:n": "4"})
    respond = thread_page(tc, "respond").form("decide")
    post(tc, respond, "decide", **{"decision:0": "respond", "message:0": "Not this week."})
    request = {"action": "send_email", "args": {"to": "a@b.c", "n": 3}}
    assert answer(cluster, "approve") == [{"type": "accept", "args": request}]
    assert answer(cluster, "edit") == [
        {"type": "edit", "args": {"action": "send_email", "args": {"to": "x@y.z", "n": "4"}}}
    ]
    assert answer(cluster, "respond") == [{"type": "response", "args": "Not this week."}]
    assert answer(cluster, "reject") == [{"type": "ignore", "args": None}]
    assert Page(local(cluster).get("/")).rows == []


def test_a_batched_hitl_request_offers_each_action_its_decisions_and_edits(
    cluster: InlineCluster,
) -> None:
    request = hitl(
        ("send_email", {"to": "ops@x.io", "retries": 1}, ["approve", "edit", "reject"]),
        ("delete_file", {"path": "/tmp/r"}, ["approve", "reject", "respond"]),
    )
    pause(cluster, "t1", request)
    tc = local(cluster)
    row = Page(tc.get("/")).row_form("t1")
    assert row.buttons == ["approve", "reject"]  # what both actions allow
    page = thread_page(tc, "t1")
    decide = page.form("decide")
    assert decide.radios == {
        "decision:0": ["approve", "edit", "reject"],
        "decision:1": ["approve", "reject", "respond"],
    }
    assert decide.textareas["arg:0:to"] == "ops@x.io"
    assert decide.textareas["arg:0:retries"] == "1"
    assert "arg:1:path" not in decide.textareas  # no edit allowed there
    landed = post(
        tc,
        decide,
        "decide",
        **{
            "decision:0": "edit",
            "arg:0:to": "team@x.io",
            "arg:0:retries": "2",
            "decision:1": "reject",
            "message:1": "keep the file",
        },
    )
    assert landed.outcomes == [("t1", "applied")]
    assert answer(cluster, "t1") == {
        "decisions": [
            {
                "type": "edit",
                "edited_action": {"name": "send_email", "args": {"to": "team@x.io", "retries": 2}},
            },
            {"type": "reject", "message": "keep the file"},
        ]
    }


def test_a_per_call_tool_approval_offers_what_its_response_schema_allows(
    cluster: InlineCluster,
) -> None:
    pause(cluster, "t1", tool_approval(), per_call=["approve", "edit", "respond"])
    tc = local(cluster)
    page = thread_page(tc, "t1")
    assert page.form("decide").radios == {"decision:0": ["approve", "edit", "respond"]}
    assert "Arguments schema" in page.html
    post(
        tc,
        page.form("decide"),
        "decide",
        **{"decision:0": "edit", "arg:0:to": "x@y.z", "arg:0:retries": "0"},
    )
    assert answer(cluster, "t1") == {
        "type": "edit",
        "edited_action": {"name": "send_email", "args": {"to": "x@y.z", "retries": 0}},
    }


def test_a_decision_the_request_does_not_allow_is_refused_and_changes_nothing(
    cluster: InlineCluster,
) -> None:
    pause(cluster, "t1", human_interrupt(allow_respond=True))
    tc = local(cluster)
    form = thread_page(tc, "t1").form("decide")
    response = tc.post("/resume", data={**form.inputs, "action": "decide", "decision:0": "approve"})
    assert response.status_code == 400
    assert "does not allow 'approve': it allows respond" in unescape(response.text)
    bad_json = thread_page(tc, "t1").form("decide")
    assert answer(cluster, "t1") is None
    assert cluster.client.resume_history("review", cfg("t1")) == []
    assert bad_json.radios == {"decision:0": ["respond"]}


def test_the_description_is_markdown_with_html_escaped(cluster: InlineCluster) -> None:
    text = "# Title\n<script>alert(1)</script> [x](javascript:alert(1)) **ok**"
    pause(cluster, "t1", human_interrupt(description=text, allow_accept=True))
    for html in (local(cluster).get("/").text, thread_page(local(cluster), "t1").html):
        assert "<script>alert" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert 'href="javascript:' not in html
        assert "<strong>ok</strong>" in html


# --- posts -------------------------------------------------------------------------------


def test_a_post_lands_back_on_the_list_it_came_from(cluster: InlineCluster) -> None:
    pause(cluster, "t1", "ok?", choices=["approve", "reject"])
    pause(cluster, "t2", "ok?", choices=["approve", "reject"], graph="other")
    tc = local(cluster)
    form = Page(tc.get("/", params={"graph": "review"})).row_form("t1")
    response = tc.post(
        "/resume", data={**form.inputs, "choice": '"approve"'}, follow_redirects=False
    )
    assert response.status_code == 303
    assert response.headers["location"].startswith("/?graph=review&done=")
    landed = Page(tc.get(response.headers["location"]))
    assert landed.outcomes == [("t1", "applied")]
    assert 'id="inbox" data-refresh=' in landed.html  # the list, refreshing itself
    # a flash nobody sealed is not shown
    forged = response.headers["location"].replace("done=", "done=x")
    assert Page(tc.get(forged)).outcomes == []


def test_a_form_resumes_once_however_often_it_is_sent(cluster: InlineCluster) -> None:
    pause(cluster, "t1", "ok?", choices=["approve", "reject"])
    tc = local(cluster)
    form = Page(tc.get("/")).row_form("t1")
    assert post(tc, form, choice='"approve"', note="fine").outcomes == [("t1", "applied")]
    assert post(tc, form, choice='"approve"', note="fine").outcomes == [("t1", "already applied")]
    assert answer(cluster, "t1") == "approve"
    # after its run, the wait is gone: the form says so and resumes nothing
    assert post(tc, form, choice='"approve"').outcomes == [("t1", "not pending")]
    (record,) = cluster.client.resume_history("review", cfg("t1"))
    assert (record.note, record.status, record.route) == ("fine", "success", "ui")
    assert Page(tc.get("/")).rows == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{oops", "not valid JSON"),
        ("", "Type a resume value"),
        ("null", "null resumes nothing"),
        ("[" * 100 + "]" * 100, "nests deeper"),
        ("[" * 5000 + "]" * 5000, "nests deeper"),
    ],
)
def test_bad_json_is_a_clear_error_and_changes_nothing(
    cluster: InlineCluster, value: str, message: str
) -> None:
    pause(cluster, "t1", "deploy?")
    tc = local(cluster)
    sent = len(cluster.broker.sent)
    form = thread_page(tc, "t1").form("json")
    response = tc.post("/resume", data={**form.inputs, "action": "json", "value": value})
    assert response.status_code == 400
    assert message in response.text
    assert "Nothing was resumed" in response.text
    assert len(cluster.broker.sent) == sent
    assert cluster.client.resume_history("review", cfg("t1")) == []


def test_an_answered_wait_is_reported_not_pending(cluster: InlineCluster) -> None:
    pause(cluster, "t1", "deploy?")
    tc = local(cluster)
    stale = thread_page(tc, "t1").form("json")
    post(tc, thread_page(tc, "t1").form("json"), "json", value="true")
    cluster.deliver()
    assert post(tc, stale, "json", value="false").outcomes == [("t1", "not pending")]
    assert state(cluster, "t1").values["answer"] is True


def test_the_thread_page_shows_its_history_with_route_and_actor(cluster: InlineCluster) -> None:
    pause(cluster, "t1", "deploy?")
    tc = local(cluster)
    assert 'id="no-history"' in thread_page(tc, "t1").html
    post(tc, thread_page(tc, "t1").form("json"), "json", value='"yes"', note="ship it")
    cluster.deliver()
    page = thread_page(tc, "t1")
    assert 'id="no-waits"' in page.html
    assert 'data-status="success" data-route="ui"' in page.html
    assert "ship it" in page.html
    assert tc.get("/thread", params={"graph": "nope", "thread": "t1"}).status_code == 404


def test_static_files_are_served(cluster: InlineCluster) -> None:
    tc = local(cluster)
    script = tc.get("/static/inbox.js").text
    assert "select-all" in script
    assert "keydown" in script
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


def test_json_values_keep_their_type(cluster: InlineCluster) -> None:
    pause(cluster, "t1", "how many?")
    tc = local(cluster)
    post(tc, thread_page(tc, "t1").form("json"), "json", value=json.dumps({"n": [1, 2]}))
    assert answer(cluster, "t1") == {"n": [1, 2]}
