"""Resumes sent by ops as plain JSON messages on a Redis list.

Ops push ``{"graph": ..., "thread_id": ..., "resume": ..., "idempotency_key": ...}``
onto ``GRAPHRUNTIME_RESUME_QUEUE`` (default ``graphruntime:resume``), e.g. with
``redis-cli LPUSH graphruntime:resume '{...}'`` or ``graphrun resume``. A
listener moves each message to a processing list while it handles it (so a
crash loses nothing), submits the resume through the client, and removes it.
A message that cannot be applied goes to ``<queue>:dead`` with the reason; the
thread is left unchanged.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import psycopg
import redis

from graphruntime.errors import GraphRuntimeError
from graphruntime.types import Command
from workers.client import GraphClient
from workers.errors import MalformedMessageError
from workers.messages import ResumeMessage, parse

log = logging.getLogger(__name__)


def decode_resume(raw: bytes | str) -> ResumeMessage:
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedMessageError(
            f"Resume message is not JSON ({exc}); send an object like "
            '{"graph": "approvals", "thread_id": "t-1", "resume": "yes"}.'
        ) from None
    return parse(ResumeMessage, data)


def apply_resume(client: GraphClient, msg: ResumeMessage) -> str:
    """Submit the resume; the same idempotency key applies once. Returns the run id."""
    handle = client.submit(
        msg.graph,
        Command(resume=msg.resume),
        {"configurable": {"thread_id": msg.thread_id}},
        idempotency_key=msg.idempotency_key,
    )
    return handle.run_id


class ResumeListener:
    """Consumes the resume list until stopped; one per worker process is enough."""

    def __init__(self, client: GraphClient, redis: Any, queue: str) -> None:
        self.client = client
        self.redis = redis
        self.queue = queue
        self.processing = f"{queue}:processing"
        self.dead = f"{queue}:dead"
        self._stop = threading.Event()

    def recover(self) -> None:
        """Put back messages a crashed listener was handling."""
        while self.redis.rpoplpush(self.processing, self.queue) is not None:
            pass

    def handle(self, raw: bytes) -> None:
        """Apply one message; a bad one is dead-lettered with its reason, never retried.

        A transient failure (Postgres or the broker unreachable) leaves the message on
        the processing list, to be retried after the next :meth:`recover`.
        """
        try:
            run_id = apply_resume(self.client, decode_resume(raw))
            log.info("resume message applied as run %s", run_id)
        except (GraphRuntimeError, ValueError) as exc:
            self._dead_letter(raw, f"{type(exc).__name__}: {exc}")
        except (OSError, psycopg.OperationalError, redis.exceptions.ConnectionError):
            raise
        except Exception as exc:  # anything else is the message's fault
            log.exception("resume message failed")
            self._dead_letter(raw, f"{type(exc).__name__}: {exc}")
        self.redis.lrem(self.processing, 1, raw)

    def _dead_letter(self, raw: bytes, reason: str) -> None:
        log.warning("resume message rejected: %s", reason)
        self.redis.lpush(
            self.dead, json.dumps({"message": raw.decode("utf-8", "replace"), "error": reason})
        )

    def run(self) -> None:
        """Serve until stopped; survives Redis and Postgres outages by backing off."""
        backoff = 0.5
        recovered = False
        while not self._stop.is_set():
            try:
                if not recovered:
                    self.recover()
                    recovered = True
                raw = self.redis.brpoplpush(self.queue, self.processing, timeout=1)
                if raw is not None:
                    self.handle(raw)
                backoff = 0.5
            except Exception:  # the listener must outlive outages
                log.warning(
                    "resume listener: broker or database unavailable; retrying", exc_info=True
                )
                recovered = False
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 5.0)

    def stop(self) -> None:
        self._stop.set()
