"""graphrun serve's guard: loopback without a token, the token otherwise, body size."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from workers.api import check_bind
from workers.api._guard import Guard
from workers.errors import ConfigurationError

TOKEN = "t" * 24


async def echo(request: Request) -> JSONResponse:
    body = await request.body()
    return JSONResponse({"actor": request.scope["state"].get("actor"), "size": len(body)})


def app(token: str | None, max_body: int = 100) -> Starlette:
    return Starlette(
        routes=[Route("/echo", echo, methods=["GET", "POST"]), Route("/ok", echo)],
        middleware=[Middleware(Guard, token=token, max_body=max_body)],
    )


def test_without_a_token_only_loopback_peers() -> None:
    remote = TestClient(app(None), client=("203.0.113.9", 5000))
    assert remote.get("/echo").status_code == 403
    assert remote.get("/ok").status_code == 200  # health checks need no token
    local = TestClient(app(None), client=("127.0.0.1", 5000))
    assert local.get("/echo").json()["actor"] == "api"


def test_the_token_as_api_key_or_bearer() -> None:
    client = TestClient(app(TOKEN), client=("203.0.113.9", 5000))
    refused = client.get("/echo")
    assert refused.status_code == 401
    assert "x-api-key" in refused.json()["detail"]
    assert client.get("/echo", headers={"x-api-key": "wrong" * 5}).status_code == 401
    assert client.get("/echo", headers={"x-api-key": TOKEN}).status_code == 200
    assert client.get("/echo", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_a_body_over_the_limit_is_413_before_the_handler() -> None:
    client = TestClient(app(None), client=("127.0.0.1", 5000))
    assert client.post("/echo", content=b"x" * 100).json()["size"] == 100
    too_big = client.post("/echo", content=b"x" * 101)
    assert too_big.status_code == 413

    def chunks() -> Iterator[bytes]:
        yield b"x" * 60
        yield b"x" * 60

    assert client.post("/echo", content=chunks()).status_code == 413


def test_binding_beyond_loopback_needs_a_token() -> None:
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", TOKEN)
    with pytest.raises(ConfigurationError, match="GRAPHRUNTIME_API_TOKEN"):
        check_bind("0.0.0.0", None)
    with pytest.raises(ConfigurationError, match="at least"):
        check_bind("0.0.0.0", "short")


def test_browsers_on_this_machine_may_call_it_others_not() -> None:
    from workers.api._app import create_app
    from workers.api._context import ApiContext

    ctx = ApiContext(client=None, graphs={}, token=TOKEN, cors_origins=("https://ops.example",))  # type: ignore[arg-type]
    client = TestClient(create_app(ctx), client=("127.0.0.1", 5000))
    preflight = {
        "access-control-request-method": "POST",
        "access-control-request-headers": "x-api-key",
    }
    local = client.options("/threads", headers={"origin": "http://localhost:3000", **preflight})
    assert local.status_code == 200  # no token needed for the preflight
    assert local.headers["access-control-allow-origin"] == "http://localhost:3000"
    listed = client.options("/threads", headers={"origin": "https://ops.example", **preflight})
    assert listed.headers["access-control-allow-origin"] == "https://ops.example"
    other = client.options("/threads", headers={"origin": "https://evil.example", **preflight})
    assert "access-control-allow-origin" not in other.headers
