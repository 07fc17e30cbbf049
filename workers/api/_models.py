"""Request bodies of the LangGraph Server API, checked before anything is written.

A field the API does not know is refused (422 naming it), as is one graphruntime
cannot honour (with why), instead of being ignored.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

StreamMode = Literal[
    "values",
    "updates",
    "messages",
    "messages-tuple",
    "custom",
    "events",
    "debug",
    "tasks",
    "checkpoints",
]
MultitaskStrategy = Literal["reject", "interrupt", "rollback", "enqueue"]
ThreadStatus = Literal["idle", "busy", "interrupted", "error"]
SortOrder = Literal["asc", "desc"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CommandBody(_Body):
    update: Any = None
    resume: Any = None
    goto: Any = None


class CheckpointRef(_Body):
    checkpoint_id: str | None = None
    checkpoint_ns: str | None = ""
    thread_id: str | None = None
    checkpoint_map: dict[str, Any] | None = None


class RunCreate(_Body):
    """A run's request. With both ``input`` and ``command``, the command is the run's input
    (as LangGraph's server does: Agent Chat UI sends both when it resumes)."""

    assistant_id: str = Field(min_length=1)
    input: Any = None
    command: CommandBody | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    stream_mode: StreamMode | list[StreamMode] | None = None
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    interrupt_before: Literal["*"] | list[str] | None = None
    interrupt_after: Literal["*"] | list[str] | None = None
    webhook: str | None = None
    checkpoint: CheckpointRef | None = None
    checkpoint_id: str | None = None
    checkpoint_during: bool | None = None
    durability: Literal["sync", "async", "exit"] | None = None
    multitask_strategy: MultitaskStrategy = "enqueue"
    if_not_exists: Literal["create", "reject"] = "reject"
    on_disconnect: Literal["cancel", "continue"] = "continue"
    on_completion: Literal["delete", "keep"] | None = None
    after_seconds: float | None = Field(default=None, ge=0)
    strict_resume: bool | None = None
    feedback_keys: list[str] | None = None
    langsmith_tracer: dict[str, Any] | None = None

    @field_validator("feedback_keys", "langsmith_tracer")
    @classmethod
    def _no_langsmith(cls, value: Any) -> Any:
        if value:
            raise ValueError("LangSmith feedback and tracing are not available in graphrun serve")
        return value

    @field_validator("strict_resume")
    @classmethod
    def _strict(cls, value: bool | None) -> bool | None:
        if value is False:
            raise ValueError(
                "graphruntime always checks a resume against the pending interrupts; "
                "strict_resume=false cannot be honoured"
            )
        return value

    @field_validator("durability")
    @classmethod
    def _durability(cls, value: str | None) -> str | None:
        if value == "exit":
            raise ValueError(
                "durability 'exit' is not available on the workers: every step is saved, "
                "since each may run on another worker; use 'sync' or 'async'"
            )
        return value

    @field_validator("checkpoint_during")
    @classmethod
    def _during(cls, value: bool | None) -> bool | None:
        if value is False:
            raise ValueError(
                "checkpoint_during=false (durability 'exit') is not available on the workers"
            )
        return value

    @field_validator("webhook")
    @classmethod
    def _webhook(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("the webhook is an http:// or https:// URL")
        return value

    def modes(self) -> list[str]:
        mode = self.stream_mode or ["values"]
        return [mode] if isinstance(mode, str) else list(dict.fromkeys(mode))


class RunBatchItem(RunCreate):
    pass


class _ThreadBody(_Body):
    """A thread's create or patch body: ``ttl`` is refused, not ignored."""

    metadata: dict[str, Any] | None = None
    ttl: dict[str, Any] | None = None

    @field_validator("ttl")
    @classmethod
    def _no_ttl(cls, value: Any) -> Any:
        if value:
            raise ValueError("thread TTLs are not available in graphrun serve")
        return value


class ThreadCreate(_ThreadBody):
    thread_id: str | None = Field(default=None, min_length=1, max_length=256)
    if_exists: Literal["raise", "do_nothing"] = "raise"
    supersteps: list[dict[str, Any]] | None = None


class ThreadPatch(_ThreadBody):
    pass


class ThreadSearch(_Body):
    metadata: dict[str, Any] | None = None
    values: dict[str, Any] | None = None
    ids: list[str] | None = None
    status: ThreadStatus | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: Literal["thread_id", "status", "created_at", "updated_at"] | None = None
    sort_order: SortOrder | None = None
    select: list[str] | None = None
    extract: dict[str, str] | None = None

    @field_validator("extract")
    @classmethod
    def _no_extract(cls, value: Any) -> Any:
        if value:
            raise ValueError("extract is not available in graphrun serve")
        return value


class ThreadCount(_Body):
    metadata: dict[str, Any] | None = None
    values: dict[str, Any] | None = None
    status: ThreadStatus | None = None


class StateUpdate(_Body):
    values: Any = None
    as_node: str | None = None
    checkpoint: CheckpointRef | None = None
    checkpoint_id: str | None = None


class StateGetBody(_Body):
    checkpoint: CheckpointRef | None = None
    subgraphs: bool = False


class HistoryBody(_Body):
    limit: int = Field(default=10, ge=1, le=1000)
    before: str | CheckpointRef | None = None
    metadata: dict[str, Any] | None = None
    checkpoint: CheckpointRef | None = None


class ThreadPrune(_Body):
    thread_ids: list[str] = Field(min_length=1)
    strategy: Literal["delete", "keep_latest"] = "delete"


class AssistantCreate(_Body):
    graph_id: str = Field(min_length=1)
    assistant_id: str | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    if_exists: Literal["raise", "do_nothing"] = "raise"
    name: str | None = None
    description: str | None = None


class AssistantPatch(_Body):
    graph_id: str | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    name: str | None = None
    description: str | None = None


class AssistantSearch(_Body):
    metadata: dict[str, Any] | None = None
    graph_id: str | None = None
    name: str | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: Literal["assistant_id", "graph_id", "name", "created_at", "updated_at"] | None = None
    sort_order: SortOrder | None = None
    select: list[str] | None = None


class AssistantCount(_Body):
    metadata: dict[str, Any] | None = None
    graph_id: str | None = None
    name: str | None = None


class AssistantVersions(_Body):
    metadata: dict[str, Any] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)


class LatestVersion(_Body):
    version: int = Field(ge=1)


class StorePut(_Body):
    namespace: list[str] = Field(min_length=1)
    key: str = Field(min_length=1)
    value: dict[str, Any]
    index: Any = None
    ttl: float | None = None

    @field_validator("index")
    @classmethod
    def _no_index(cls, value: Any) -> Any:
        if value not in (None, False):
            raise ValueError("the store has no vector index: index must be omitted or false")
        return value


class StoreDelete(_Body):
    namespace: list[str] = Field(min_length=1)
    key: str = Field(min_length=1)


class StoreSearch(_Body):
    namespace_prefix: list[str] = Field(default_factory=list)
    filter: dict[str, Any] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    query: str | None = None
    refresh_ttl: bool | None = None

    @field_validator("query")
    @classmethod
    def _no_query(cls, value: str | None) -> str | None:
        if value:
            raise ValueError("the store has no vector index: semantic query is not available")
        return value


class StoreNamespaces(_Body):
    prefix: list[str] | None = None
    suffix: list[str] | None = None
    max_depth: int | None = Field(default=None, ge=1)
    limit: int = Field(default=100, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)


class CronCreate(_Body):
    schedule: str = Field(min_length=1)
    assistant_id: str = Field(min_length=1)
    input: Any = None
    metadata: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    checkpoint_during: bool | None = None
    interrupt_before: Literal["*"] | list[str] | None = None
    interrupt_after: Literal["*"] | list[str] | None = None
    webhook: str | None = None
    multitask_strategy: MultitaskStrategy | None = None
    end_time: str | None = None
    on_run_completed: Literal["delete", "keep"] | None = None
    stream_mode: Any = None
    durability: Literal["sync", "async"] | None = None
    enabled: bool | None = None


class CronPatch(_Body):
    schedule: str | None = None
    end_time: str | None = None
    input: Any = None
    metadata: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    webhook: str | None = None
    interrupt_before: Literal["*"] | list[str] | None = None
    interrupt_after: Literal["*"] | list[str] | None = None
    on_run_completed: Literal["delete", "keep"] | None = None
    enabled: bool | None = None


class CronSearch(_Body):
    assistant_id: str | None = None
    thread_id: str | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: (
        Literal["cron_id", "assistant_id", "thread_id", "next_run_date", "created_at", "updated_at"]
        | None
    ) = None
    sort_order: SortOrder | None = None
    select: list[str] | None = None
    enabled: bool | None = None


class CronCount(_Body):
    assistant_id: str | None = None
    thread_id: str | None = None
