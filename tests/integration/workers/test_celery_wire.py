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
from workers._drain_flag import DrainFlag
from workers._redis_raw import READ_TIMEOUT, Script
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


def test_a_single_runs_fields_are_the_brokers() -> None:
    from workers.app import _coordinate_kwargs

    run_id = str(uuid.uuid4())
    assert celery_wire.single(run_id) == _coordinate_kwargs([run_id])


def test_a_key_prefix_or_priority_steps_keep_the_messages_on_celery() -> None:
    assert celery_wire.supported({})
    assert celery_wire.supported({"visibility_timeout": 3600})
    assert not celery_wire.supported({"global_keyprefix": "app:"})
    assert not celery_wire.supported({"priority_steps": [0, 5]})


def _flag_state(broker: CeleryBroker, queue: str, graph: str) -> dict[str, Any]:
    """Every key of ``queue``'s drain flags that names ``graph`` (the graph's name made
    ``G``), with its value: whatever keys the protocol uses."""
    redis: Any = broker.redis
    out: dict[str, Any] = {}
    for raw in redis.scan_iter(match=f"*{queue}*"):
        name = raw.decode()
        if name == queue or graph not in name:
            continue
        kind = redis.type(raw).decode()
        if kind == "string":
            value: Any = redis.get(raw)
        elif kind == "list":
            value = redis.lrange(raw, 0, -1)
        elif kind == "zset":
            value = [member.decode().replace(graph, "G") for member in redis.zrange(raw, 0, -1)]
        else:
            value = kind
        out[name.replace(graph, "G")] = value
    return out


@pytest.mark.parametrize("flag_up", [False, True])
@pytest.mark.parametrize("pending_wake", [False, True])
@pytest.mark.parametrize("sleeper", [False, True])
def test_wake_or_push_wakes_as_the_drain_flag_does_and_else_pushes_the_message(
    broker: CeleryBroker, flag_up: bool, pending_wake: bool, sleeper: bool
) -> None:
    queue = broker.settings.coordinator_queue
    flag = DrainFlag(broker.redis, queue)
    wake_or_push = celery_wire.WakeOrPush(broker.redis, flag)
    ends = []
    for graph, by_flag in (("by-flag", True), ("by-script", False)):
        if flag_up:
            broker.redis.set(flag.key(graph), "1")
        if pending_wake:
            broker.redis.lpush(flag.wake_key(graph), "1")
        if sleeper:  # a resident asleep on its own wake-up list, just now
            seconds, micros = broker.redis.time()  # Redis' clock, as the residents score
            broker.redis.zadd(
                flag.sleepers_key(graph), {f"res-{graph}": seconds * 1000 + micros // 1000}
            )
        if by_flag:
            drained = flag.wake(graph)
            if not drained:  # what the client then does: the run's message
                broker.send_coordinates(["r1"])
        else:
            drained = wake_or_push(graph, {"run_id": "r1", "v": 1})
        pushed = [json.loads(m) for m in broker.redis.lrange(queue, 0, -1)]
        ends.append((drained, _flag_state(broker, queue, graph)))
        broker.redis.delete(queue)
        for key in broker.redis.scan_iter(match=f"*{queue}*"):
            broker.redis.delete(key)
        if not drained:
            assert len(pushed) == 1
            assert json.loads(base64.b64decode(pushed[0]["body"]))[1] == {"run_id": "r1", "v": 1}
        else:
            assert pushed == []
    assert ends[0] == ends[1]
    assert ends[1][0] is flag_up


def test_a_single_submit_reads_the_flag_and_sends_its_message_in_one_script(
    broker: CeleryBroker, pg_url: str
) -> None:
    client = _client(broker, pg_url)
    queue = broker.settings.coordinator_queue
    flag = DrainFlag(broker.redis, queue)
    sent = _count_calls(broker, "send_coordinates")
    try:
        assert client.wake_or_push is not None  # Celery's broker, messages written here
        config: Any = {"configurable": {"thread_id": f"wire-{uuid.uuid4()}"}}
        first = client.submit("chain", {"log": []}, config)
        pushed = [json.loads(m) for m in broker.redis.lrange(queue, 0, -1)]
        assert len(pushed) == 1
        assert json.loads(base64.b64decode(pushed[0]["body"]))[1] == {
            "run_id": first.run_id,
            "v": 1,
        }
        broker.redis.delete(queue)
        flag.raise_(["chain"])  # a job drains the graph: no message, a wake-up instead
        client.submit("chain", {"log": []}, {"configurable": {"thread_id": f"w-{uuid.uuid4()}"}})
        assert broker.redis.llen(queue) == 0
        assert broker.redis.lrange(flag.wake_key("chain"), 0, -1) == [b"1"]
        assert sent == []  # the broker's own path was never needed
    finally:
        broker.redis.delete(flag.key("chain"), flag.wake_key("chain"))
        client.close()


def test_a_single_submit_whose_script_fails_sends_its_message_as_before(
    broker: CeleryBroker, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = _client(broker, pg_url)
    assert client.wake_or_push is not None
    # a script Redis has not loaded (EVAL runs it) and refuses
    failing = Script("return redis.call('no_such_command')")
    monkeypatch.setattr(client.wake_or_push, "_script", failing)
    sent = _count_calls(broker, "send_coordinates")
    try:
        config: Any = {"configurable": {"thread_id": f"wire-{uuid.uuid4()}"}}
        handle = client.submit("chain", {"log": []}, config)
        assert sent == [[handle.run_id]]  # the script failed: the message went by the broker
        assert broker.redis.llen(broker.settings.coordinator_queue) == 1
        assert client.wake_or_push is None  # refused by Redis: not tried at every submit
    finally:
        client.close()


def test_wake_or_push_loads_its_script_again_after_a_flush(broker: CeleryBroker) -> None:
    flag = DrainFlag(broker.redis, broker.settings.coordinator_queue)
    wake_or_push = celery_wire.WakeOrPush(broker.redis, flag)
    try:
        assert wake_or_push("g", {"run_id": "r1", "v": 1}) is False
        broker.redis.script_flush()
        assert wake_or_push("g", {"run_id": "r2", "v": 1}) is False
        assert broker.redis.llen(flag.queue) == 2
        assert broker.redis.script_exists(wake_or_push._script.sha.decode()) == [True]
    finally:
        wake_or_push.close()


def test_connections_of_its_own_have_a_read_timeout(broker: CeleryBroker) -> None:
    """The broker's client sets no socket timeout; the submit script's and a resident's
    connections do, so a half-open connection raises instead of blocking for ever."""
    assert broker.redis.connection_pool.connection_kwargs.get("socket_timeout") is None
    flag = DrainFlag(broker.redis, broker.settings.coordinator_queue)
    wake_or_push = celery_wire.WakeOrPush(broker.redis, flag)
    try:
        wake_or_push("g", {"run_id": "r1", "v": 1})
        conn = wake_or_push._idle.get_nowait()
        assert conn.socket_timeout == READ_TIMEOUT
        wake_or_push._idle.put(conn)
        assert flag.sleep(["g"], "a-resident", 0.01) == (False, False)
        assert flag._own is not None
        assert flag._own._conn.socket_timeout == READ_TIMEOUT
    finally:
        wake_or_push.close()
        flag.close()
        broker.redis.delete(flag.queue, flag.key("g"))


def _client(broker: CeleryBroker, pg_url: str) -> Any:
    from graphruntime.checkpoint.memory import InMemorySaver
    from workers.client import GraphClient
    from workers.registry import GraphRegistry
    from workers.store import PostgresRunStore, make_pool

    store = PostgresRunStore(make_pool(pg_url))
    store.setup()
    return GraphClient(
        settings=broker.settings,
        registry=GraphRegistry.parse("chain=tests.e2e.graphs:chain_graph"),
        saver=InMemorySaver(),
        store=store,
        broker=broker,
    )


def _count_calls(broker: CeleryBroker, name: str) -> list[Any]:
    calls: list[Any] = []
    method = getattr(broker, name)

    def counted(run_ids: Any, **kwargs: Any) -> Any:
        calls.append(list(run_ids))
        return method(run_ids, **kwargs)

    setattr(broker, name, counted)
    return calls
