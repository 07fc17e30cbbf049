"""The Celery app and the broker: JSON only, late acks, prefetch 1, one queue per role.

This module and :mod:`workers.tasks` are the only ones that import Celery; the
coordinator, executor and resume logic are plain functions behind
:class:`~workers.dispatch.Broker`. Importing this module builds nothing: the app is
made on first use (``create_app``, or the module attribute ``app`` that
``celery -A workers.app`` reads).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any

import redis
from celery import Celery
from kombu.entity import Queue
from kombu.exceptions import OperationalError as KombuOperationalError

from workers import _celery_wire as celery_wire
from workers.dispatch import QueueDepths, batches
from workers.errors import BrokerUnavailableError
from workers.messages import CoordinateMessage, TaskMessage
from workers.services import redis_url
from workers.settings import Settings, load_settings

log = logging.getLogger(__name__)


def create_app(settings: Settings) -> Celery:
    """A Celery app for these settings (broker, queues, JSON-only, late acks)."""
    app = Celery("graphruntime", broker=redis_url(settings), include=["workers.tasks"])
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_acks_on_failure_or_timeout=True,  # a failed job is recorded, never redelivered
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        task_queues=(
            Queue(settings.coordinator_queue),  # type: ignore[no-untyped-call]
            Queue(settings.task_queue),  # type: ignore[no-untyped-call]
        ),
        task_default_queue=settings.task_queue,
        task_routes={
            "graphruntime.coordinate": {"queue": settings.coordinator_queue},
            "graphruntime.execute": {"queue": settings.task_queue},
        },
        broker_connection_retry_on_startup=True,
        broker_transport_options={"visibility_timeout": 3600},
        worker_hijack_root_logger=False,
        worker_cancel_long_running_tasks_on_connection_loss=False,
    )
    app.conf.graphruntime_settings = settings
    return app


@cache
def get_app() -> Celery:
    """The process's app, from the environment's settings (made once)."""
    return create_app(load_settings())


def __getattr__(name: str) -> Any:
    if name == "app":  # `celery -A workers.app` reads this
        return get_app()
    raise AttributeError(name)


class CeleryBroker:
    """:class:`~workers.dispatch.Broker` over Celery (messages) and Redis (queue lengths)."""

    def __init__(self, app: Celery, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        url = str(app.conf.broker_url).replace("redis+socket://", "unix://")
        self.redis = redis.Redis.from_url(url)
        self.lean = celery_wire.supported(app.conf.broker_transport_options or {})

    def send_coordinate(self, run_id: str, *, delay: float = 0.0) -> None:
        options: dict[str, Any] = {"queue": self.settings.coordinator_queue}
        if delay > 0:
            options["countdown"] = delay
        with _broker_errors("send a coordinator message"):
            self.app.send_task(
                "graphruntime.coordinate", kwargs=_coordinate_kwargs([run_id]), **options
            )

    def send_coordinates(self, run_ids: Sequence[str], *, per_message: int = 1) -> None:
        queue = self.settings.coordinator_queue
        if self.lean:  # the same messages, written without kombu (see workers/_celery_wire.py)
            with _broker_errors("send coordinator messages"):
                kwargs = [_coordinate_kwargs(batch) for batch in batches(run_ids, per_message)]
                celery_wire.push(self.redis, queue, kwargs)
            return
        with (
            _broker_errors("send coordinator messages"),
            self.app.producer_or_acquire() as producer,
        ):
            for batch in batches(run_ids, per_message):
                self.app.send_task(
                    "graphruntime.coordinate",
                    kwargs=_coordinate_kwargs(batch),
                    queue=queue,
                    producer=producer,
                )

    def send_tasks(
        self,
        messages: Sequence[TaskMessage],
        *,
        delay: float = 0.0,
        labels: Sequence[str] | None = None,
    ) -> None:
        """Publish task jobs over one producer (one connection for a whole fan-out).

        A label becomes the job's Celery ``shadow`` name: Flower and the worker log
        show ``graph:node`` instead of ``graphruntime.execute``.
        """
        options: dict[str, Any] = {"countdown": delay} if delay > 0 else {}
        names = list(labels) if labels is not None else [None] * len(messages)
        with _broker_errors("send task jobs"), self.app.producer_or_acquire() as producer:
            for message, label in zip(messages, names, strict=True):
                self.app.send_task(
                    "graphruntime.execute",
                    kwargs=message.model_dump(mode="json"),
                    queue=self.settings.task_queue,
                    task_id=message.job_id,
                    producer=producer,
                    shadow=label,
                    **options,
                )

    def queue_depths(self) -> QueueDepths:
        with _broker_errors("read queue lengths"):
            pipe = self.redis.pipeline()
            pipe.llen(self.settings.coordinator_queue)
            pipe.llen(self.settings.task_queue)
            coordinator, tasks = pipe.execute()
        return QueueDepths(int(coordinator), int(tasks))

    def dead_letter(self, message: str, reason: str) -> None:
        with _broker_errors("dead-letter a resume message"):
            self.settings.dead_letters.push(self.redis, message, reason)

    def check_persistence(self) -> bool:
        """Whether Redis keeps the resume queue across a restart (AOF on); warns if not.

        Celery's messages can be lost (Postgres holds their truth and the sweeper re-sends
        them), but a resume message waiting on the queue exists only in Redis.
        """
        try:
            with _broker_errors("read the broker's persistence settings"):
                found: Any = self.redis.config_get("appendonly").get("appendonly")
                aof = found.decode() if isinstance(found, bytes) else str(found)
        except BrokerUnavailableError:
            return False
        except redis.exceptions.ResponseError:  # CONFIG disabled (managed Redis): cannot tell
            log.warning("cannot read Redis' appendonly setting; make sure AOF is on")
            return False
        if aof != "yes":
            log.warning(
                "Redis runs without AOF (appendonly=%s): resume messages waiting on %s are "
                "lost if Redis restarts. Turn it on (appendonly yes).",
                aof,
                self.settings.resume_queue,
            )
            return False
        return True


def _coordinate_kwargs(run_ids: Sequence[str]) -> dict[str, Any]:
    """A coordinator message's fields: ``{"run_id", "v": 1}`` for one run, as ever."""
    message = CoordinateMessage.of(run_ids)
    if message.v == 1:
        return {"run_id": message.run_id, "v": 1}
    return {"run_ids": list(message.run_ids), "v": 2}


@contextmanager
def _broker_errors(doing: str) -> Iterator[None]:
    """Broker connection failures as :class:`BrokerUnavailableError` (the job is retried)."""
    try:
        yield
    except (KombuOperationalError, redis.exceptions.ConnectionError, OSError) as exc:
        raise BrokerUnavailableError(
            f"Could not {doing}: the broker is unreachable ({exc})"
        ) from exc
