"""checkpoint_pg's pure parts: the row codec and the query file."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any

import pytest

from checkpoint_pg import _codec, _queries
from checkpoint_pg.named_queries import NamedQueries, parse_queries
from graphruntime.checkpoint import DeltaSnapshot, JsonSerializer, empty_checkpoint
from graphruntime.errors import CheckpointError, InvalidArgumentError

SERDE = JsonSerializer()


def test_blob_version_keys_are_short_and_unique() -> None:
    padded = f"{12:032}.0.8688454526163390"
    assert _codec.blob_version_key(padded) == "12.0.8688454526163390"
    versions: list[Any] = [padded, "12.0.8688454526163390", 12, 12.0, "12", True, "s12", "i12"]
    keys = [_codec.blob_version_key(v) for v in versions]
    assert len(set(keys)) == len(keys), keys


def test_task_keys() -> None:
    task = str(uuid.uuid4())
    assert _codec.task_key(task) == (uuid.UUID(task), None)
    named, name = _codec.task_key("t1")
    assert name == "t1"
    assert _codec.task_key("t1") == (named, "t1")
    upper = task.upper()  # not the canonical spelling: kept as given
    assert _codec.task_key(upper)[1] == upper


def _encode(values: dict[str, Any], new: set[str], stored: Collection[str] = ()) -> Any:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = {c: f"{i + 1:032}.0.5" for i, c in enumerate(values)}
    versions = {c: checkpoint["channel_versions"][c] for c in new}
    encoded = _codec.encode_checkpoint(
        checkpoint, versions, values_serde=SERDE, json_serde=SERDE, stored=lambda c, k: c in stored
    )
    return checkpoint, encoded


def test_small_values_inline_large_values_blob() -> None:
    values = {"n": 1, "s": "short", "list": [1, 2], "big": "x" * 1000, "bigl": list(range(200))}
    checkpoint, encoded = _encode(values, new=set(values))
    assert encoded.blob_channels == ["big", "bigl"]
    assert encoded.ref_channels == []
    decoded = _codec.decode_body(
        checkpoint["id"],
        encoded.body,
        encoded.blob_channels,
        encoded.blob_types,
        encoded.blob_values,
        values_serde=SERDE,
        json_serde=SERDE,
    )
    assert decoded == checkpoint


def test_a_delta_snapshot_is_always_a_blob() -> None:
    """Where a DeltaChannel's history walk stops must be visible to SQL (blob_versions)."""
    values = {"small": DeltaSnapshot([1]), "plain": [1]}
    checkpoint, encoded = _encode(values, new=set(values))
    assert encoded.blob_channels == ["small"]
    decoded = _codec.decode_body(
        checkpoint["id"],
        encoded.body,
        encoded.blob_channels,
        encoded.blob_types,
        encoded.blob_values,
        values_serde=SERDE,
        json_serde=SERDE,
    )
    assert decoded["channel_values"] == values


def test_unchanged_blobs_are_referenced_only_when_known_stored() -> None:
    values = {"big": "x" * 1000, "other": "y" * 1000}
    _, encoded = _encode(values, new=set(), stored={"big"})
    assert encoded.ref_channels == ["big"]
    assert encoded.blob_channels == ["other"]  # not in new_versions, but not known stored


def test_body_is_compressed_with_a_format_byte() -> None:
    _, encoded = _encode({f"channel_{i}": i for i in range(30)}, new=set())
    assert encoded.body[0] == 1
    _, tiny = _encode({}, new=set())
    assert tiny.body[:1] in (b"{", b"\x01")
    with pytest.raises(CheckpointError, match="Unknown checkpoint body format"):
        _codec.decode_body(
            "id", b"\x07junk", None, None, None, values_serde=SERDE, json_serde=SERDE
        )


def test_value_without_version_is_rejected() -> None:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"a": 1}
    with pytest.raises(CheckpointError, match="without a version"):
        _codec.encode_checkpoint(
            checkpoint, {}, values_serde=SERDE, json_serde=SERDE, stored=lambda c, k: False
        )


def test_query_file_parsing() -> None:
    parsed = parse_queries(
        "-- intro\n-- name: a\nSELECT 1;\n\n-- name: b\n  -- why\nSELECT 2 -- kept\n;\n"
    )
    assert parsed == {"a": "SELECT 1", "b": "SELECT 2 -- kept"}
    with pytest.raises(InvalidArgumentError, match="defined twice in the SQL text"):
        parse_queries("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n")
    assert "%" not in _queries.WRITE_ROW.replace("%s", "")


@pytest.mark.parametrize(
    ("package", "resource"),
    [
        ("checkpoint_pg", "sql/queries.sql"),
        ("checkpoint_pg", "sql/store_queries.sql"),
        ("checkpoint_pg", "sql/cache_queries.sql"),
        ("workers", "sql/queries.sql"),
        ("workers", "sql/api_queries.sql"),
    ],
)
def test_every_named_query_file_loads(package: str, resource: str) -> None:
    queries = NamedQueries(package, resource)
    assert len(queries) > 0
    assert all(sql and not sql.endswith(";") for sql in queries.values())
    with pytest.raises(KeyError, match=f"no query 'nope' in {package}/{resource}"):
        queries["nope"]
    # a longer text is parsed again by psycopg at every execution (see NamedQueries)
    from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH

    too_long = [n for n, sql in queries.items() if len(sql.encode()) > MAX_CACHED_STATEMENT_LENGTH]
    assert too_long == []
