"""Time-ordered checkpoint ids (UUIDv6), as LangGraph makes them, and checkpoint times.

Checkpoint ids double as the sort key of a thread's history ("latest" is the
greatest id), so ids minted later in a process must compare greater, as
strings, than every id minted before.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from datetime import UTC, datetime

__all__ = ("utc_now_iso", "uuid6", "uuid6_str")

# 100-ns intervals between the UUID epoch (1582-10-15) and the Unix epoch.
_GREGORIAN_OFFSET = 0x01B21DD213814000

_lock = threading.Lock()
_last_timestamp = 0


def _next_timestamp() -> int:
    """The current UUID timestamp, strictly greater than the last one handed out."""
    global _last_timestamp
    timestamp = time.time_ns() // 100 + _GREGORIAN_OFFSET
    with _lock:
        # Two calls within one 100-ns tick, or a clock stepping back, must not
        # produce an id that sorts before an earlier one.
        if timestamp <= _last_timestamp:
            timestamp = _last_timestamp + 1
        _last_timestamp = timestamp
    return timestamp


def uuid6(clock_seq: int | None = None) -> uuid.UUID:
    """Return a new RFC 9562 version-6 UUID with 48 random node bits.

    Args:
        clock_seq: LangGraph passes the superstep here, so the 4th group of a
            checkpoint id encodes it (``step & 0x3FFF`` with the variant bits:
            step -1 → ``bfff``, 0 → ``8000``, 1 → ``8001``). Random if omitted.
    """
    return uuid.UUID(int=_uuid6_int(clock_seq))


def uuid6_str(clock_seq: int | None = None) -> str:
    """``str(uuid6(clock_seq))``, without building the ``UUID`` (every step mints one)."""
    h = _uuid6_int(clock_seq).to_bytes(16).hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _uuid6_int(clock_seq: int | None) -> int:
    """The 128 bits of a new version-6 UUID."""
    timestamp = _next_timestamp()
    if clock_seq is None:
        clock_seq = random.getrandbits(14)
    node = random.getrandbits(48)
    value = ((timestamp >> 12) & 0xFFFF_FFFF_FFFF) << 80  # time_high + time_mid
    value |= 0x6 << 76  # version
    value |= (timestamp & 0x0FFF) << 64  # time_low
    value |= (0x8000 | (clock_seq & 0x3FFF)) << 48  # variant 0b10 + clock_seq
    value |= node
    return value


_iso_second: tuple[int, str] = (-1, "")


def utc_now_iso() -> str:
    """``datetime.now(UTC).isoformat()``, the same text at a fraction of the cost.

    Every step stamps its checkpoint: the date and time of day are formatted once per
    second, the microseconds (left out when zero, as ``isoformat`` does) every call.
    """
    global _iso_second
    second, micro = divmod(time.time_ns() // 1000, 1_000_000)
    cached, prefix = _iso_second
    if cached != second:
        prefix = datetime.fromtimestamp(second, UTC).isoformat()[:19]  # YYYY-MM-DDTHH:MM:SS
        _iso_second = (second, prefix)
    return f"{prefix}.{micro:06d}+00:00" if micro else f"{prefix}+00:00"
