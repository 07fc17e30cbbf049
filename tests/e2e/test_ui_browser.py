"""The web inbox in a real browser (Debian's chromium through Playwright) on the real cluster.

Threads pause on the e2e workers, the inbox is served by uvicorn in this process over
the session's client, and chromium answers them: LangGraph's docs' approve/reject graph
(its plain wait takes a typed answer and takes the approve path; with a declared schema
Approve is a button), two waits by bulk select, an Agent Inbox request and a batched
HITL request by editing arguments, and a wait approved with the keyboard alone. Each
answer lands back on the list, leaves it once its run ends, and shows in the state.

Skipped when the playwright package or a chromium binary is missing (.ci/run installs
Debian's chromium when it can). Playwright never downloads a browser here: it is given
the binary (GRAPHRUNTIME_CHROMIUM, else chromium on PATH).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.e2e.fault_graphs import wait_until
from workers.client import GraphClient

pytest.importorskip("playwright.sync_api", reason="playwright is not installed (dev extra)")
from playwright.sync_api import Browser, Page, sync_playwright

TIMEOUT = 60.0  # seconds: a run on the shared cluster, under load
STEP_MS = 20_000  # milliseconds: one browser action or navigation


def chromium_binary() -> str | None:
    explicit = os.environ.get("GRAPHRUNTIME_CHROMIUM")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


# decided before any fixture runs: a skip must not start the session's cluster first
pytestmark = pytest.mark.skipif(
    chromium_binary() is None,
    reason="no chromium binary (apt-get install chromium, or set GRAPHRUNTIME_CHROMIUM): "
    "the browser test drives Debian's chromium, never a downloaded one",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    binary = chromium_binary()
    assert binary is not None
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=binary, timeout=STEP_MS * 3, args=["--disable-dev-shm-usage"]
        )
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def inbox_url(client: GraphClient) -> Iterator[str]:
    """The inbox on a free loopback port, served by uvicorn in a thread of this process."""
    import uvicorn

    from workers.ui import create_app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(client, refresh_seconds=2), log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, timeout=20, what="the inbox server to start")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()
        assert not thread.is_alive(), "the inbox server did not stop"


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    p = context.new_page()
    p.set_default_timeout(STEP_MS)
    p.set_default_navigation_timeout(STEP_MS)
    try:
        yield p
    finally:
        context.close()


@pytest.fixture
def batch(client: GraphClient) -> Iterator[str]:
    """A mark the test's waits carry; any of them still waiting at the end is cancelled."""
    mark = uuid.uuid4().hex[:12]
    yield mark
    for wait in client.inbox(limit=1000).items:
        if wait.thread_id.startswith(f"ui-{mark}"):
            cfg: Any = {"configurable": {"thread_id": wait.thread_id}}
            client.cancel(wait.graph, cfg, reason="browser test cleanup", actor="tests")


def cfg(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


def pause(client: GraphClient, thread_id: str, ask: Any, graph: str = "review") -> None:
    out = client.invoke(
        graph, ask if graph != "review" else {"ask": ask}, cfg(thread_id), timeout=TIMEOUT
    )
    assert "__interrupt__" in out, out


def answer_of(
    client: GraphClient, thread_id: str, graph: str = "review", key: str = "answer"
) -> Any:
    state = client.get_state(graph, cfg(thread_id))
    return state.values.get(key) if not state.next else None


def inbox(inbox_url: str, **filters: str) -> str:
    return f"{inbox_url}/?" + urlencode(filters)


def row(thread_id: str) -> str:
    return f'tr.wait[data-thread="{thread_id}"]'


def wait_gone(page: Page, url: str, *thread_ids: str) -> None:
    """Reload the inbox until none of ``thread_ids`` is listed (their runs have ended)."""

    def gone() -> bool:
        page.goto(url)
        return all(page.locator(row(t)).count() == 0 for t in thread_ids)

    wait_until(gone, timeout=TIMEOUT, what=f"{thread_ids} to leave the inbox", interval=0.5)


def test_the_docs_approve_graph_takes_the_path_the_approver_chose(
    client: GraphClient, inbox_url: str, page: Page, batch: str
) -> None:
    """It compares its answer with "approve": Approve used to resume with true, and took
    the rejected path. A plain wait now offers no Approve, only a typed answer."""
    plain, declared = f"ui-{batch}-plain", f"ui-{batch}-declared"
    pause(client, plain, {"llm_output": f"draft {batch}"}, graph="docs_approval")
    pause(client, declared, {"llm_output": f"draft {batch}"}, graph="declared_approval")

    url = inbox(inbox_url, graph="docs_approval", thread=plain)
    page.goto(url)
    assert page.locator(row(plain)).locator("button.decision, button.choice").count() == 0
    assert "Do you approve the following output?" in page.locator(row(plain)).inner_text()
    page.locator(row(plain)).locator("textarea.json-answer").fill('"approve"')
    page.locator(row(plain)).locator('button[value="json"]').click()
    page.wait_for_selector(f'tr.outcome[data-thread="{plain}"][data-outcome="applied"]')
    assert page.url.startswith(f"{inbox_url}/?graph=docs_approval&thread=")  # back on the list

    page.goto(inbox(inbox_url, graph="declared_approval", thread=declared))
    page.locator(row(declared)).locator("button.choice[value='\"approve\"']").click()
    page.wait_for_selector(f'tr.outcome[data-thread="{declared}"][data-outcome="applied"]')
    for thread_id, graph in ((plain, "docs_approval"), (declared, "declared_approval")):
        wait_until(
            lambda t=thread_id, g=graph: answer_of(client, t, g, "decision") == "approved",
            timeout=TIMEOUT,
            what=f"{graph} to take the approve path",
        )
    (record,) = client.resume_history("docs_approval", cfg(plain))
    assert record.route == "ui"
    assert list(record.value.values()) == ["approve"]


def test_bulk_select_answers_two_threads_and_lands_on_the_list(
    client: GraphClient, inbox_url: str, page: Page, batch: str
) -> None:
    threads = [f"ui-{batch}-{i}" for i in range(3)]
    for i, thread_id in enumerate(threads):
        pause(
            client,
            thread_id,
            {"question": "Refund?", "batch": batch, "n": i, "options": ["approve", "reject"]},
        )
    url = inbox(inbox_url, graph="review", where=json.dumps({"batch": batch}))
    page.goto(url)
    for thread_id in threads[:2]:
        page.locator(row(thread_id)).locator('input.select[name="item"]').check()
    page.fill('#bulk input[name="note"]', "bulk from the browser")
    page.click("#approve-selected")
    for thread_id in threads[:2]:
        page.wait_for_selector(f'tr.outcome[data-thread="{thread_id}"][data-outcome="applied"]')

    wait_gone(page, url, *threads[:2])
    assert page.locator(row(threads[2])).count() == 1
    for thread_id in threads[:2]:
        wait_until(
            lambda t=thread_id: answer_of(client, t) == "approve", timeout=TIMEOUT, what="a resume"
        )
        (record,) = client.resume_history("review", cfg(thread_id))
        assert (record.note, record.route) == ("bulk from the browser", "ui")
    assert answer_of(client, threads[2]) is None


def test_an_agent_inbox_request_is_edited_in_the_browser(
    client: GraphClient, inbox_url: str, page: Page, batch: str
) -> None:
    thread_id = f"ui-{batch}-inbox"
    request = {
        "action_request": {"action": "send_email", "args": {"to": "ops@example.com"}},
        "config": {
            "allow_accept": True,
            "allow_edit": True,
            "allow_respond": False,
            "allow_ignore": False,
        },
        "description": "Send the **weekly report**?",
    }
    pause(client, thread_id, [request])
    page.goto(f"{inbox_url}/thread?" + urlencode({"graph": "review", "thread": thread_id}))
    assert page.locator("section.wait .description strong").inner_text() == "weekly report"
    offered = page.locator('section.wait input[type="radio"]').evaluate_all(
        "radios => radios.map(r => r.value)"
    )
    assert sorted(offered) == ["approve", "edit"]  # exactly what its config allows

    page.check('form.decide input[name="decision:0"][value="edit"]')
    page.fill('form.decide textarea[name="arg:0:to"]', "team@example.com")
    page.click("form.decide button.send-decisions")
    page.wait_for_selector(f'tr.outcome[data-thread="{thread_id}"][data-outcome="applied"]')
    expected = [
        {"type": "edit", "args": {"action": "send_email", "args": {"to": "team@example.com"}}}
    ]
    wait_until(lambda: answer_of(client, thread_id) == expected, timeout=TIMEOUT, what="the edit")


def test_a_batched_hitl_request_is_approved_with_an_edit(
    client: GraphClient, inbox_url: str, page: Page, batch: str
) -> None:
    thread_id = f"ui-{batch}-hitl"
    calls = [
        {
            "name": "send_email",
            "args": {"to": "ops@x.io", "n": 1},
            "allowed": ["approve", "edit", "reject"],
        },
        {"name": "delete_file", "args": {"path": "/tmp/r"}, "allowed": ["approve", "reject"]},
    ]
    pause(client, thread_id, {"calls": calls}, graph="hitl_agent")
    page.goto(inbox(inbox_url, graph="hitl_agent", action="delete_file", thread=thread_id))
    assert page.locator(row(thread_id)).count() == 1
    page.locator(row(thread_id)).locator("a.more").click()
    radios = page.locator("form.decide fieldset.action-request")
    assert radios.nth(0).locator('input[type="radio"]').evaluate_all(
        "rs => rs.map(r => r.value)"
    ) == ["approve", "edit", "reject"]
    assert radios.nth(1).locator('input[type="radio"]').evaluate_all(
        "rs => rs.map(r => r.value)"
    ) == ["approve", "reject"]
    page.check('input[name="decision:0"][value="edit"]')
    page.fill('textarea[name="arg:0:to"]', "team@x.io")
    page.fill('textarea[name="arg:0:n"]', "2")
    page.check('input[name="decision:1"][value="approve"]')
    page.click("form.decide button.send-decisions")
    page.wait_for_selector(f'tr.outcome[data-thread="{thread_id}"][data-outcome="applied"]')
    wait_until(
        lambda: (
            answer_of(client, thread_id, "hitl_agent", "executed")
            == [["send_email", {"to": "team@x.io", "n": 2}], ["delete_file", {"path": "/tmp/r"}]]
        ),
        timeout=TIMEOUT,
        what="the edited call to run",
    )


def test_the_keyboard_moves_selects_and_approves(
    client: GraphClient, inbox_url: str, page: Page, batch: str
) -> None:
    threads = [f"ui-{batch}-k{i}" for i in range(3)]
    for i, thread_id in enumerate(threads):
        pause(
            client,
            thread_id,
            {"question": "Ship?", "batch": batch, "n": i, "options": ["approve", "reject"]},
        )
    url = inbox(inbox_url, graph="review", where=json.dumps({"batch": batch}))
    page.goto(url)
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("k")
    page.keyboard.press("j")
    assert page.locator("tr.wait.current").get_attribute("data-thread") == threads[1]
    page.keyboard.press("x")
    assert page.locator(row(threads[1])).locator("input.select").is_checked()
    page.keyboard.press("x")
    page.keyboard.press("a")
    page.wait_for_selector(f'tr.outcome[data-thread="{threads[1]}"][data-outcome="applied"]')
    wait_until(
        lambda: answer_of(client, threads[1]) == "approve", timeout=TIMEOUT, what="the approve"
    )
    assert answer_of(client, threads[0]) is None
    assert answer_of(client, threads[2]) is None
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "thread-search"


def test_the_list_refreshes_itself(
    client: GraphClient, inbox_url: str, page: Page, batch: str
) -> None:
    first = f"ui-{batch}-r0"
    pause(client, first, {"question": "One?", "batch": batch})
    page.goto(inbox(inbox_url, graph="review", where=json.dumps({"batch": batch})))
    assert page.locator("tr.wait").count() == 1
    later = f"ui-{batch}-r1"
    pause(client, later, {"question": "Two?", "batch": batch})
    # no reload: the page fetches the list again on its own (every 2 s here)
    page.wait_for_selector(row(later), timeout=STEP_MS)
    # not while the approver is selecting waits: the selection stays
    page.locator(row(later)).locator("input.select").check()
    third = f"ui-{batch}-r2"
    pause(client, third, {"question": "Three?", "batch": batch})
    page.wait_for_timeout(5000)  # two refresh periods: nothing may replace the list
    assert page.locator(row(third)).count() == 0
    assert page.locator(row(later)).locator("input.select").is_checked()
