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

from workers import observability as observe
from workers.errors import DeadLetterNotFoundError, InvalidRequestError

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
        observe.dead_letters(pushed=1)
        excess = int(length) - self.max_entries
        if excess <= 0:
            return
        pipe = redis.pipeline()
        for _ in range(excess):
            pipe.rpop(self.key)
        pipe.incrby(self.dropped_key, excess)
        dropped = [d for d in pipe.execute()[:-1] if d is not None]
        observe.dead_letters(dropped=len(dropped))
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

    def entries(self, redis: Any, limit: int = 100) -> list[dict[str, Any]]:
        """The newest ``limit`` dead letters, decoded (``raw`` keeps the stored text)."""
        out = []
        for raw in redis.lrange(self.key, 0, limit - 1):
            try:
                entry = json.loads(raw)
            except ValueError:
                entry = {"message": raw.decode("utf-8", "replace"), "error": "unreadable entry"}
            if not isinstance(entry, dict):
                entry = {"message": str(entry), "error": "unreadable entry"}
            entry["raw"] = raw
            out.append(entry)
        return out

    def dropped(self, redis: Any) -> int:
        """How many dead letters the caps have dropped so far."""
        return int(redis.get(self.dropped_key) or 0)

    def _select(self, redis: Any, sha256: str | None, everything: bool) -> list[dict[str, Any]]:
        if everything == (sha256 is not None):
            raise InvalidRequestError("name the dead letters by --sha256 PREFIX, or take --all")
        entries = self.entries(redis, limit=self.max_entries)
        if sha256 is None:
            return entries
        chosen = [e for e in entries if str(e.get("sha256", "")).startswith(sha256)]
        if not chosen:
            raise DeadLetterNotFoundError(f"no dead letter's sha256 starts with {sha256!r}")
        return chosen

    def replay(
        self, redis: Any, queue: str, *, sha256: str | None = None, everything: bool = False
    ) -> tuple[int, list[str]]:
        """Put dead letters back on the resume queue (and off this list); returns how many,
        and why others were not (a truncated message cannot be replayed whole)."""
        replayed, skipped = 0, []
        for entry in self._select(redis, sha256, everything):
            if entry.get("truncated"):
                skipped.append(f"{entry.get('sha256')}: truncated when stored; send it again")
                continue
            pipe = redis.pipeline(transaction=True)
            pipe.lrem(self.key, 1, entry["raw"])
            pipe.lpush(queue, entry["message"])
            removed, _ = pipe.execute()
            if removed:
                replayed += 1
            else:  # replayed or purged meanwhile by someone else: undo our push
                redis.lrem(queue, 1, entry["message"])
        if replayed:
            log.warning("replayed %d dead letters onto %s", replayed, queue)
        return replayed, skipped

    def purge(self, redis: Any, *, sha256: str | None = None, everything: bool = False) -> int:
        """Delete dead letters; returns how many."""
        chosen = self._select(redis, sha256, everything)
        pipe = redis.pipeline(transaction=True)
        for entry in chosen:
            pipe.lrem(self.key, 1, entry["raw"])
        removed = sum(int(n) for n in pipe.execute())
        log.warning("purged %d dead letters from %s", removed, self.key)
        return removed
