"""Checkpoint savers: the contract, the in-memory saver and the serializer."""

from __future__ import annotations

from graphruntime.checkpoint._id import uuid6
from graphruntime.checkpoint.base import (
    LATEST_VERSION,
    NULL_TASK_ID,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    copy_checkpoint,
    empty_checkpoint,
    get_checkpoint_id,
)
from graphruntime.checkpoint.cluster import ClusterSaver, WriteBatch
from graphruntime.checkpoint.memory import InMemorySaver, MemorySaver
from graphruntime.checkpoint.serde import JsonSerializer, SerializerProtocol

__all__ = (
    "LATEST_VERSION",
    "NULL_TASK_ID",
    "BaseCheckpointSaver",
    "ChannelVersions",
    "Checkpoint",
    "CheckpointMetadata",
    "CheckpointTuple",
    "ClusterSaver",
    "InMemorySaver",
    "JsonSerializer",
    "MemorySaver",
    "PendingWrite",
    "SerializerProtocol",
    "WriteBatch",
    "copy_checkpoint",
    "empty_checkpoint",
    "get_checkpoint_id",
    "uuid6",
)
