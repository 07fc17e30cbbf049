"""A worker says at start when the broker would lose waiting resume messages on a restart
(Redis without AOF): those messages exist only in Redis."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.private_cluster import PrivateRedis
from workers.app import CeleryBroker, create_app
from workers.settings import Settings

pytestmark = pytest.mark.integration


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[tuple[CeleryBroker, PrivateRedis]]:
    server = PrivateRedis(tmp_path)
    server.start()
    settings = Settings(
        database_url="memory://", redis_url=server.url, resume_queue="test:resume:aof"
    )
    celery_broker = CeleryBroker(create_app(settings), settings)
    try:
        yield celery_broker, server
    finally:
        celery_broker.redis.close()
        server.stop()


def test_a_broker_without_aof_is_reported_and_one_with_it_is_not(
    broker: tuple[CeleryBroker, PrivateRedis], caplog: pytest.LogCaptureFixture
) -> None:
    celery_broker, _ = broker
    caplog.set_level(logging.WARNING, logger="workers.app")
    assert celery_broker.check_persistence()
    assert not caplog.records
    celery_broker.redis.config_set("appendonly", "no")
    assert not celery_broker.check_persistence()
    (record,) = caplog.records
    assert "without AOF (appendonly=no)" in record.getMessage()
    assert "test:resume:aof" in record.getMessage()
    assert "appendonly yes" in record.getMessage()


def test_an_unreachable_broker_is_not_reported_as_persistent(
    broker: tuple[CeleryBroker, PrivateRedis],
) -> None:
    celery_broker, server = broker
    server.stop()
    assert not celery_broker.check_persistence()
