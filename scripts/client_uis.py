"""Agent Chat UI and Agent Inbox, built from their public sources, against `graphrun serve`
on real workers, driven by headless Chromium: send, interrupt, approve, stop, reconnect.

Not part of `make test`: it needs the two apps' sources, which this repository never
holds. Get them (MIT-licensed) and point the script at them:

    git clone https://github.com/langchain-ai/agent-chat-ui /tmp/src/agent-chat-ui
    git clone https://github.com/langchain-ai/agent-inbox /tmp/src/agent-inbox
    .venv/bin/python scripts/client_uis.py --agent-chat-ui /tmp/src/agent-chat-ui \\
        --agent-inbox /tmp/src/agent-inbox [--work /tmp/graphrun-uis]

Each app is copied to the work folder (outside the repository), installed from the npm
registry and built with `next build`. Their layouts load the Inter font through
`next/font/google`, which a build fetches from Google Fonts: with no network beyond the
npm registry the copy's layout is built without that font (the only change made to them).
Chromium is Debian's (/usr/bin/chromium, `apt-get install chromium`), run by Playwright.
Every process started is stopped by its pid.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.api_diff import servers  # noqa: E402
from workers.local_cluster import LocalCluster  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
GRAPH = "api_hitl"


def log(message: str) -> None:
    sys.stderr.write(f"[client-uis] {message}\n")
    sys.stderr.flush()


def without_google_font(layout: Path) -> None:
    """The copy's layout without next/font/google (a build would fetch the font)."""
    text = layout.read_text()
    text = re.sub(r'import \{ Inter \} from "next/font/google";\n', "", text)
    text = re.sub(
        r"const inter = Inter\(\{.*?\}\);", 'const inter = { className: "" };', text, flags=re.S
    )
    layout.write_text(text)


def build(source: Path, work: Path, name: str, env: dict[str, str]) -> Path:
    """Copy, install and build one app; its folder."""
    target = work / name
    if not (target / ".next" / "BUILD_ID").exists():
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(".git", "node_modules"))
        without_google_font(target / "src" / "app" / "layout.tsx")
        log(f"{name}: npm install")
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--legacy-peer-deps"],
            cwd=target,
            check=True,
            timeout=1800,
        )
        log(f"{name}: next build")
        subprocess.run(
            ["npx", "next", "build"],
            cwd=target,
            env={**os.environ, **env, "NEXT_TELEMETRY_DISABLED": "1"},
            check=True,
            timeout=1800,
        )
    return target


@contextlib.contextmanager
def next_start(app: Path, port: int) -> Iterator[str]:
    proc = subprocess.Popen(
        ["npx", "next", "start", "-p", str(port), "-H", "127.0.0.1"],
        cwd=app,
        env={**os.environ, "NEXT_TELEMETRY_DISABLED": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        import urllib.request

        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        yield url
    finally:
        servers.stop(proc)


def wait_until(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def drive_chat(browser: Any, ui: str, api: str, sdk: Any, shots: Path) -> dict[str, Any]:
    """Send, interrupt, approve; stop a slow run; reload mid-run."""
    page = browser.new_page()
    page.goto(f"{ui}/?apiUrl={api}&assistantId={GRAPH}")
    box = page.get_by_placeholder("Type your message...")
    box.fill("hello")
    page.get_by_role("button", name="Send").click()
    page.get_by_role("button", name="Approve").first.wait_for(timeout=60_000)
    page.screenshot(path=str(shots / "chat-interrupted.png"))
    page.get_by_role("button", name="Approve").first.click()
    thread_id = re.search(r"threadId=([0-9a-f-]+)", page.url)
    if thread_id is None:
        raise AssertionError(f"no thread in the page's URL: {page.url}")
    wait_until(
        lambda: sdk.threads.get(thread_id.group(1))["status"] == "idle",
        "the approved thread to finish",
    )
    page.get_by_text("human said approve").wait_for(timeout=60_000)
    page.screenshot(path=str(shots / "chat-approved.png"))
    result: dict[str, Any] = {"sent_and_approved": True}
    # stop: a slow run, cancelled from the UI while it runs
    page.goto(f"{ui}/?apiUrl={api}&assistantId={GRAPH}")
    page.get_by_placeholder("Type your message...").fill("slow please")
    page.get_by_role("button", name="Send").click()
    page.get_by_role("button", name="Cancel").click(timeout=30_000)
    page.get_by_role("button", name="Send").wait_for(timeout=30_000)
    result["stopped"] = True
    # reload while a slow run streams: the UI comes back to the thread (Agent Chat UI does
    # not rejoin a stream on reload, it has no reconnectOnMount: once the run waits, a
    # reload shows the wait; tests/e2e's JS SDK test rejoins a stream by Last-Event-ID)
    page.goto(f"{ui}/?apiUrl={api}&assistantId={GRAPH}")
    page.get_by_placeholder("Type your message...").fill("slow again")
    page.get_by_role("button", name="Send").click()

    def newest() -> dict[str, Any]:
        found = sdk.threads.search(limit=1, sort_by="created_at", sort_order="desc")
        return found[0] if found else {"status": "idle", "values": None}

    wait_until(lambda: "slow again" in json.dumps(newest()["values"]), "the run to start")
    tid = newest()["thread_id"]
    page.reload()
    wait_until(
        lambda: sdk.threads.get(tid)["status"] == "interrupted", "the reloaded thread's run to wait"
    )
    page.goto(f"{ui}/?apiUrl={api}&assistantId={GRAPH}&threadId={tid}")
    page.get_by_role("button", name="Approve").first.wait_for(timeout=60_000)
    page.screenshot(path=str(shots / "chat-reloaded.png"))
    result["reloaded"] = True
    page.close()
    return result


def open_thread(page: Any, ui: str, thread_id: str, text: str) -> None:
    """A wait's thread view, by its URL (the list re-renders as it refreshes, so a click on
    a row may land on another); it shows the wait's description."""
    page.goto(f"{ui}/?inbox=interrupted&view_state_thread_id={thread_id}")
    page.get_by_text(text).first.wait_for(timeout=60_000)


def drive_inbox(browser: Any, ui: str, api: str, sdk: Any, shots: Path) -> dict[str, Any]:
    """Threads waiting on a human listed, one opened and accepted, one marked resolved."""
    waiting = []
    for text in ("inbox one", "inbox two"):
        thread = sdk.threads.create()
        sdk.runs.wait(
            thread["thread_id"], GRAPH, input={"messages": [{"type": "human", "content": text}]}
        )
        waiting.append(thread["thread_id"])
    inbox = {
        "id": str(uuid.uuid4()),
        "graphId": GRAPH,
        "deploymentUrl": api,
        "name": "graphrun",
        "selected": True,
        "createdAt": "2026-01-01T00:00:00Z",
    }
    page = browser.new_page()
    page.on(
        "request",
        lambda r: (
            log(f"{r.method} {r.url}")
            if r.url.startswith(api)
            and r.method not in ("GET", "OPTIONS")
            and "search" not in r.url
            else None
        ),
    )
    page.add_init_script(
        f"window.localStorage.setItem('inbox:agent_inboxes', {json.dumps(json.dumps([inbox]))});"
    )
    page.goto(f"{ui}/?inbox=interrupted")
    page.get_by_text("Reply to: inbox one").first.wait_for(timeout=60_000)
    page.screenshot(path=str(shots / "inbox-list.png"))
    open_thread(page, ui, waiting[0], "Reply to: inbox one")
    page.screenshot(path=str(shots / "inbox-thread.png"))
    page.get_by_role("button", name=re.compile("^(Accept|Approve|Submit)")).first.click(
        timeout=30_000
    )
    wait_until(
        lambda: sdk.threads.get(waiting[0])["status"] == "idle", "the accepted thread to finish"
    )
    page.screenshot(path=str(shots / "inbox-accepted.png"))
    open_thread(page, ui, waiting[1], "Reply to: inbox two")
    page.get_by_role("button", name="Mark as Resolved").click(timeout=30_000)
    wait_until(
        lambda: sdk.threads.get(waiting[1])["status"] != "interrupted", "the resolved thread"
    )
    page.screenshot(path=str(shots / "inbox-after.png"))
    values = sdk.threads.get_state(waiting[0])["values"]["messages"]
    page.close()
    return {"accepted": values[-1]["content"], "resolved": sdk.threads.get(waiting[1])["status"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--agent-chat-ui", type=Path, help="its sources (a checkout)")
    parser.add_argument("--agent-inbox", type=Path, help="its sources (a checkout)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "graphrun-uis")
    args = parser.parse_args(argv)
    from langgraph_sdk import get_sync_client
    from playwright.sync_api import sync_playwright

    args.work.mkdir(parents=True, exist_ok=True)
    shots = args.work / "screenshots"
    shots.mkdir(exist_ok=True)
    if args.agent_chat_ui is None and args.agent_inbox is None:
        parser.error("give --agent-chat-ui, --agent-inbox or both")
    apps = {
        name: build(source, args.work, name, {})
        for name, source in (
            ("agent-chat-ui", args.agent_chat_ui),
            ("agent-inbox", args.agent_inbox),
        )
        if source is not None
    }
    drivers = {"agent-chat-ui": drive_chat, "agent-inbox": drive_inbox}
    report: dict[str, Any] = {}
    with (
        LocalCluster(
            "", workers=2, extra_env={"GRAPHRUNTIME_CONFIG": str(servers.CONFIG)}
        ) as cluster,
        servers.serve({**cluster.env, "GRAPHRUNTIME_DATA_DIR": str(args.work)}) as api,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        sdk: Any = get_sync_client(url=api.url)
        try:
            for name, app in apps.items():
                with next_start(app, servers.free_port()) as url:
                    log(f"{name} on {url}, the API on {api.url}")
                    context = browser.new_context()
                    try:
                        report[name] = drivers[name](context, url, api.url, sdk, shots)
                    except Exception as exc:
                        log(f"{name} failed: {type(exc).__name__}: {exc}")
                        for i, page in enumerate(context.pages):  # what the page showed
                            with contextlib.suppress(Exception):
                                page.screenshot(
                                    path=str(shots / f"{name}-failed-{i}.png"), timeout=10_000
                                )
                        raise
                    finally:
                        context.close()
        finally:
            browser.close()
    sys.stdout.write(json.dumps(report, indent=1) + "\n")
    log(f"screenshots in {shots}")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    raise SystemExit(main())
