"""Handlers as plain functions: the request's parts in, JSON out, run in the thread pool
(the client is synchronous); errors as LangGraph's bodies (``{"detail": ...}``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from graphruntime.errors import EmptyInputError, InvalidResumeError
from workers.api._context import ApiContext, ApiError
from workers.api._json import jsonable
from workers.errors import (
    BrokerUnavailableError,
    ConfigurationError,
    GraphMismatchError,
    NotDispatchedError,
    ResumeConflictError,
    RunNotFoundError,
    RunTimeoutError,
    StoreUnavailableError,
    ThreadBusyError,
    UnknownGraphError,
)

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger(__name__)


@dataclass
class Call:
    """One request, as a handler sees it."""

    ctx: ApiContext
    path: dict[str, str]
    query: QueryParams
    body: Any
    actor: str | None
    headers: Any


def validation_detail(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "body"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown field"
        parts.append(f"{where}: {message}")
    return "; ".join(parts)


def parse(model: type[M], data: Any) -> M:
    try:
        return model.model_validate({} if data is None else data)
    except ValidationError as exc:
        raise ApiError(422, validation_detail(exc)) from None


async def read_json(request: Request) -> Any:
    raw = await request.body()
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(422, f"The body is not JSON: {exc}") from None


def error_response(exc: BaseException) -> JSONResponse:
    """LangGraph's status and body for an error raised by a handler."""
    status = 500
    if isinstance(exc, ApiError):
        status = exc.status
    elif isinstance(exc, RunNotFoundError | UnknownGraphError):
        status = 404
    elif isinstance(exc, ThreadBusyError | ResumeConflictError | GraphMismatchError):
        status = 409
    elif isinstance(exc, InvalidResumeError | EmptyInputError):
        status = 400
    elif isinstance(exc, StoreUnavailableError | BrokerUnavailableError | NotDispatchedError):
        status = 503
    elif isinstance(exc, RunTimeoutError):
        status = 504
    elif isinstance(exc, ConfigurationError | ValueError | TypeError):
        status = 422
    detail = exc.detail if isinstance(exc, ApiError) else f"{type(exc).__name__}: {exc}"
    if status == 500:
        detail = f"Internal error: {type(exc).__name__}: {exc}"
    else:
        log.info("request refused (%d): %s", status, detail)
    return JSONResponse({"detail": detail}, status_code=status)


def endpoint(fn: Callable[[Call], Any], *, status: int = 200) -> Callable[[Request], Any]:
    """A Starlette endpoint that runs ``fn`` in the thread pool."""

    async def handle(request: Request) -> Response:
        body = None
        if request.method in ("POST", "PUT", "PATCH", "DELETE"):
            try:
                body = await read_json(request)
            except ApiError as exc:
                return error_response(exc)
        call = Call(
            ctx=request.app.state.ctx,
            path=dict(request.path_params),
            query=request.query_params,
            body=body,
            actor=request.scope.get("state", {}).get("actor"),
            headers=request.headers,
        )
        try:
            result = await run_in_threadpool(fn, call)
        except Exception as exc:
            response = error_response(exc)
            if response.status_code >= 500:
                log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
            return response
        if isinstance(result, Response):
            return result
        return JSONResponse(jsonable(result), status_code=status)

    return handle


def query_bool(query: QueryParams, name: str, default: bool = False) -> bool:
    value = query.get(name)
    if value is None:
        return default
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise ApiError(422, f"query parameter {name} must be true or false, not {value!r}")


def query_int(query: QueryParams, name: str, default: int, low: int = 0, high: int = 10_000) -> int:
    value = query.get(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ApiError(422, f"query parameter {name} must be an integer, not {value!r}") from None
    if not low <= number <= high:
        raise ApiError(422, f"query parameter {name} must be between {low} and {high}")
    return number
