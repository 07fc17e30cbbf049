"""Fixtures and collection rules for langgraph-prebuilt's vendored tests (see README.md).

``UPSTREAM_TARGET`` picks what ``graphruntime.X`` means, as in tests/upstream: graphruntime
(default) or, with ``langgraph``, the real LangGraph and langgraph-prebuilt. The fixtures are
upstream's ``LANGGRAPH_TEST_FAST`` set (its default): the target's in-memory checkpointer
(wrapped to assert that saved checkpoints are never mutated) and in-memory store.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
import pytest_asyncio

from tests.upstream.harness.targets import TARGET, alias_langgraph, lend_private_names

if TARGET == "langgraph":
    alias_langgraph()

pytest.register_assert_rewrite("tests.upstream.memory_assert")

from tests.upstream.memory_assert import MemorySaverAssertImmutable  # noqa: E402
from tests.upstream_prebuilt.port import SUITE  # noqa: E402
from tests.vendored.harness import AsyncioModule, apply_lists  # noqa: E402

TIMEOUT = float(os.environ.get("UPSTREAM_TIMEOUT", "20"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def deterministic_uuids(mocker: Any) -> Any:
    side_effect = (UUID(f"00000000-0000-4000-8000-{i:012}", version=4) for i in range(10000))
    return mocker.patch("uuid.uuid4", side_effect=side_effect)


def _in_memory_store() -> Any:
    return importlib.import_module("graphruntime.store.memory").InMemoryStore()


@pytest.fixture(params=["in_memory"])
def sync_store() -> Any:
    return _in_memory_store()


@pytest_asyncio.fixture(params=["in_memory"])
async def async_store() -> Any:
    return _in_memory_store()


@pytest.fixture(params=["memory"])
def sync_checkpointer() -> Any:
    return MemorySaverAssertImmutable()


@pytest_asyncio.fixture(params=["memory"])
async def async_checkpointer() -> Any:
    return MemorySaverAssertImmutable()


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> Any:
    if module_path.parent != SUITE.here or not module_path.name.startswith("test_"):
        return None
    if TARGET == "graphruntime":
        lend_private_names(module_path)
    return AsyncioModule.from_parent(parent, path=module_path)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    apply_lists(SUITE, config, items, timeout=TIMEOUT)
