"""The Celery app: JSON only, late acks, prefetch 1, one queue per role.

This module and :mod:`workers.tasks` are the only ones that import Celery; the
coordinator, executor and resume logic are plain functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from celery import Celery
from kombu.entity import Queue

from workers.settings import Settings


def create_app(settings: Settings | None = None) -> Celery:
    settings = settings or Settings()
    if settings.redis_url is None:
        from workers.embedded import redis_url

        settings = settings.model_copy(update={"redis_url": redis_url()})
    app = Celery("graphruntime", broker=settings.redis_url, include=["workers.tasks"])
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
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


class CeleryDispatcher:
    """Dispatches coordinator runs and task jobs as Celery messages (JSON kwargs)."""

    def __init__(self, app: Celery, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    def coordinate(self, run_id: str, *, delay: float = 0.0) -> None:
        options: dict[str, Any] = {"queue": self.settings.coordinator_queue}
        if delay > 0:
            options["countdown"] = delay
        self.app.send_task("graphruntime.coordinate", kwargs={"run_id": run_id, "v": 1}, **options)

    def execute(self, message: Any, *, delay: float = 0.0) -> None:
        self.execute_many([message], delay=delay)

    def execute_many(self, messages: Sequence[Any], *, delay: float = 0.0) -> None:
        """Publish task jobs over one producer (one connection for a whole fan-out)."""
        options: dict[str, Any] = {"countdown": delay} if delay > 0 else {}
        with self.app.producer_or_acquire() as producer:
            for message in messages:
                self.app.send_task(
                    "graphruntime.execute",
                    kwargs=message.model_dump(mode="json"),
                    queue=self.settings.task_queue,
                    task_id=message.job_id,
                    producer=producer,
                    **options,
                )


app = create_app()
