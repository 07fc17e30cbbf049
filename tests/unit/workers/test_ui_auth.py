"""The web inbox: who may use it, who they are (the actor of their resumes), claims, CSRF."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from tests.unit.workers.ui_support import (
    TOKEN,
    Form,
    Page,
    answer,
    basic,
    cfg,
    local,
    make_cluster,
    pause,
    post,
    thread_page,
)
from workers.errors import ConfigurationError
from workers.testing import InlineCluster
from workers.ui import Auth, check_bind, create_app, read_tokens

ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789ab"


@pytest.fixture
def cluster() -> InlineCluster:
    return make_cluster()


@pytest.fixture
def tokens_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    digest = __import__("hashlib").sha256(BOB.encode()).hexdigest()
    path.write_text(f"# approvers\nalice {ALICE}\n\nBob Smith sha256:{digest}\n")
    path.chmod(0o600)
    return path


def remote(cluster: InlineCluster, auth: Auth, peer: str = "10.1.2.3") -> TestClient:
    return TestClient(
        create_app(cluster.client, auth=auth), base_url="http://inbox.example", client=(peer, 4000)
    )


# --- who may post what -------------------------------------------------------------------


def test_a_form_without_its_csrf_token_or_from_another_site_is_refused(
    cluster: InlineCluster,
) -> None:
    pause(cluster, "t1", "deploy?")
    tc = local(cluster)
    form = thread_page(tc, "t1").form("json")
    forged = Form(form.id, form.cls, form.action, {**form.inputs, "csrf": "0" * 64})
    assert (
        tc.post("/resume", data={**forged.inputs, "action": "json", "value": "1"}).status_code
        == 403
    )
    other = {**form.inputs, "submission": "f" * 32}
    assert tc.post("/resume", data={**other, "action": "json", "value": "1"}).status_code == 403
    cross = tc.post(
        "/resume",
        data={**form.inputs, "action": "json", "value": "1"},
        headers={"origin": "http://evil.example"},
    )
    assert cross.status_code == 403
    assert answer(cluster, "t1") is None


def test_without_authentication_only_loopback_is_served(cluster: InlineCluster) -> None:
    app = create_app(cluster.client)
    remote_peer = TestClient(app, base_url="http://localhost", client=("10.1.2.3", 4000))
    assert remote_peer.get("/").status_code == 403
    # DNS rebinding: a loopback peer, but a page of another site's name
    rebound = TestClient(app, base_url="http://evil.example", client=("127.0.0.1", 4000))
    assert rebound.get("/").status_code == 403
    v6 = TestClient(app, base_url="http://[::1]:8765", client=("::1", 4000))
    assert v6.get("/").status_code == 200


def test_on_loopback_the_actor_is_the_user_running_the_inbox(cluster: InlineCluster) -> None:
    import getpass

    pause(cluster, "t1", "deploy?")
    tc = local(cluster)
    page = thread_page(tc, "t1")
    assert f"acting as <strong>{getpass.getuser()}</strong>" in page.html
    post(tc, page.form("json"), "json", value="true")
    cluster.deliver()
    (record,) = cluster.client.resume_history("review", cfg("t1"))
    assert (record.actor, record.route) == (getpass.getuser(), "ui")


def test_binding_beyond_loopback_needs_authentication(tokens_file: Path) -> None:
    for host in ("127.0.0.1", "localhost", "::1"):
        check_bind(host, None)
    with pytest.raises(ConfigurationError, match="without a token"):
        check_bind("0.0.0.0", None)
    with pytest.raises(ConfigurationError, match="without a token"):
        check_bind("inbox.example.com", "")
    check_bind("0.0.0.0", TOKEN)
    check_bind("0.0.0.0", Auth.of(tokens_file=tokens_file))
    check_bind("0.0.0.0", Auth.of(identity_header="X-Forwarded-User"))
    with pytest.raises(ConfigurationError, match="at least 16"):
        check_bind("0.0.0.0", "short")


def test_the_cli_refuses_to_serve_beyond_loopback_without_authentication(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from workers.cli import app

    for name in ("TOKEN", "TOKENS_FILE", "IDENTITY_HEADER"):
        monkeypatch.delenv(f"GRAPHRUNTIME_UI_{name}", raising=False)
    result = CliRunner().invoke(app, ["ui", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "without a token" in result.output


def test_the_cli_with_json_prints_where_it_serves_as_one_json_line(
    cluster: InlineCluster, monkeypatch: pytest.MonkeyPatch, tokens_file: Path
) -> None:
    import workers.ui
    from workers.cli import app
    from workers.client import GraphClient

    served: list[tuple[str, int, Auth, float]] = []

    def serve(client: Any, *, host: str, port: int, auth: Auth, claim_minutes: float) -> None:
        served.append((host, port, auth, claim_minutes))

    monkeypatch.delenv("GRAPHRUNTIME_UI_TOKEN", raising=False)
    monkeypatch.setenv("GRAPHRUNTIME_UI_CLAIM_MINUTES", "5")
    monkeypatch.setattr(workers.ui, "serve", serve)
    monkeypatch.setattr(GraphClient, "from_env", classmethod(lambda cls, s=None: cluster.client))
    monkeypatch.setattr(cluster.client, "close", lambda: None)
    monkeypatch.setattr("workers.cli._output.reach_services", lambda **_: ("", ""))
    result = CliRunner().invoke(app, ["ui", "--port", "8799", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"url": "http://127.0.0.1:8799/", "token_required": False}
    ((host, port, auth, minutes),) = served
    assert (host, port, auth.required, minutes) == ("127.0.0.1", 8799, False, 5)
    result = CliRunner().invoke(
        app, ["ui", "--host", "0.0.0.0", "--tokens-file", str(tokens_file), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert set(served[1][2].tokens.values()) == {"alice", "Bob Smith"}


# --- identities --------------------------------------------------------------------------


def test_a_shared_token_is_required_and_the_basic_auth_user_is_the_actor(
    cluster: InlineCluster,
) -> None:
    pause(cluster, "t1", "deploy?")
    tc = remote(cluster, Auth.of(token=TOKEN))
    refused = tc.get("/")
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].startswith("Basic")
    assert tc.get("/", headers=basic("alice", "wrong-token-wrong-token")).status_code == 401
    assert tc.get("/", headers={"authorization": f"Bearer {TOKEN}x"}).status_code == 401
    assert tc.get("/static/inbox.css").status_code == 401
    bearer = tc.get("/", headers={"authorization": f"Bearer {TOKEN}"})
    assert "acting as <strong>ui</strong>" in bearer.text
    tc.headers.update(basic("alice", TOKEN))
    page = thread_page(tc, "t1")
    assert "acting as <strong>alice</strong>" in page.html
    post(tc, page.form("json"), "json", value="true")
    cluster.deliver()
    (record,) = cluster.client.resume_history("review", cfg("t1"))
    assert record.actor == "alice"


def test_a_tokens_file_names_each_approver_by_their_token(
    cluster: InlineCluster, tokens_file: Path
) -> None:
    pause(cluster, "t1", "deploy?")
    tc = remote(cluster, Auth.of(tokens_file=tokens_file))
    assert tc.get("/").status_code == 401
    assert "acting as <strong>alice</strong>" in tc.get("/", headers=basic("", ALICE)).text
    bob = tc.get("/", headers={"authorization": f"Bearer {BOB}"})
    assert "acting as <strong>Bob Smith</strong>" in bob.text
    # a token names its approver: another name with it is refused, not believed
    impostor = tc.get("/", headers=basic("bob", ALICE))
    assert impostor.status_code == 401
    assert "'alice'" in impostor.text
    assert tc.get("/", headers=basic("alice", TOKEN)).status_code == 401
    tc.headers.update(basic("alice", ALICE))
    post(tc, thread_page(tc, "t1").form("json"), "json", value="true")
    cluster.deliver()
    (record,) = cluster.client.resume_history("review", cfg("t1"))
    assert (record.actor, record.route) == ("alice", "ui")


@pytest.mark.parametrize(
    ("text", "mode", "message"),
    [
        ("alice short", 0o600, "at least 16"),
        (f"alice {ALICE}\nbob {ALICE}", 0o600, "line 2: this token is given to another"),
        (f"{ALICE}", 0o600, "line 1: write NAME TOKEN"),
        (f"alice {ALICE}", 0o644, "chmod 600"),
        ("# nobody", 0o600, "names no approver"),
    ],
)
def test_a_bad_tokens_file_stops_the_inbox_naming_the_setting(
    tmp_path: Path, text: str, mode: int, message: str
) -> None:
    path = tmp_path / "tokens"
    path.write_text(text)
    path.chmod(mode)
    if mode != 0o600 and os.name != "posix":
        pytest.skip("file modes are POSIX")
    with pytest.raises(ConfigurationError, match=message) as info:
        read_tokens(path)
    assert "GRAPHRUNTIME_UI_TOKENS_FILE" in str(info.value)
    with pytest.raises(ConfigurationError, match="cannot read"):
        read_tokens(tmp_path / "missing")


def test_a_trusted_proxy_names_the_user_and_nobody_else_can(cluster: InlineCluster) -> None:
    pause(cluster, "t1", "deploy?")
    auth = Auth.of(identity_header="X-Forwarded-User", trusted_proxies=["10.0.0.0/24"])
    proxy = remote(cluster, auth, peer="10.0.0.7")
    page = proxy.get("/", headers={"x-forwarded-user": "carol@example.com"})
    assert "acting as <strong>carol@example.com</strong>" in page.text
    assert proxy.get("/").status_code == 401  # the proxy named nobody
    direct = remote(cluster, auth, peer="10.9.9.9")
    refused = direct.get("/", headers={"x-forwarded-user": "mallory"})
    assert refused.status_code == 401
    assert "authenticating proxy only" in refused.text
    with pytest.raises(ConfigurationError, match="header name"):
        Auth.of(identity_header="X User")
    with pytest.raises(ConfigurationError, match="TRUSTED_PROXIES"):
        Auth.of(identity_header="x-user", trusted_proxies=["not an address"])


# --- claims ------------------------------------------------------------------------------


def test_a_claim_shows_to_other_approvers_who_must_take_it_over_to_answer(
    cluster: InlineCluster, tokens_file: Path
) -> None:
    pause(cluster, "t1", "ok?", choices=["approve", "reject"])
    auth = Auth.of(tokens_file=tokens_file)
    alice, bob = remote(cluster, auth), remote(cluster, auth)
    alice.headers.update(basic("alice", ALICE))
    bob.headers.update({"authorization": f"Bearer {BOB}"})
    claim = Page(alice.get("/")).row_form("t1", "claim-form")
    assert Page(alice.get("/")).row_form("t1", "claim-form").buttons == ["claim"]
    post(alice, claim, "claim")
    listing = Page(bob.get("/"))
    assert 'data-claimed-by="alice"' in listing.html
    assert listing.row_form("t1", "claim-form").buttons == ["take over"]
    assert Page(alice.get("/")).row_form("t1", "claim-form").buttons == ["release"]
    # bob's answer is refused while alice holds it; nothing is resumed
    refused = bob.post("/resume", data={**listing.row_form("t1").inputs, "choice": '"reject"'})
    assert refused.status_code == 400
    assert "claimed by &#39;alice&#39;" in refused.text
    assert answer(cluster, "t1") is None
    # claiming it again is refused with who holds it; taking it over works
    again = bob.post(
        "/claim", data={**listing.row_form("t1", "claim-form").inputs, "action": "claim"}
    )
    assert again.status_code == 409
    assert "claimed by &#39;alice&#39; until" in again.text
    post(bob, Page(bob.get("/")).row_form("t1", "claim-form"), "take over")
    assert 'data-claimed-by="Bob Smith"' in alice.get("/").text
    landed = post(bob, Page(bob.get("/")).row_form("t1"), choice='"reject"')
    assert landed.outcomes == [("t1", "applied")]
    assert answer(cluster, "t1") == "reject"
    (record,) = cluster.client.resume_history("review", cfg("t1"))
    assert record.actor == "Bob Smith"


def test_a_claim_is_released_by_its_holder(cluster: InlineCluster) -> None:
    pause(cluster, "t1", "q?")
    tc = local(cluster)
    post(tc, Page(tc.get("/")).row_form("t1", "claim-form"), "claim")
    page = Page(tc.get("/"))
    assert "claimed by" in page.html
    post(tc, page.row_form("t1", "claim-form"), "release")
    assert "claimed by" not in tc.get("/").text
    # a wait answered meanwhile: its claim form says so
    form = Page(tc.get("/")).row_form("t1", "claim-form")
    post(tc, thread_page(tc, "t1").form("json"), "json", value="1")
    cluster.deliver()
    gone = tc.post("/claim", data={**form.inputs, "action": "claim"})
    assert gone.status_code == 409
    assert "no pending wait" in gone.text
