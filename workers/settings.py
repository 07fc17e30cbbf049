"""Worker and client settings, read from the environment (``GRAPHRUNTIME_*``)."""

from __future__ import annotations

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Everything a worker or client needs to find Postgres, Redis and the graphs.

    ``DATABASE_URL`` and ``REDIS_URL`` are read without prefix (the usual names);
    everything else is ``GRAPHRUNTIME_<NAME>``.
    """

    model_config = SettingsConfigDict(
        env_prefix="GRAPHRUNTIME_", extra="ignore", populate_by_name=True
    )

    database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("DATABASE_URL", "database_url")
    )
    redis_url: str | None = Field(
        default=None, validation_alias=AliasChoices("REDIS_URL", "redis_url")
    )
    graphs: str = Field(
        default="",
        description="Comma-separated name=module:attribute entries: the only graphs workers load.",
    )
    coordinator_queue: str = "graphruntime.coordinator"
    task_queue: str = "graphruntime.tasks"
    resume_queue: str = "graphruntime:resume"
    concurrency: int = 2
    inline_single_task: bool = Field(
        default=True,
        description="Run a step's only task in the coordinator instead of a separate job.",
    )
    pool_max_size: int = 4
    prepared_statements: bool = Field(
        default=True,
        description="Use server-side prepared statements; turn off behind a pooler in "
        "transaction mode that cannot keep them (PgBouncer before 1.21).",
    )
    task_chunk_max: int = Field(
        default=50,
        ge=1,
        description="Most tasks of one step a single task job runs, one after another. "
        "1 sends every task as its own job (for fan-outs of slow, I/O-bound nodes).",
    )
    min_jobs_per_step: int = Field(
        default=64,
        ge=1,
        description="A step's tasks are spread over at least this many jobs while it has "
        "that many tasks: only bigger fan-outs put several tasks in one job.",
    )
    task_stale_after: float = Field(
        default=300.0,
        description="Seconds a dispatched task may wait for a worker before it is re-sent.",
    )
    task_lease: float = Field(
        default=30.0,
        description="Seconds a running task's lease lasts; renewed every third of it. A task "
        "whose lease expires (its worker died) is re-sent by the sweeper.",
    )
    sweep_interval: float = 5.0
    thread_lock_retry: float = 0.05
