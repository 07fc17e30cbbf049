"""Fixtures and collection rules for LangChain's vendored agent tests (see README.md).

``UPSTREAM_TARGET=graphruntime`` (default) installs the import alias
(``graphruntime.compat.alias_langgraph``) before anything imports LangGraph: LangChain's
``create_agent`` and the tests' own ``langgraph`` imports then get graphruntime. With
``UPSTREAM_TARGET=langgraph`` nothing is aliased: the same files run on LangGraph. Either way
the process must not have imported LangGraph or graphruntime first, so this suite runs in a
pytest process of its own (``pytest tests/upstream_langchain``).

The fixtures are upstream's (tests/unit_tests/conftest.py and agents/conftest.py) in its
default ``LANGGRAPH_TEST_FAST`` mode: in-memory checkpointers and stores; the VCR tests
replay the copied cassettes; blockbuster fails a test that blocks the event loop.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from importlib import util
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from tests.vendored.harness import TARGET

if TARGET == "graphruntime":
    from graphruntime.compat import alias_langgraph

    alias_langgraph()

import pytest_asyncio
from blockbuster import BlockBuster, blockbuster_ctx
from langchain_tests.conftest import (
    CustomPersister,
    CustomSerializer,
    base_vcr_config,
)
from vcr import VCR

from tests.upstream_langchain.conftest_checkpointer import _checkpointer_memory
from tests.upstream_langchain.conftest_store import _store_memory
from tests.upstream_langchain.port import SUITE
from tests.vendored.harness import AsyncioModule, apply_lists

TIMEOUT = float(os.environ.get("UPSTREAM_TIMEOUT", "30"))

_EXTRA_HEADERS = [
    ("openai-organization", "PLACEHOLDER"),
    ("user-agent", "PLACEHOLDER"),
    ("x-openai-client-user-agent", "PLACEHOLDER"),
]


@pytest.fixture(autouse=True)
def blockbuster() -> Iterator[BlockBuster]:
    with blockbuster_ctx() as bb:
        yield bb


def _redact_request(request: Any) -> Any:
    for k in request.headers:
        request.headers[k] = "**REDACTED**"
    request.uri = "**REDACTED**"
    return request


def _redact_response(response: dict[str, Any]) -> dict[str, Any]:
    for k in response["headers"]:
        response["headers"][k] = "**REDACTED**"
    return response


@pytest.fixture(scope="session")
def vcr_config() -> dict[str, Any]:
    config = base_vcr_config()
    config["match_on"] = [m if m != "body" else "json_body" for m in config.get("match_on", [])]
    config.setdefault("filter_headers", []).extend(_EXTRA_HEADERS)
    config["before_record_request"] = _redact_request
    config["before_record_response"] = _redact_response
    config["serializer"] = "yaml.gz"
    config["path_transformer"] = VCR.ensure_suffix(".yaml.gz")
    # upstream's cassettes live in its tests/cassettes; here, beside the tests
    config["cassette_library_dir"] = str(SUITE.here / "cassettes")
    config["record_mode"] = "none"  # replay only: never the network
    return config


def _json_body_matcher(r1: Any, r2: Any) -> None:
    b1, b2 = r1.body or b"", r2.body or b""
    if isinstance(b1, bytes):
        b1 = b1.decode("utf-8")
    if isinstance(b2, bytes):
        b2 = b2.decode("utf-8")
    try:
        j1, j2 = json.loads(b1), json.loads(b2)
    except ValueError:
        assert b1 == b2, f"body mismatch (non-JSON):\n{b1}\n!=\n{b2}"
        return
    assert j1 == j2, f"body mismatch:\n{j1}\n!=\n{j2}"


def pytest_recording_configure(config: dict[str, Any], vcr: VCR) -> None:
    vcr.register_persister(CustomPersister())
    vcr.register_serializer("yaml.gz", CustomSerializer())
    vcr.register_matcher("json_body", _json_body_matcher)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def deterministic_uuids(mocker: Any) -> Any:
    side_effect = (UUID(f"00000000-0000-4000-8000-{i:012}", version=4) for i in range(10000))
    return mocker.patch("uuid.uuid4", side_effect=side_effect)


@pytest.fixture(params=["in_memory"])
def sync_store() -> Iterator[Any]:
    with _store_memory() as store:
        yield store


@pytest_asyncio.fixture(params=["in_memory"])
async def async_store() -> AsyncIterator[Any]:
    with _store_memory() as store:
        yield store


@pytest.fixture(params=["memory"])
def sync_checkpointer() -> Iterator[Any]:
    with _checkpointer_memory() as checkpointer:
        yield checkpointer


@pytest_asyncio.fixture(params=["memory"])
async def async_checkpointer() -> AsyncIterator[Any]:
    with _checkpointer_memory() as checkpointer:
        yield checkpointer


# -- collection -------------------------------------------------------------------------------


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> Any:
    if not module_path.is_relative_to(SUITE.here) or not module_path.name.startswith("test_"):
        return None
    return AsyncioModule.from_parent(parent, path=module_path)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "requires: the test needs these packages installed")
    # upstream runs with --snapshot-warn-unused: deselected tests leave snapshots unused
    if hasattr(config.option, "warn_unused_snapshots"):
        config.option.warn_unused_snapshots = True


def _installed(package: str, seen: dict[str, bool]) -> bool:
    if package not in seen:
        try:
            seen[package] = util.find_spec(package) is not None
        except (ImportError, ValueError):
            seen[package] = False
    return seen[package]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # upstream's `requires` marker: skip a test whose optional packages are not installed
    seen: dict[str, bool] = {}
    for item in items:
        marker = item.get_closest_marker("requires")
        if marker is None:
            continue
        missing = [pkg for pkg in marker.args if not _installed(pkg, seen)]
        if missing:
            item.add_marker(pytest.mark.skip(reason=f"Requires pkg: `{missing[0]}`"))
    apply_lists(SUITE, config, items, timeout=TIMEOUT)
