"""Checking the URLs and waiting for Postgres and Redis (workers/services.py): errors name
the setting and where it points, never a password, and a wait ends within its bound."""

from __future__ import annotations

import socket
import time

import pytest

from workers.errors import BrokerUnavailableError, ConfigurationError, StoreUnavailableError
from workers.services import (
    check_urls,
    postgres_location,
    redacted,
    redis_location,
    wait_for_postgres,
    wait_for_redis,
)
from workers.settings import Settings


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("url", "where"),
    [
        ("postgresql://app:pw@db.internal:6543/orders", "db.internal:6543/orders"),
        ("postgresql://app@db/orders", "db:5432/orders"),
        ("postgresql://postgres:@/postgres?host=/run/pg", "socket /run/pg, database postgres"),
        ("host=db port=5433 dbname=x user=u password=pw", "db:5433/x"),
    ],
)
def test_postgres_location_names_host_port_and_database(url: str, where: str) -> None:
    assert postgres_location(url) == where


@pytest.mark.parametrize(
    ("url", "where"),
    [
        ("redis://:pw@broker:6380/2", "broker:6380/2"),
        ("redis://broker", "broker:6379/0"),
        ("redis+socket:///run/redis.sock", "socket /run/redis.sock"),
        ("rediss://user:pw@broker:6390/1", "broker:6390/1"),
    ],
)
def test_redis_location_names_host_port_and_db(url: str, where: str) -> None:
    assert redis_location(url) == where


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgres//app:s3cret@db/x", "DATABASE_URL is not a Postgres URL"),
        ("mysql://app:s3cret@db/x", "DATABASE_URL is not a Postgres URL"),
        ("postgresql://app:s3cret@db:fivefour/x", "DATABASE_URL: port 'fivefour' is not a number"),
    ],
)
def test_a_malformed_database_url_is_refused_by_name_without_its_password(
    url: str, says: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        postgres_location(url)
    assert says in str(caught.value)
    assert "s3cret" not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://:s3cret@broker:6379/0", "REDIS_URL must start with redis://"),
        ("broker:6379", "REDIS_URL must start with redis://"),
        ("redis://:s3cret@broker:port/0", "REDIS_URL is malformed"),
        ("redis://:s3cret@broker:6379/zero", "REDIS_URL is malformed"),
    ],
)
def test_a_malformed_redis_url_is_refused_by_name_without_its_password(url: str, says: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        redis_location(url)
    assert says in str(caught.value)
    assert "s3cret" not in str(caught.value)


def test_redacted_hides_only_the_password() -> None:
    assert redacted("postgresql://app:s3cret@db:5432/x") == "postgresql://app:***@db:5432/x"
    assert redacted("redis://broker:6379/0") == "redis://broker:6379/0"


def test_check_urls_checks_both_before_reaching_either() -> None:
    settings = Settings(database_url="postgresql://a@b/c", redis_url="amqp://broker")
    with pytest.raises(ConfigurationError, match="REDIS_URL must start with"):
        check_urls(settings)
    # a command that reads Postgres only does not need the broker's URL at all
    assert check_urls(Settings(database_url="postgresql://a@b/c"), redis=False) == (
        "postgresql://a@b/c",
        "",
    )


def test_waiting_for_an_unreachable_postgres_ends_in_time_naming_it() -> None:
    port = closed_port()
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError) as caught:
        wait_for_postgres(f"postgresql://app:s3cret@127.0.0.1:{port}/orders", timeout=0.5)
    assert time.monotonic() - started < 60  # bounded: a generous ceiling, not a timing test
    message = str(caught.value)
    assert message.startswith(f"DATABASE_URL: Postgres at 127.0.0.1:{port}/orders did not answer")
    assert "GRAPHRUNTIME_CONNECT_TIMEOUT" in message
    assert "s3cret" not in message


def test_waiting_for_an_unreachable_redis_ends_in_time_naming_it() -> None:
    port = closed_port()
    with pytest.raises(BrokerUnavailableError) as caught:
        wait_for_redis(f"redis://:s3cret@127.0.0.1:{port}/3", timeout=0.5)
    message = str(caught.value)
    assert message.startswith(f"REDIS_URL: Redis at 127.0.0.1:{port}/3 did not answer")
    assert "s3cret" not in message


def test_the_wait_is_a_setting_with_a_default_of_a_few_seconds() -> None:
    assert Settings().connect_timeout == 5.0
    with pytest.raises(ValueError, match="connect_timeout"):
        Settings(connect_timeout=0)
