"""What needs a graph's code, asked of the workers that serve it.

A client (an ops box, ``graphrun serve``) need not import the application's graphs:
runs, resumes, the inbox and cancels go through Postgres and the broker as ever, and
what needs the graph itself (a thread's state with its ``next`` tasks, an edit of its
state, the drawing and schemas of a graph) is a **request** on a Redis list of that
graph, ``<coordinator queue>:graph:<name>``. Every worker's main process answers the
lists of the graphs it serves (:class:`GraphRequestListener`), with its own client:
the same code a local graph would run. The answer is a typed-serde value (or an
error, rebuilt with its type) pushed on a reply list that the client pops with a
timeout.

Workers also announce the graphs they serve in the hash ``<coordinator queue>:graphs``
(graph -> last announcement, Unix time), refreshed every heartbeat interval: a client
tells an unknown graph from a served one, and suggests the nearest name.
"""

from __future__ import annotations

import base64
import difflib
import json
import logging
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from graphruntime.checkpoint import SerializerProtocol
from graphruntime.pregel.driver import run_options
from workers._retrying import LISTENER_OUTAGE
from workers.errors import (
    BrokerUnavailableError,
    InvalidRequestError,
    RunTimeoutError,
    UnknownGraphError,
    error_info,
    rebuild_error,
)

if TYPE_CHECKING:
    from workers.client import GraphClient

log = logging.getLogger(__name__)

REQUEST_TIMEOUT = 30.0
"""Seconds a client waits for a worker to answer a request."""
REPLY_TTL = 120
"""Seconds an unread reply is kept."""
ANSWER_THREADS = 4
"""Requests one worker answers at once."""


def graphs_key(prefix: str) -> str:
    return f"{prefix}:graphs"


def request_list(prefix: str, graph: str) -> str:
    return f"{prefix}:graph:{graph}"


def announce(redis: Any, prefix: str, graphs: Sequence[str]) -> None:
    """Record that a worker serves ``graphs`` now."""
    if graphs:
        now = f"{time.time():.3f}"
        redis.hset(graphs_key(prefix), mapping=dict.fromkeys(graphs, now))


def served_graphs(redis: Any, prefix: str, stale: float) -> list[str]:
    """The graphs some worker announced in the last ``stale`` seconds."""
    found = redis.hgetall(graphs_key(prefix))
    cutoff = time.time() - stale
    names = []
    for name, at in found.items():
        text = name.decode() if isinstance(name, bytes) else str(name)
        try:
            fresh = float(at) >= cutoff
        except ValueError:
            fresh = False
        if fresh:
            names.append(text)
    return sorted(names)


def unknown_graph(
    name: str, local: Sequence[str], served: Sequence[str] | None
) -> UnknownGraphError:
    """The error for a graph nobody serves, with the nearest names."""
    known = sorted({*local, *(served or ())})
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    if served is None:
        where = (
            f"this process serves only the graphs configured in GRAPHRUNTIME_GRAPHS "
            f"({', '.join(local) or 'none'}), and it cannot ask the workers (no broker)"
        )
    else:
        where = (
            f"no live worker serves it (served now: {', '.join(known) or 'none'}). Register it "
            "with the workers (GRAPHRUNTIME_GRAPHS or `graphrun worker --config langgraph.json`) "
            "and start them"
        )
    return UnknownGraphError(f"Unknown graph {name!r}: {where}.{hint}")


def _encode(serde: SerializerProtocol, value: Any) -> str:
    kind, data = serde.dumps_typed(value)
    return json.dumps({"kind": kind, "data": base64.b64encode(data).decode("ascii")})


def _decode(serde: SerializerProtocol, text: str | bytes) -> Any:
    body = json.loads(text)
    return serde.loads_typed((body["kind"], base64.b64decode(body["data"])))


class GraphRequests:
    """The client's side: ask the workers serving a graph to run one of :data:`OPS`."""

    def __init__(self, redis: Any, prefix: str, serde: SerializerProtocol) -> None:
        self.redis = redis
        self.prefix = prefix
        self.serde = serde

    def served(self, stale: float) -> list[str]:
        try:
            return served_graphs(self.redis, self.prefix, stale)
        except Exception as exc:
            raise BrokerUnavailableError(
                f"Could not read the graphs the workers serve: the broker is unreachable ({exc})"
            ) from exc

    def call(self, graph: str, op: str, timeout: float = REQUEST_TIMEOUT, **args: Any) -> Any:
        """Run ``op`` with ``args`` on a worker serving ``graph``; its result, or its error
        re-raised with its type."""
        request_id = uuid.uuid4().hex
        reply = f"{self.prefix}:reply:{request_id}"
        body = json.dumps(
            {
                "id": request_id,
                "op": op,
                "graph": graph,
                "reply": reply,
                "args": _encode(self.serde, args),
                "expires": time.time() + timeout,
            }
        )
        try:
            self.redis.lpush(request_list(self.prefix, graph), body)
            answer = self.redis.brpop([reply], timeout=max(1, int(timeout + 0.999)))
        except Exception as exc:
            raise BrokerUnavailableError(
                f"Could not ask the workers about graph {graph!r}: the broker is unreachable "
                f"({exc})"
            ) from exc
        if answer is None:
            raise RunTimeoutError(
                f"No worker answered a {op} request for graph {graph!r} within {timeout:.0f}s: "
                "is a worker serving it running (graphrun status)?"
            )
        outcome = json.loads(answer[1])
        if "error" in outcome:
            raise rebuild_error(outcome["error"])
        return _decode(self.serde, outcome["value"])


def _answer(client: GraphClient, op: str, graph: str, args: dict[str, Any]) -> Any:
    """One request, answered with the worker's own (local) graph."""
    if op == "get_state":
        return client.get_state(graph, args["config"], subgraphs=args.get("subgraphs", False))
    if op == "get_state_history":
        return list(client.get_state_history(graph, args["config"], **args.get("kwargs", {})))
    if op == "update_state":
        return client.update_state(graph, args["config"], args["values"], args.get("as_node"))
    if op == "bulk_update_state":
        return client.bulk_update_state(graph, args["config"], args["supersteps"])
    if op == "clear_cache":
        client.clear_cache(graph, args.get("nodes"))
        return None
    if op == "check_context":
        run_options(client.registry.get(graph), {}, context=args["context"])
        return None
    if op == "graph_info":
        from workers.graph_info import graph_info

        return graph_info(client.registry.get(graph), **args)
    raise InvalidRequestError(f"unknown graph request {op!r}")


class GraphRequestListener:
    """A worker's side: announces its graphs and answers their requests until stopped."""

    def __init__(
        self,
        client: GraphClient,
        redis: Any,
        prefix: str,
        graphs: Sequence[str],
        interval: float,
    ) -> None:
        self.client = client
        self.redis = redis
        self.prefix = prefix
        self.graphs = list(graphs)
        self.interval = interval
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(ANSWER_THREADS, thread_name_prefix="graphruntime-graph")

    def handle(self, raw: bytes | str) -> None:
        serde = self.client.saver.serde
        try:
            request = json.loads(raw)
            reply = str(request["reply"])
        except (ValueError, KeyError, TypeError):
            log.warning("dropping a malformed graph request: %.200r", raw)
            return
        if float(request.get("expires") or 0) < time.time():
            return  # its client gave up: answering would only leave a reply nobody reads
        try:
            args = _decode(serde, request["args"])
            value = _answer(self.client, str(request["op"]), str(request["graph"]), args)
            outcome: dict[str, Any] = {"value": _encode(serde, value)}
        except Exception as exc:  # noqa: BLE001 - the error goes back to the client
            outcome = {"error": error_info(exc)}
        pipe = self.redis.pipeline()
        pipe.lpush(reply, json.dumps(outcome))
        pipe.expire(reply, REPLY_TTL)
        pipe.execute()

    def run(self) -> None:
        keys = [request_list(self.prefix, g) for g in self.graphs]
        announced = 0.0
        failed_turns = 0
        while not self._stop.is_set():
            try:
                if time.monotonic() - announced >= self.interval:
                    announce(self.redis, self.prefix, self.graphs)
                    announced = time.monotonic()
                if not keys:
                    self._stop.wait(self.interval)
                    continue
                item = self.redis.brpop(keys, timeout=1)
                if item is not None:
                    self._pool.submit(self._safely, item[1])
                failed_turns = 0
            except Exception:  # the listener must outlive outages
                log.warning("graph requests: the broker failed; retrying", exc_info=True)
                self._stop.wait(LISTENER_OUTAGE.delay(failed_turns))
                failed_turns += 1

    def _safely(self, raw: bytes) -> None:
        try:
            self.handle(raw)
        except Exception:  # a reply that could not be sent: the client times out
            log.warning("graph request not answered", exc_info=True)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="graphruntime-graph-requests", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
