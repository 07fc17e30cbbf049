"""Checkpoint ids: UUIDv6 layout, step in the clock sequence, ordering."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from graphruntime.checkpoint import uuid6
from graphruntime.checkpoint._id import utc_now_iso, uuid6_str


def test_is_version_6_rfc_variant() -> None:
    value = uuid6()
    assert isinstance(value, uuid.UUID)
    assert value.version == 6
    assert value.variant == uuid.RFC_4122


@pytest.mark.parametrize(
    ("step", "group"),
    [(-2, "bffe"), (-1, "bfff"), (0, "8000"), (1, "8001"), (0x3FFF, "bfff"), (0x4000, "8000")],
)
def test_clock_seq_encodes_the_step(step: int, group: str) -> None:
    assert str(uuid6(clock_seq=step)).split("-")[3] == group


def test_timestamp_is_now() -> None:
    value = uuid6()
    # Reassemble the 60-bit timestamp: time_high+time_mid (48 bits) then time_low (12).
    ts = ((value.int >> 80) << 12) | ((value.int >> 64) & 0x0FFF)
    unix_ns = (ts - 0x01B21DD213814000) * 100
    assert abs(unix_ns - time.time_ns()) < 5 * 10**9


def test_later_ids_compare_greater_as_strings() -> None:
    # Alternate steps so the clock sequence cannot be what orders them.
    ids = [str(uuid6(clock_seq=(5 - i) % 3)) for i in range(5000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


def test_node_bits_are_random() -> None:
    nodes = {uuid6(clock_seq=0).node for _ in range(50)}
    assert len(nodes) > 45


def test_monotonic_across_threads() -> None:
    per_thread: list[list[str]] = [[] for _ in range(4)]

    def mint(out: list[str]) -> None:
        out.extend(str(uuid6()) for _ in range(2000))

    threads = [threading.Thread(target=mint, args=(out,)) for out in per_thread]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [i for out in per_thread for i in out]
    assert len(set(every)) == len(every)
    assert all(out == sorted(out) for out in per_thread)


def test_uuid6_str_is_the_text_of_a_uuid6() -> None:
    text = uuid6_str(clock_seq=1)
    value = uuid.UUID(text)
    assert str(value) == text
    assert value.version == 6
    assert text.split("-")[3] == "8001"


@pytest.mark.parametrize(
    "unix_ns",
    [0, 1_700_000_000_000_000_000, 1_700_000_000_123_456_789, 1_700_000_000_000_001_000],
)
def test_utc_now_iso_reads_as_datetime_isoformat(
    monkeypatch: pytest.MonkeyPatch, unix_ns: int
) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: unix_ns)
    expected = datetime.fromtimestamp(0, UTC) + timedelta(microseconds=unix_ns // 1000)
    assert utc_now_iso() == expected.isoformat()
