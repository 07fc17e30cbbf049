"""The ASGI app: every route, the guard, LangGraph's error bodies, /ok, /info, /docs."""

from __future__ import annotations

import html
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from workers.api import _assistants, _crons, _run_routes, _store, _threads
from workers.api._context import ApiContext
from workers.api._guard import Guard
from workers.api._http import error_response

LOOPBACK_ORIGINS = r"^https?://(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$"
"""Pages served from this machine (a local Agent Chat UI) may call the API."""


def _version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


async def ok(request: Request) -> Response:
    return JSONResponse({"ok": True})


async def info(request: Request) -> Response:
    return JSONResponse(
        {
            "version": _version("graphruntime"),
            "graphruntime": True,
            "flags": {"assistants": True, "crons": True, "langsmith": False},
            "host": {"kind": "self-hosted"},
        }
    )


def _api_routes() -> list[BaseRoute]:
    return [
        *_assistants.ROUTES,
        *_crons.ROUTES,
        *_threads.ROUTES,
        *_run_routes.ROUTES,
        *_store.ROUTES,
    ]


def openapi(routes: list[BaseRoute]) -> dict[str, Any]:
    """An OpenAPI document of the routes: paths, methods, summaries."""
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        if not isinstance(route, Route):
            continue
        handler = getattr(route.endpoint, "__wrapped_handler__", route.endpoint)
        summary = (handler.__doc__ or handler.__name__).strip().splitlines()[0]
        for method in sorted((route.methods or set()) - {"HEAD"}):
            paths.setdefault(route.path, {})[method.lower()] = {
                "summary": summary,
                "responses": {"200": {"description": "OK"}},
            }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "graphrun serve: the LangGraph Server API on graphruntime's workers",
            "version": _version("graphruntime") or "dev",
        },
        "paths": paths,
    }


def create_app(ctx: ApiContext) -> Starlette:
    """The API over ``ctx`` (see :func:`workers.api.serve` for a server)."""
    api = _api_routes()
    document = openapi(api)

    async def openapi_json(request: Request) -> Response:
        return JSONResponse(document)

    async def docs(request: Request) -> Response:
        rows = "".join(
            f"<tr><td>{html.escape(method.upper())}</td><td><code>{html.escape(path)}</code>"
            f"</td><td>{html.escape(op['summary'])}</td></tr>"
            for path, ops in sorted(document["paths"].items())
            for method, op in ops.items()
        )
        return HTMLResponse(
            "<!doctype html><title>graphrun serve API</title><h1>graphrun serve API</h1>"
            "<p>The LangGraph Server API; machine-readable: <a href='/openapi.json'>"
            f"/openapi.json</a></p><table>{rows}</table>"
        )

    async def on_error(request: Request, exc: Exception) -> Response:
        return error_response(exc)

    routes: list[BaseRoute] = [
        Route("/ok", ok, methods=["GET"]),
        Route("/info", info, methods=["GET"]),
        Route("/openapi.json", openapi_json, methods=["GET"]),
        Route("/docs", docs, methods=["GET"]),
        *api,
    ]
    app = Starlette(
        routes=routes,
        middleware=[
            # outermost: a browser's preflight carries no token
            Middleware(
                CORSMiddleware,
                allow_origins=list(ctx.cors_origins),
                allow_origin_regex=LOOPBACK_ORIGINS,
                allow_methods=["*"],
                allow_headers=["*"],
                expose_headers=["content-location", "location"],
            ),
            Middleware(Guard, token=ctx.token, max_body=ctx.max_body),
        ],
        exception_handlers={Exception: on_error},
    )
    app.state.ctx = ctx
    return app
