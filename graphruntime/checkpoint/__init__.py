"""Checkpoint savers: the contract, the in-memory saver and the serializer."""

from __future__ import annotations

from graphruntime.checkpoint._id import uuid6
from graphruntime.checkpoint._schema_classes import schema_classes
from graphruntime.checkpoint._serde_classes import parse_allowed_classes
from graphruntime.checkpoint.base import (
    LATEST_VERSION,
    NULL_TASK_ID,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
    copy_checkpoint,
    empty_checkpoint,
    get_checkpoint_id,
    writes_sort_key,
)
from graphruntime.checkpoint.cluster import ClusterSaver
from graphruntime.checkpoint.memory import InMemorySaver, MemorySaver
from graphruntime.checkpoint.serde import JsonSerializer, SerializerProtocol, check_round_trip
from graphruntime.checkpoint.serde.types import DeltaSnapshot

__all__ = (
    "LATEST_VERSION",
    "NULL_TASK_ID",
    "BaseCheckpointSaver",
    "ChannelVersions",
    "Checkpoint",
    "CheckpointMetadata",
    "CheckpointTuple",
    "ClusterSaver",
    "DeltaChannelHistory",
    "DeltaSnapshot",
    "InMemorySaver",
    "JsonSerializer",
    "MemorySaver",
    "PendingWrite",
    "SerializerProtocol",
    "check_round_trip",
    "copy_checkpoint",
    "empty_checkpoint",
    "get_checkpoint_id",
    "parse_allowed_classes",
    "schema_classes",
    "uuid6",
    "writes_sort_key",
)
