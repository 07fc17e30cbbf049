"""InMemorySaver against the shared saver contract, plus what is specific to it."""

from __future__ import annotations

import pytest

from graphruntime.checkpoint import InMemorySaver, MemorySaver, empty_checkpoint
from graphruntime.errors import CheckpointError
from graphruntime.testing.conformance import ClusterSaverConformance


class TestInMemorySaver(ClusterSaverConformance):
    @pytest.fixture
    def saver(self) -> InMemorySaver:
        return InMemorySaver()


def test_memory_saver_alias_and_context_manager() -> None:
    assert MemorySaver is InMemorySaver
    with InMemorySaver() as saver:
        assert isinstance(saver, InMemorySaver)


def test_unchanged_channel_blob_is_stored_once() -> None:
    saver = InMemorySaver()
    checkpoint = empty_checkpoint()
    version = saver.get_next_version(None)
    checkpoint["channel_values"] = {"big": "x" * 1000}
    checkpoint["channel_versions"] = {"big": version}
    config = saver.put({"configurable": {"thread_id": "t"}}, checkpoint, {}, {"big": version})
    for _ in range(3):
        checkpoint = {**checkpoint, "id": empty_checkpoint()["id"]}
        config = saver.put(config, checkpoint, {}, {})
    assert len(saver.blobs) == 1
    loaded = saver.get(config)
    assert loaded is not None
    assert loaded["channel_values"] == {"big": "x" * 1000}


def test_value_without_version_is_rejected() -> None:
    saver = InMemorySaver()
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"a": 1}
    with pytest.raises(CheckpointError, match="without a version"):
        saver.put({"configurable": {"thread_id": "t"}}, checkpoint, {}, {})


def test_missing_thread_id_is_a_checkpoint_error() -> None:
    saver = InMemorySaver()
    with pytest.raises(CheckpointError, match="thread_id"):
        saver.get_tuple({"configurable": {}})
    with pytest.raises(CheckpointError, match="checkpoint_id"):
        saver.put_writes({"configurable": {"thread_id": "t"}}, [("a", 1)], task_id="x")
