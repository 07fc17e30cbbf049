"""Typed projections of a run's events (as ``langgraph.stream``).

``graph.stream_events(input, version="v3")`` (``astream_events`` for async) returns a
run stream whose projections (``run.values``, ``run.messages``, ``run.lifecycle``,
``run.subgraphs``, and those of the transformers passed as ``transformers=[...]`` or
compiled into the graph) fill as the caller reads them. They are built from the same
stream chunks ``graph.stream(...)`` yields: the run has no second execution path.
"""

from __future__ import annotations

from graphruntime.stream._types import ProtocolEvent, StreamTransformer
from graphruntime.stream.run_stream import (
    AsyncGraphRunStream,
    AsyncSubgraphRunStream,
    GraphRunStream,
    SubgraphRunStream,
)
from graphruntime.stream.stream_channel import StreamChannel
from graphruntime.stream.transformers import (
    CheckpointsTransformer,
    CustomTransformer,
    DebugTransformer,
    LifecyclePayload,
    LifecycleTransformer,
    SubgraphStatus,
    SubgraphTransformer,
    TasksTransformer,
    UpdatesTransformer,
)

__all__ = (
    "AsyncGraphRunStream",
    "AsyncSubgraphRunStream",
    "CheckpointsTransformer",
    "CustomTransformer",
    "DebugTransformer",
    "GraphRunStream",
    "LifecyclePayload",
    "LifecycleTransformer",
    "ProtocolEvent",
    "StreamChannel",
    "StreamTransformer",
    "SubgraphRunStream",
    "SubgraphStatus",
    "SubgraphTransformer",
    "TasksTransformer",
    "UpdatesTransformer",
)
