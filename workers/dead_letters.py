"""The resume queue's dead letters: refused messages, with why, kept within bounds.

A refused message is stored on ``<queue>:dead`` as ``{"message", "error", "sha256",
"bytes", "at"}``, newest first. The list is capped: at most ``max_entries`` entries, and
a message longer than ``max_message_bytes`` is kept truncated (its digest and size name
the whole). What a cap drops is not lost silently: it is logged at WARNING, and
``<queue>:dead:dropped`` counts it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DeadLetters:
    """Where and how much: the queue's dead-letter list and its bounds."""

    queue: str
    max_entries: int = 10_000
    max_message_bytes: int = 16_384

    @property
    def key(self) -> str:
        return f"{self.queue}:dead"

    @property
    def dropped_key(self) -> str:
        return f"{self.queue}:dead:dropped"

    def entry(self, message: str | bytes, reason: str) -> str:
        """The JSON stored for a refused message."""
        raw = message.encode("utf-8", "replace") if isinstance(message, str) else message
        text = raw[: self.max_message_bytes].decode("utf-8", "replace")
        return json.dumps(
            {
                "message": text,
                "error": reason,
                "sha256": hashlib.sha256(raw).hexdigest(),
                "bytes": len(raw),
                "truncated": len(raw) > self.max_message_bytes,
                "at": time.time(),
            }
        )

    def push(self, redis: Any, message: str | bytes, reason: str) -> None:
        """Store a refused message; trim the oldest beyond the cap, saying what went."""
        log.warning("resume message rejected: %s", reason)
        pipe = redis.pipeline()
        pipe.lpush(self.key, self.entry(message, reason))
        pipe.llen(self.key)
        _, length = pipe.execute()
        excess = int(length) - self.max_entries
        if excess <= 0:
            return
        pipe = redis.pipeline()
        for _ in range(excess):
            pipe.rpop(self.key)
        pipe.incrby(self.dropped_key, excess)
        dropped = [d for d in pipe.execute()[:-1] if d is not None]
        for item in dropped:
            try:
                old = json.loads(item)
                summary = f"sha256 {old.get('sha256')} ({old.get('error')})"
            except (ValueError, AttributeError):
                summary = repr(item[:80])
            log.warning(
                "dead-letter list %s is full (%d entries): dropped the oldest, %s",
                self.key,
                self.max_entries,
                summary,
            )
