"""What the server does besides answering: fire crons, deliver webhooks, delete the
threads of stateless runs that ended. Every server runs it; Postgres row locks
(``FOR UPDATE SKIP LOCKED``) give each cron firing and each delivery to one of them,
and a cron's run is made under a key named by its firing, so a firing that a crashed
server made before it could move the cron on is found again, not made twice."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial
from typing import Any

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from workers._api_schema import query
from workers._retrying import WEBHOOK_POST
from workers.api._context import ApiContext
from workers.api._json import dumps
from workers.errors import InvalidRequestError, WebhookRefusedError

log = logging.getLogger(__name__)

WEBHOOK_ATTEMPTS = 10
"""Deliveries of one webhook before it is given up (its last error is kept)."""
WEBHOOK_TIMEOUT = 10.0
SIGNATURE_HEADER = "x-graphruntime-signature"


def next_fire(schedule: str, after: datetime) -> datetime:
    from croniter import croniter

    fired: datetime = croniter(schedule, after).get_next(datetime)
    return fired


def check_schedule(schedule: str) -> None:
    from croniter import croniter

    if not croniter.is_valid(schedule):
        raise InvalidRequestError(
            f"schedule {schedule!r} is not a cron expression (e.g. '*/5 * * * *')"
        )


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@contextmanager
def _locked(ctx: ApiContext) -> Iterator[Any]:
    """A cursor in a transaction: the rows it locks stay locked until the block ends."""
    with (
        ctx.pool.connection() as conn,
        conn.transaction(),
        conn.cursor(row_factory=dict_row) as cur,
    ):
        yield cur


def fire_crons(ctx: ApiContext, limit: int = 50) -> int:
    """Start the runs of the crons whose time came; how many were fired."""
    from workers.api._models import RunCreate
    from workers.api._run_routes import create_run

    fired = 0
    with (
        ctx.pool.connection() as conn,
        conn.transaction(),
        conn.cursor(row_factory=dict_row) as cur,
    ):
        cur.execute(query("due_crons"), {"limit": limit})
        for cron in cur.fetchall():
            at: datetime = cron["next_run_at"]
            payload = dict(cron["payload"] or {})
            key = f"cron:{cron['cron_id']}:{at.isoformat()}"
            thread_id = cron["thread_id"] or str(uuid.uuid5(uuid.UUID(str(cron["cron_id"])), key))
            try:
                body = RunCreate.model_validate(
                    {**payload, "assistant_id": str(cron["assistant_id"])}
                )
                create_run(
                    ctx,
                    thread_id,
                    body.model_copy(update={"if_not_exists": "create"}),
                    "cron",
                    idempotency_key=key,
                    temporary=cron["thread_id"] is None
                    and payload.get("on_run_completed", "delete") == "delete",
                )
                fired += 1
            except Exception:  # a cron that cannot fire must not stop the others
                log.exception("cron %s could not start its run", cron["cron_id"])
            following = next_fire(cron["schedule"], max(at, datetime.now(UTC)))
            cur.execute(query("cron_fired"), {"cron_id": cron["cron_id"], "next_run_at": following})
    return fired


def deliver_webhooks(ctx: ApiContext, limit: int = 20) -> int:
    """POST each ended run to its webhook (at least once, retried with backoff)."""
    import httpx

    from workers.api._run_routes import load_run, result_json, run_json
    from workers.api._runs import get_run

    secret = ctx.extra.get("webhook_secret")
    delivered = 0

    def post(url: str, body: bytes, headers: dict[str, str]) -> None:
        response = httpx.post(url, content=body, headers=headers, timeout=WEBHOOK_TIMEOUT)
        if response.status_code >= 400:
            raise WebhookRefusedError(f"{url} answered {response.status_code}")

    with (
        ctx.pool.connection() as conn,
        conn.transaction(),
        conn.cursor(row_factory=dict_row) as cur,
    ):
        cur.execute(query("due_webhooks"), {"limit": limit, "max_attempts": WEBHOOK_ATTEMPTS})
        for hook in cur.fetchall():
            run_id = str(hook["run_id"])
            error = None
            try:
                run = run_json(load_run(ctx, None, run_id))
                run["values"] = result_json(get_run(ctx, run_id))
                body = dumps(run).encode()
                headers = {"content-type": "application/json"}
                if secret:
                    headers[SIGNATURE_HEADER] = signature(secret, body)
                WEBHOOK_POST.call(partial(post, hook["url"], body, headers), _any_error)
                delivered += 1
            except Exception as exc:  # noqa: BLE001 - recorded, retried later
                error = f"{type(exc).__name__}: {exc}"
                log.warning("webhook of run %s not delivered: %s", run_id, error)
            cur.execute(
                query("webhook_attempted"),
                {
                    "run_id": run_id,
                    "delivered": error is None,
                    "error": error,
                    "backoff": min(2.0 ** (hook["attempts"] + 1), 300.0),
                },
            )
    return delivered


def _any_error(exc: BaseException) -> bool:
    return isinstance(exc, Exception)


def delete_ended_temporary(ctx: ApiContext, limit: int = 100) -> int:
    from workers.api._runs import delete_checkpoints

    rows = ctx.rows("ended_temporary_runs", {"limit": limit})
    for row in rows:
        ctx.row("delete_thread", {"thread_id": row["thread_id"]})
        delete_checkpoints(ctx, row["thread_id"])
    return len(rows)


class Background(threading.Thread):
    """Runs the crons, webhooks and clean-up every ``interval`` seconds until stopped."""

    def __init__(self, ctx: ApiContext, interval: float = 1.0) -> None:
        super().__init__(name="graphruntime-api-background", daemon=True)
        self.ctx = ctx
        self.interval = interval
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            for job in (fire_crons, deliver_webhooks, delete_ended_temporary):
                try:
                    job(self.ctx)
                except Exception:  # retried next interval
                    log.warning("%s failed", job.__name__, exc_info=True)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=5)


def as_jsonb(value: Any) -> Jsonb:
    return Jsonb(json.loads(dumps(value)))
