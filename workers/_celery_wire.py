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
import json
import os
import socket
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from workers._drain import _WAKE, RESIDENT, DrainFlag

TASK = "graphruntime.coordinate"


def supported(transport_options: Mapping[str, Any]) -> bool:
    """Whether messages written here land where the workers read them: not with a
    global key prefix or custom priority steps, which move the transport's lists."""
    return not transport_options.get("global_keyprefix") and not transport_options.get(
        "priority_steps"
    )


def envelope(kwargs: Mapping[str, Any], queue: str, *, origin: str) -> bytes:
    """One Celery task message for ``kwargs`` on ``queue``, as kombu's Redis transport
    stores it."""
    task_id = str(uuid.uuid4())
    body = json.dumps([[], dict(kwargs), _EMBED]).encode()
    message = {
        "body": base64.b64encode(body).decode("ascii"),
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": {
            "lang": "py",
            "task": TASK,
            "id": task_id,
            "shadow": None,
            "eta": None,
            "expires": None,
            "group": None,
            "group_index": None,
            "retries": 0,
            "timelimit": [None, None],
            "root_id": task_id,
            "parent_id": None,
            "argsrepr": "()",
            "kwargsrepr": repr(dict(kwargs)),
            "origin": origin,
            "ignore_result": None,
            "replaced_task_nesting": 0,
            "stamped_headers": None,
            "stamps": {},
        },
        "properties": {
            "correlation_id": task_id,
            "reply_to": _REPLY_TO,
            "delivery_mode": 2,
            "delivery_info": {"exchange": "", "routing_key": queue},
            "priority": 0,
            "body_encoding": "base64",
            "delivery_tag": str(uuid.uuid4()),
        },
    }
    return json.dumps(message).encode()


def push(redis: Any, queue: str, messages: Sequence[Mapping[str, Any]]) -> None:
    """LPUSH one message per kwargs, all in one round trip."""
    origin = f"gen{os.getpid()}@{_HOST}"
    pipe = redis.pipeline(transaction=False)
    for kwargs in messages:
        pipe.lpush(queue, envelope(kwargs, queue, origin=origin))
    pipe.execute()


# The drain flag's wake-up (workers/_drain.py, the protocol's one text) and, when no job
# drains the graph (the flag is down), the run's coordinator message pushed instead.
_WAKE_OR_PUSH = f"""
local function wake()
{_WAKE}
end
if wake() == 1 then
  return 1
end
redis.call('lpush', KEYS[3], ARGV[2])
return 0
"""


class WakeOrPush:
    """After a single run's commit, in one round trip: if a job drains its graph (the
    flag is up; a sleeping resident is woken), nothing more; otherwise the run's
    coordinator message is pushed (see workers/_drain.py for why the order is safe)."""

    def __init__(self, redis: Any, flag: DrainFlag) -> None:
        self.flag = flag
        self.queue = flag.queue
        self._script = redis.register_script(_WAKE_OR_PUSH)  # EVALSHA: no script text sent
        self._origin = f"gen{os.getpid()}@{_HOST}"

    def __call__(self, graph: str, kwargs: Mapping[str, Any]) -> bool:
        """Whether a drainer takes the run (True) or its message was pushed (False)."""
        flag = self.flag
        keys = [flag.key(graph), flag.wake_key(graph), self.queue]
        message = envelope(kwargs, self.queue, origin=self._origin)
        return bool(self._script(keys=keys, args=[RESIDENT, message]))


_EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
_HOST = socket.gethostname()
_REPLY_TO = str(uuid.uuid4())  # Celery's too is one per process (no reply is ever sent)
