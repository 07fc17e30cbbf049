"""Resumes sent by ops as plain JSON messages on a Redis list.

Ops push ``{"graph": ..., "thread_id": ..., "resume": ..., "idempotency_key": ...}``
(optionally ``actor``, ``note``, and ``signature``) onto ``GRAPHRUNTIME_RESUME_QUEUE``
(default ``graphruntime:resume``), e.g. with ``redis-cli LPUSH`` or
``graphrun resume``. Each listener moves a message onto a processing list of its
own while it handles it, so a crash loses nothing and no listener touches another's
messages; a listener's list is put back on the queue when it starts, and a dead
listener's (its worker's heartbeat went stale) by any live one.

A message is turned into a queued run (a Postgres row) and removed: from then on
Postgres holds it. A message that cannot be applied goes to ``<queue>:dead`` with the
reason, and the thread is left unchanged; so does one whose run is refused later
(e.g. a resume that matches no pending interrupt). A message that keeps failing for
other reasons is dead-lettered after :data:`MAX_ATTEMPTS` tries instead of cycling.

With ``GRAPHRUNTIME_RESUME_KEY`` set, messages must carry ``signature``: the hex
HMAC-SHA256, under that key, of the message's other fields as canonical JSON (see
:func:`sign`), and must name what they answer (an ``idempotency_key``, or a resume map
keyed by interrupt id), so that a captured message cannot be replayed against a later
pause; other messages are dead-lettered at once, with the reason.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import threading
from typing import Any

from graphruntime.errors import GraphRuntimeError
from graphruntime.pregel.driver import is_resume_map
from graphruntime.types import Command
from workers._retrying import LISTENER_OUTAGE
from workers.client import GraphClient
from workers.errors import MalformedMessageError, NotDispatchedError, is_transient
from workers.messages import ResumeMessage, parse

log = logging.getLogger(__name__)

_SIGNATURE = re.compile(r"[0-9a-fA-F]{64}")

MAX_MESSAGE_BYTES = 1 << 20
"""Largest resume message accepted (1 MiB); a bigger one is dead-lettered unread."""
MAX_ATTEMPTS = 5
"""Tries before a message that keeps failing (not for an outage of ours) is dead-lettered."""


def canonical(fields: dict[str, Any]) -> bytes:
    """The bytes a signature covers: the message without ``signature``, as canonical JSON."""
    body = {k: v for k, v in fields.items() if k != "signature"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sign(fields: dict[str, Any], key: str) -> str:
    """The ``signature`` of a resume message under ``key`` (for producers and tests)."""
    return hmac.new(key.encode(), canonical(fields), hashlib.sha256).hexdigest()


def decode_resume(raw: bytes | str, *, key: str | None = None) -> ResumeMessage:
    """Parse and check a resume message; MalformedMessageError says what is wrong."""
    size = len(raw.encode() if isinstance(raw, str) else raw)
    if size > MAX_MESSAGE_BYTES:
        raise MalformedMessageError(
            f"Resume message is {size} bytes; the limit is {MAX_MESSAGE_BYTES}. Store big "
            "values elsewhere and resume with a reference to them."
        )
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise MalformedMessageError(
            f"Resume message is not JSON ({type(exc).__name__}: {exc}); send an object like "
            '{"graph": "approvals", "thread_id": "t-1", "resume": "yes"}.'
        ) from None
    if key is not None:
        if not isinstance(data, dict) or not isinstance(data.get("signature"), str):
            raise MalformedMessageError(
                "Resume message is unsigned; this cluster requires a 'signature' (HMAC-SHA256 "
                "of the other fields as canonical JSON, under GRAPHRUNTIME_RESUME_KEY)."
            )
        if not _SIGNATURE.fullmatch(data["signature"]):
            raise MalformedMessageError(
                "Resume message signature is not 64 hex digits (an HMAC-SHA256 hexdigest); "
                "rejected."
            )
        if not hmac.compare_digest(data["signature"].lower(), sign(data, key)):
            raise MalformedMessageError("Resume message signature does not match; rejected.")
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k != "signature"}
    msg = parse(ResumeMessage, data)
    if key is not None and msg.idempotency_key is None and not is_resume_map(msg.resume):
        raise MalformedMessageError(
            "A signed resume message must name what it answers: an 'idempotency_key' (a "
            "replay is then the same run, applied once) or a 'resume' map keyed by interrupt "
            "id (a replay then matches no later pause). Without either, one captured message "
            "could answer every later pause of the thread; rejected."
        )
    return msg


def apply_resume(client: GraphClient, msg: ResumeMessage, raw: str) -> str:
    """Queue the resume as a run; the same idempotency key applies once. Returns its id."""
    handle = client.submit(
        msg.graph,
        Command(resume=msg.resume),
        {"configurable": {"thread_id": msg.thread_id}},
        idempotency_key=msg.idempotency_key,
        actor=msg.actor,
        note=msg.note,
        route="queue",
        message=raw,
    )
    return handle.run_id


class ResumeListener:
    """Consumes the resume list until stopped; one per worker main process."""

    def __init__(self, client: GraphClient, redis: Any, queue: str, consumer: str) -> None:
        self.client = client
        self.redis = redis
        self.queue = queue
        self.consumer = consumer
        self.processing = f"{queue}:processing:{consumer}"
        self.dead = client.settings.dead_letters
        self.failures = f"{queue}:failures"
        self.key = client.settings.resume_key
        self._stop = threading.Event()

    def recover(self) -> int:
        """Put back on the queue this listener's own in-flight messages, and dead listeners'."""
        moved = 0
        live = {
            w["worker"] for w in self.client.store.live_workers(self.client.settings.stale_after)
        }
        lists = [self.processing]
        for name in self.redis.scan_iter(match=f"{self.queue}:processing:*", count=100):
            text = name.decode() if isinstance(name, bytes) else str(name)
            owner = text.removeprefix(f"{self.queue}:processing:")
            if text != self.processing and owner not in live:
                lists.append(text)
        for source in lists:
            while self.redis.rpoplpush(source, self.queue) is not None:
                moved += 1
        return moved

    def handle(self, raw: bytes) -> None:
        """Apply one message; a bad one is dead-lettered with its reason, never retried.

        An outage of ours (Postgres or Redis unreachable) leaves it on this listener's
        processing list, to be retried after :meth:`recover`; other failures count
        towards :data:`MAX_ATTEMPTS`.
        """
        text = raw.decode("utf-8", "replace")
        try:
            run_id = apply_resume(self.client, decode_resume(raw, key=self.key), text)
            log.info("resume message applied as run %s", run_id)
        except NotDispatchedError as exc:
            log.warning("resume message recorded as run %s, not yet sent: %s", exc.run_id, exc)
        except (GraphRuntimeError, ValueError) as exc:
            if is_transient(exc):
                raise
            self._dead_letter(text, f"{type(exc).__name__}: {exc}")
        except Exception as exc:
            if is_transient(exc):
                raise
            if self._failed_again(raw) < MAX_ATTEMPTS:
                raise
            log.exception("resume message failed %d times", MAX_ATTEMPTS)
            self._dead_letter(
                text, f"gave up after {MAX_ATTEMPTS} tries: {type(exc).__name__}: {exc}"
            )
        self.redis.lrem(self.processing, 1, raw)
        self.redis.hdel(self.failures, _digest(raw))

    def _failed_again(self, raw: bytes) -> int:
        return int(self.redis.hincrby(self.failures, _digest(raw), 1))

    def _dead_letter(self, message: str, reason: str) -> None:
        self.dead.push(self.redis, message, reason)

    def run(self) -> None:
        """Serve until stopped; survives Redis and Postgres outages by backing off."""
        failed_turns = 0
        recovered = False
        while not self._stop.is_set():
            try:
                if not recovered:
                    self.recover()
                    recovered = True
                raw = self.redis.brpoplpush(self.queue, self.processing, timeout=1)
                if raw is not None:
                    self.handle(raw)
                failed_turns = 0
            except Exception:  # the listener must outlive outages
                log.warning(
                    "resume listener: a message failed or a service is down; retrying",
                    exc_info=True,
                )
                recovered = False
                self._stop.wait(LISTENER_OUTAGE.delay(failed_turns))
                failed_turns += 1

    def stop(self) -> None:
        self._stop.set()


def _digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()
