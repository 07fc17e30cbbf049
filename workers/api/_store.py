"""/store: the nodes' shared store (``checkpoint_pg.PostgresStore``) over HTTP."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response
from starlette.routing import Route

from workers.api._context import ApiContext, ApiError
from workers.api._http import Call, endpoint, parse, query_bool
from workers.api._models import StoreDelete, StoreNamespaces, StorePut, StoreSearch


def _store(ctx: ApiContext) -> Any:
    if ctx.node_store is None:
        raise ApiError(503, "this server has no store")
    return ctx.node_store


def _labels(namespace: list[str]) -> tuple[str, ...]:
    for label in namespace:
        if not label or "." in label:
            raise ApiError(422, f"namespace labels are non-empty and have no '.': {label!r}")
    return tuple(namespace)


def put(call: Call) -> Any:
    body = parse(StorePut, call.body)
    store = _store(call.ctx)
    extra: dict[str, Any] = {} if body.ttl is None else {"ttl": body.ttl}
    store.put(_labels(body.namespace), body.key, body.value, body.index, **extra)
    return Response(status_code=204)


def get(call: Call) -> Any:
    key = call.query.get("key")
    namespace = call.query.get("namespace", "")
    if not key:
        raise ApiError(422, "query parameter key is required")
    labels = tuple(namespace.split(".")) if namespace else ()
    refresh = call.query.get("refresh_ttl")
    item = _store(call.ctx).get(
        labels, key, refresh_ttl=None if refresh is None else query_bool(call.query, "refresh_ttl")
    )
    return None if item is None else item.dict()


def delete(call: Call) -> Any:
    body = parse(StoreDelete, call.body)
    _store(call.ctx).delete(_labels(body.namespace), body.key)
    return Response(status_code=204)


def search(call: Call) -> Any:
    body = parse(StoreSearch, call.body)
    items = _store(call.ctx).search(
        tuple(body.namespace_prefix),
        filter=body.filter,
        limit=body.limit,
        offset=body.offset,
        refresh_ttl=body.refresh_ttl,
    )
    return {"items": [item.dict() for item in items]}


def namespaces(call: Call) -> Any:
    body = parse(StoreNamespaces, call.body)
    found = _store(call.ctx).list_namespaces(
        prefix=tuple(body.prefix) if body.prefix else None,
        suffix=tuple(body.suffix) if body.suffix else None,
        max_depth=body.max_depth,
        limit=body.limit,
        offset=body.offset,
    )
    return {"namespaces": [list(ns) for ns in found]}


ROUTES = [
    Route("/store/items", endpoint(put), methods=["PUT"]),
    Route("/store/items", endpoint(get), methods=["GET"]),
    Route("/store/items", endpoint(delete), methods=["DELETE"]),
    Route("/store/items/search", endpoint(search), methods=["POST"]),
    Route("/store/namespaces", endpoint(namespaces), methods=["POST"]),
]
