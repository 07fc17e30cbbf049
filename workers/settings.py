"""Worker and client settings, read from the environment (``GRAPHRUNTIME_*``)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Literal

from pydantic import AliasChoices, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from workers.errors import ConfigurationError
from workers.messages import MAX_COORDINATE_BATCH

if TYPE_CHECKING:
    from workers.dead_letters import DeadLetters

_UNPREFIXED = {"database_url": "DATABASE_URL", "redis_url": "REDIS_URL"}


def env_name(field: str) -> str:
    """The environment variable a setting is read from."""
    return _UNPREFIXED.get(field.lower(), f"GRAPHRUNTIME_{field.upper()}")


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
    config: str | None = Field(
        default=None,
        description="A langgraph.json whose graphs the workers serve too (graphrun worker "
        "--config sets it); its env and dependencies apply to the process.",
    )
    embedded: bool = Field(
        default=False,
        description="Start an embedded Postgres and Redis (development only) when "
        "DATABASE_URL / REDIS_URL are unset; without it, they are required.",
    )
    serde_allow: str = Field(
        default="",
        description="Comma-separated module:qualname classes whose instances runs may store, "
        "beyond the classes the registered graphs' state schemas name.",
    )
    coordinator_queue: str = "graphruntime.coordinator"
    task_queue: str = "graphruntime.tasks"
    resume_queue: str = "graphruntime:resume"
    dead_letter_max: int = Field(
        default=10_000,
        ge=1,
        description="Most refused resume messages kept on <resume queue>:dead (oldest dropped, "
        "each drop logged and counted in <resume queue>:dead:dropped).",
    )
    dead_letter_message_bytes: int = Field(
        default=16_384,
        ge=256,
        description="Longest message text a dead letter keeps (its digest and size name the "
        "whole message).",
    )
    resume_key: str | None = Field(
        default=None,
        description="HMAC key resume-queue messages must be signed with (their 'signature' "
        "field); unset: unsigned messages are accepted.",
    )
    ui_token: str | None = Field(
        default=None,
        description="A token `graphrun ui` requires (basic auth password or bearer token), "
        "shared by every approver: it names nobody (prefer ui_tokens_file); without any "
        "authentication the inbox serves 127.0.0.1 only.",
    )
    ui_tokens_file: str | None = Field(
        default=None,
        description="A file of `NAME TOKEN` lines (or `NAME sha256:HEX`), one per approver, "
        "readable by its owner only: `graphrun ui` takes the token as the approver's "
        "identity, recorded as the actor of each resume.",
    )
    ui_identity_header: str | None = Field(
        default=None,
        description="Behind an authenticating proxy: the header naming the user (e.g. "
        "X-Forwarded-User), believed only from ui_trusted_proxies.",
    )
    ui_trusted_proxies: str = Field(
        default="127.0.0.1,::1",
        description="Comma-separated addresses or networks whose ui_identity_header "
        "`graphrun ui` believes.",
    )
    ui_claim_minutes: float = Field(
        default=15,
        gt=0,
        le=1440,
        description="How long an approver's claim on a wait lasts in `graphrun ui`.",
    )
    api_token: str | None = Field(
        default=None,
        description="The token `graphrun serve` requires (x-api-key or bearer); without one "
        "it serves loopback only.",
    )
    api_cors_origins: str = Field(
        default="",
        description="Comma-separated origins (https://app.example.com) whose pages may call "
        "`graphrun serve` from a browser, besides this machine's (http://localhost:*, "
        "http://127.0.0.1:*), which always may.",
    )
    webhook_secret: str | None = Field(
        default=None,
        description="HMAC-SHA256 key that signs the webhooks `graphrun serve` sends "
        "(header x-graphruntime-signature: sha256=<hex>); unset: unsigned.",
    )
    concurrency: int = Field(
        default=2,
        ge=1,
        description="Processes in a `graphrun worker` started without --concurrency.",
    )
    inline_single_task: bool = Field(
        default=True,
        description="Run a step's only task in the coordinator instead of a separate job.",
    )
    pool_max_size: int = 4
    connect_timeout: float = Field(
        default=5.0,
        gt=0,
        le=600,
        description="Seconds a worker at start, and a `graphrun` command, waits for Postgres "
        "and Redis to answer before it exits naming the setting that points at them.",
    )
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
    coordinate_batch: int = Field(
        default=32,
        ge=1,
        le=MAX_COORDINATE_BATCH,
        description="Most runs one coordinator message names when many are sent at once "
        "(submit_many, resume_many, deadline resumes, stalled runs): its job advances them "
        "one after another and ends them in one transaction, one durable commit for all. "
        "1 sends one message per run.",
    )
    coordinate_budget: float = Field(
        default=1.0,
        ge=0,
        le=60,
        description="Seconds a coordinator job goes on starting the runs one message named; "
        "those it has not started by then go back to the queue (their threads freed) for "
        "any worker, so slow runs spread over the cluster and a batch's ends wait at most "
        "about this long. 0: each job starts one run and hands the others back.",
    )
    task_stale_after: float = Field(
        default=300.0,
        gt=0,
        description="Seconds a dispatched task may wait unclaimed while its queue is busy "
        "before it is re-sent (when the queue is empty: twice the heartbeat interval).",
    )
    heartbeat_interval: float = Field(
        default=5.0,
        gt=0,
        description="Seconds between a worker process's heartbeats. A process silent for "
        "twice this is dead: its tasks and threads are taken over by others.",
    )
    unserved_graph_timeout: float = Field(
        default=600.0,
        gt=0,
        description="Seconds a run of a graph this worker does not serve is left for other "
        "workers (a rolling deploy, pools serving different graphs) before it fails with "
        "UnknownGraphError.",
    )
    sweep_interval: float = Field(
        default=2.5,
        gt=0,
        description="Seconds between a worker's sweeps for orphaned tasks and stalled runs.",
    )

    metrics_port: int | None = Field(
        default=None,
        description="Port a worker serves Prometheus metrics on (/metrics); unset: no metrics.",
    )
    metrics_address: str = Field(
        default="0.0.0.0",
        description="Address the metrics port listens on.",
    )
    log_format: Literal["text", "json"] = Field(
        default="text",
        description="Worker log lines as text, or as JSON objects that carry the run, thread, "
        "graph, node and task ids.",
    )
    tracing: Literal["off", "otel"] = Field(
        default="off",
        description="otel: OpenTelemetry spans per run, step and task (needs the `otel` extra; "
        "the SDK and exporter are configured by OTEL_* variables or the application).",
    )

    @field_validator("metrics_port")
    @classmethod
    def _a_port(cls, port: int | None) -> int | None:
        if port is not None and not 1 <= port <= 65535:
            raise ValueError(
                f"{port} is not a port to listen on: give 1-65535, or unset it to serve no metrics"
            )
        return port

    @model_validator(mode="before")
    @classmethod
    def _no_empty_values(cls, data: Any) -> Any:
        """A variable set to nothing is a mistake (a missing secret, a typo in a manifest),
        not a request for the default: say which one."""
        if isinstance(data, dict):
            empty = sorted(
                env_name(str(key))
                for key, value in data.items()
                if isinstance(value, str) and not value.strip()
            )
            if empty:
                raise ValueError(f"{', '.join(empty)} set but empty: give a value or unset it")
        return data

    @property
    def dead_letters(self) -> DeadLetters:
        """Where refused resume messages go, and their bounds."""
        from workers.dead_letters import DeadLetters  # it loads the metrics hooks: not at start

        return DeadLetters(self.resume_queue, self.dead_letter_max, self.dead_letter_message_bytes)

    @property
    def stale_after(self) -> float:
        """Seconds without a heartbeat after which a worker process counts as dead."""
        return 2 * self.heartbeat_interval


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment; a bad value is a :class:`ConfigurationError` that
    names the variable and what is wrong with it.

    The env of the langgraph.json that GRAPHRUNTIME_CONFIG names is applied first (once
    per process; a variable already set keeps its value), so that its settings count.
    """
    config = overrides.get("config") or os.environ.get("GRAPHRUNTIME_CONFIG")
    if config:
        from workers.config import apply_config

        apply_config(config)
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            where = ".".join(str(part) for part in error["loc"])
            message = error["msg"].removeprefix("Value error, ")
            problems.append(f"{env_name(where)}: {message}" if where else message)
        raise ConfigurationError("Bad configuration: " + "; ".join(problems)) from None
