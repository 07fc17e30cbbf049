"""The web inbox in a real browser (Debian's chromium through Playwright) on the real cluster.

Threads pause on the e2e workers, the inbox is served by uvicorn in this process over
the session's client, and chromium approves them: one from its row, two by bulk
select, one Agent Inbox request by editing its arguments. Each answer must leave the
inbox and show in the thread's state once its run ends.

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
    server = uvicorn.Server(uvicorn.Config(create_app(client), log_level="warning", lifespan="off"))
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
    for wait in client.inbox("review", limit=1000).items:
        if wait.thread_id.startswith(f"ui-{mark}"):
            cfg: Any = {"configurable": {"thread_id": wait.thread_id}}
            client.cancel("review", cfg, reason="browser test cleanup", actor="tests")


def cfg(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


def pause(client: GraphClient, thread_id: str, ask: Any) -> None:
    out = client.invoke("review", {"ask": ask}, cfg(thread_id), timeout=TIMEOUT)
    assert "__interrupt__" in out, out


def answer_of(client: GraphClient, thread_id: str) -> Any:
    state = client.get_state("review", cfg(thread_id))
    return state.values.get("answer") if not state.next else None


def row(thread_id: str) -> str:
    return f'tr.wait[data-thread="{thread_id}"]'


def wait_gone(page: Page, url: str, *thread_ids: str) -> None:
    """Reload the inbox until none of ``thread_ids`` is listed (their runs have ended)."""

    def gone() -> bool:
        page.goto(url)
        return all(page.locator(row(t)).count() == 0 for t in thread_ids)

    wait_until(gone, timeout=TIMEOUT, what=f"{thread_ids} to leave the inbox", interval=0.5)


def test_approve_one_thread_from_its_row(
    client: GraphClient, inbox_url: str, page: Page, batch: str
) -> None:
    threads = [f"ui-{batch}-{i}" for i in range(2)]
    for i, thread_id in enumerate(threads):
        pause(client, thread_id, {"question": "Deploy?", "batch": batch, "n": i})
    url = f"{inbox_url}/?" + urlencode({"graph": "review", "where": json.dumps({"batch": batch})})
    page.goto(url)
    assert page.locator("tr.wait").count() == 2
    assert "Deploy?" in page.locator(row(threads[0])).inner_text()

    page.locator(row(threads[0])).locator('button[value="approve"]').click()
    page.wait_for_selector(f'tr.outcome[data-thread="{threads[0]}"][data-outcome="applied"]')

    wait_gone(page, url, threads[0])
    assert page.locator(row(threads[1])).count() == 1
    wait_until(lambda: answer_of(client, threads[0]) is True, timeout=TIMEOUT, what="the resume")
    assert answer_of(client, threads[1]) is None
    (record,) = client.resume_history("review", cfg(threads[0]))
    assert (record.actor, record.status) == ("ui", "success")
    page.goto(f"{inbox_url}/thread?" + urlencode({"graph": "review", "thread": threads[0]}))
    assert page.locator('tr.resume[data-status="success"]').count() == 1


def test_bulk_select_approves_two_threads(
    client: GraphClient, inbox_url: str, page: Page, batch: str
) -> None:
    threads = [f"ui-{batch}-{i}" for i in range(3)]
    for i, thread_id in enumerate(threads):
        pause(client, thread_id, {"question": "Refund?", "batch": batch, "n": i})
    url = f"{inbox_url}/?" + urlencode({"graph": "review", "where": json.dumps({"batch": batch})})
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
            lambda t=thread_id: answer_of(client, t) is True, timeout=TIMEOUT, what="a resume"
        )
        (record,) = client.resume_history("review", cfg(thread_id))
        assert record.note == "bulk from the browser"
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
    offered = page.locator("section.wait button[name=action]").evaluate_all(
        "buttons => buttons.map(b => b.value)"
    )
    assert sorted(offered) == ["accept", "edit", "json"]  # exactly what its config allows

    page.fill('form.edit textarea[name="arg:to"]', "team@example.com")
    page.click('form.edit button[value="edit"]')
    page.wait_for_selector(f'tr.outcome[data-thread="{thread_id}"][data-outcome="applied"]')
    expected = [
        {"type": "edit", "args": {"action": "send_email", "args": {"to": "team@example.com"}}}
    ]
    wait_until(lambda: answer_of(client, thread_id) == expected, timeout=TIMEOUT, what="the edit")
