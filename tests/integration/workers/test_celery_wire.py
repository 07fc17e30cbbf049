"""Coordinator messages written without kombu are the ones Celery writes (real Redis).

The end-to-end suite has real ``celery worker`` processes take every such message; this
pins the bytes against the installed Celery and kombu, field by field.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from workers import _celery_wire as celery_wire
from workers.app import CeleryBroker, create_app
from workers.settings import Settings

pytestmark = pytest.mark.integration

PER_MESSAGE = {"correlation_id", "delivery_tag", "id", "root_id"}  # fresh ids per message


@pytest.fixture
def broker() -> Iterator[CeleryBroker]:
    from workers.embedded import redis_url

    queue = f"test-wire-{uuid.uuid4().hex[:8]}"
    settings = Settings(database_url="memory://", redis_url=redis_url(), coordinator_queue=queue)
    made = CeleryBroker(create_app(settings), settings)
    yield made
    made.redis.delete(queue)
    made.redis.close()


def _sent(broker: CeleryBroker, lean: bool, run_ids: list[str], per_message: int) -> list[Any]:
    broker.lean = lean
    queue = broker.settings.coordinator_queue
    broker.send_coordinates(run_ids, per_message=per_message)
    raw = broker.redis.lrange(queue, 0, -1)
    broker.redis.delete(queue)
    return [json.loads(item) for item in reversed(raw)]  # LPUSH: the first sent is last


def _comparable(message: dict[str, Any]) -> dict[str, Any]:
    headers = {k: v for k, v in message["headers"].items() if k not in PER_MESSAGE}
    headers["origin"] = headers["origin"].split("@")[0][:3]  # gen<pid>@host
    props = {k: v for k, v in message["properties"].items() if k not in PER_MESSAGE}
    props.pop("reply_to")  # one per process, either way
    body = json.loads(base64.b64decode(message["body"]))
    return {**message, "body": body, "headers": headers, "properties": props}


@pytest.mark.parametrize(("runs", "per_message"), [(1, 1), (3, 2)])
def test_a_lean_message_is_the_message_celery_sends(
    broker: CeleryBroker, runs: int, per_message: int
) -> None:
    assert broker.lean  # the default transport options allow it
    run_ids = [str(uuid.uuid4()) for _ in range(runs)]
    by_celery = _sent(broker, False, run_ids, per_message)
    lean = _sent(broker, True, run_ids, per_message)
    assert len(lean) == len(by_celery) == -(-runs // per_message)
    assert [_comparable(m) for m in lean] == [_comparable(m) for m in by_celery]
    for message in lean:
        headers, props = message["headers"], message["properties"]
        assert headers["root_id"] == headers["id"] == props["correlation_id"]
        assert props["delivery_tag"] != headers["id"]
    assert len({m["properties"]["delivery_tag"] for m in lean}) == len(lean)


def test_a_key_prefix_or_priority_steps_keep_the_messages_on_celery() -> None:
    assert celery_wire.supported({})
    assert celery_wire.supported({"visibility_timeout": 3600})
    assert not celery_wire.supported({"global_keyprefix": "app:"})
    assert not celery_wire.supported({"priority_steps": [0, 5]})
