"""Coordinator messages written straight to Redis, as Celery and kombu would write them.

``app.send_task`` costs a client about 1-2 ms of CPU per message (kombu makes a Redis
client object, declares the queue and runs its publish machinery each time): more than
half of what a single submit costs. A coordinator message is always the same small
thing, a task name and one or a few run ids on the coordinator queue, so it is built
here once per message and pushed with ``LPUSH``, several in one round trip.

The bytes are those of Celery's task protocol 2 in kombu's Redis transport envelope (a
JSON object: the base64 body, headers, properties with a delivery tag), pushed on the
list the transport reads for priority 0, the queue's own name. A test compares them with
what ``send_task`` pushes, field by field, for the installed Celery and kombu
(tests/integration/workers/test_celery_wire.py). Delayed messages (an ETA) still go
through Celery.

A client that queued one run reads its graph's drain flag and, when no job drains,
sends the run's message: :class:`WakeOrPush` does both in one script, one round trip.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import socket
import uuid
from collections.abc import Mapping, Sequence
from queue import Empty, SimpleQueue
from typing import Any

from redis.exceptions import NoScriptError, ResponseError

from workers._drain_flag import _WAKE, DrainFlag
from workers._redis_raw import Script, connect

TASK = "graphruntime.coordinate"


def supported(transport_options: Mapping[str, Any]) -> bool:
    """Whether messages written here land where the workers read them: not with a
    global key prefix or custom priority steps, which move the transport's lists."""
    return not transport_options.get("global_keyprefix") and not transport_options.get(
        "priority_steps"
    )


def single(run_id: str) -> dict[str, Any]:
    """One run's coordinator message fields: version 1, as every worker reads them (what
    the broker's ``send_coordinates`` sends for one run, without building the model)."""
    return {"run_id": run_id, "v": 1}


def envelope(kwargs: Mapping[str, Any], queue: str, *, origin: str) -> bytes:
    """One Celery task message for ``kwargs`` on ``queue``, as kombu's Redis transport
    stores it."""
    task_id = str(uuid.uuid4())
    body = json.dumps([[], dict(kwargs), _EMBED]).encode()
    tag = str(uuid.uuid4())
    b64 = base64.b64encode(body).decode("ascii")
    p = _template(queue, origin)  # the values between: JSON literals of their own
    return (
        f'{p[0]}"{b64}"{p[1]}"{task_id}"{p[2]}"{task_id}"{p[3]}{json.dumps(repr(dict(kwargs)))}'
        f'{p[4]}"{task_id}"{p[5]}"{tag}"{p[6]}'
    ).encode()


_SLOTS = ("@body@", "@id@", "@root_id@", "@kwargsrepr@", "@correlation_id@", "@delivery_tag@")


@functools.lru_cache(maxsize=64)
def _template(queue: str, origin: str) -> tuple[str, ...]:
    """The message's JSON text around its per-message values, in :data:`_SLOTS` order
    (the fixed fields are encoded once per queue and process, not per message)."""
    message = {
        "body": _SLOTS[0],
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": {
            "lang": "py",
            "task": TASK,
            "id": _SLOTS[1],
            "shadow": None,
            "eta": None,
            "expires": None,
            "group": None,
            "group_index": None,
            "retries": 0,
            "timelimit": [None, None],
            "root_id": _SLOTS[2],
            "parent_id": None,
            "argsrepr": "()",
            "kwargsrepr": _SLOTS[3],
            "origin": origin,
            "ignore_result": None,
            "replaced_task_nesting": 0,
            "stamped_headers": None,
            "stamps": {},
        },
        "properties": {
            "correlation_id": _SLOTS[4],
            "reply_to": _REPLY_TO,
            "delivery_mode": 2,
            "delivery_info": {"exchange": "", "routing_key": queue},
            "priority": 0,
            "body_encoding": "base64",
            "delivery_tag": _SLOTS[5],
        },
    }
    text = json.dumps(message)
    parts = []
    for slot in _SLOTS:
        before, text = text.split(json.dumps(slot), 1)
        parts.append(before)
    parts.append(text)
    return tuple(parts)


def push(redis: Any, queue: str, messages: Sequence[Mapping[str, Any]]) -> None:
    """LPUSH one message per kwargs, all in one round trip."""
    origin = f"gen{os.getpid()}@{_HOST}"
    pipe = redis.pipeline(transaction=False)
    for kwargs in messages:
        pipe.lpush(queue, envelope(kwargs, queue, origin=origin))
    pipe.execute()


# The drain flag's wake-up (workers/_drain_flag.py, the protocol's one text, its keys and
# arguments first) and, when no job drains the graph (the flag is down), the run's
# coordinator message (the last argument) pushed on the queue (the last key) instead.
_WAKE_OR_PUSH = f"""
local function wake()
{_WAKE}
end
if wake() == 1 then
  return 1
end
redis.call('lpush', KEYS[#KEYS], ARGV[#ARGV])
return 0
"""


IDLE_KEEP = 8
"""Connections a :class:`WakeOrPush` keeps between calls (one per submitting thread)."""


class WakeOrPush:
    """After a single run's commit, in one round trip: if a job drains its graph (the
    flag is up; a sleeping resident is woken), nothing more; otherwise the run's
    coordinator message is pushed (see workers/_drain.py for why the order is safe).

    The script goes by ``EVALSHA`` on connections of this object's own (with the broker's
    redis-py pool settings, and a read timeout: :func:`~workers._redis_raw.connect`),
    one per calling thread at a time:
    redis-py's command path (the pool's checkout and checks, retries, instrumentation)
    costs a client three times the round trip itself, on every run. Any error is raised:
    the caller then sends the message as without this. An error reply from Redis (a
    script refused: ACLs, a cluster) leaves the connection usable; any other error drops
    it. At most :data:`IDLE_KEEP` connections are kept between calls.
    """

    def __init__(self, redis: Any, flag: DrainFlag) -> None:
        self.flag = flag
        self.queue = flag.queue
        self._redis = redis
        self._script = Script(_WAKE_OR_PUSH)
        self._idle: SimpleQueue[Any] = SimpleQueue()
        self._pid = os.getpid()
        self._closed = False

    def __call__(self, graph: str, kwargs: Mapping[str, Any]) -> bool:
        """Whether a drainer takes the run (True) or its message was pushed (False)."""
        pid = os.getpid()
        if pid != self._pid:  # forked: the parent's connections are not ours
            self._idle, self._pid = SimpleQueue(), pid
        keys, args = self.flag.wake_call(graph)
        message = envelope(kwargs, self.queue, origin=f"gen{pid}@{_HOST}")
        keys_b = [*(key.encode() for key in keys), self.queue.encode()]
        args_b = [*(str(arg).encode() for arg in args), message]
        try:
            conn = self._idle.get_nowait()
        except Empty:
            conn = connect(self._redis)
        try:
            try:
                conn.send_packed_command([self._script.call(keys_b, args_b)])
                drained = conn.read_response()
            except NoScriptError:  # a restarted or flushed Redis: load it with this call
                conn.send_packed_command([self._script.load(keys_b, args_b)])
                drained = conn.read_response()
        except ResponseError:
            self._keep(conn)
            raise
        except BaseException:
            conn.disconnect()
            raise
        self._keep(conn)
        return bool(drained)

    def _keep(self, conn: Any) -> None:
        if self._closed or self._idle.qsize() >= IDLE_KEEP:
            conn.disconnect()
        else:
            self._idle.put(conn)

    def close(self) -> None:
        """Disconnect the idle connections (and those of calls still running, when they
        end)."""
        self._closed = True
        while True:
            try:
                self._idle.get_nowait().disconnect()
            except Empty:
                return


_EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
_HOST = socket.gethostname()
_REPLY_TO = str(uuid.uuid4())  # Celery's too is one per process (no reply is ever sent)
