"""A real cluster for end-to-end tests: embedded Postgres and Redis, two celery workers.

All e2e tests share one cluster per pytest process; scripts/test.sh runs them in a
pytest process of their own (no xdist), so fault tests that kill workers never hit
another test's run.
"""

from __future__ import annotations

import importlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphruntime.compat import ALIAS_SETTING
from workers.client import GraphClient
from workers.local_cluster import LocalCluster

ROOT = Path(__file__).resolve().parents[2]

# Modules whose GRAPHS string lists name=module:attribute entries for the workers.
GRAPH_MODULES = [
    "tests.e2e.graphs",
    "tests.e2e.fault_graphs",
    "tests.e2e.corpus_graphs",
    "tests.e2e.ui_graphs",
    "tests.api_diff.app.graphs",
    "tests.e2e.stream_graphs",
]

# Graphs built by code that imports langgraph itself (LangChain's create_agent): the shared
# cluster's workers serve them through the alias (ALIAS_ENV). Their modules are imported
# only where the alias is on, never in the test process (other tests use the real
# LangGraph here): a client of them runs in a process of its own (agent_client.py).
ALIASED_GRAPHS = "lc_agent=tests.e2e.agent_graphs:agent"
ALIAS_ENV = {ALIAS_SETTING: "1"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.e2e)


def registry_spec() -> str:
    return ",".join(importlib.import_module(m).GRAPHS for m in GRAPH_MODULES)


# Fast heartbeats and a fast sweeper, so fault tests see recovery within seconds. The
# default GRAPHRUNTIME_TASK_STALE_AFTER (300 s) stays: recovery must come from heartbeats
# (a dead worker) and empty queues (a lost message), never from waiting that out.
FAST_RECOVERY = {
    "GRAPHRUNTIME_HEARTBEAT_INTERVAL": "1",
    "GRAPHRUNTIME_SWEEP_INTERVAL": "0.5",
}
# Small chunking thresholds, so fan-outs of 8 tasks or more run several tasks per job
# (production defaults start chunking at 128) while small ones keep a job per task.
CHUNKING = {"GRAPHRUNTIME_MIN_JOBS_PER_STEP": "4", "GRAPHRUNTIME_TASK_CHUNK_MAX": "3"}


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(
        f"{registry_spec()},{ALIASED_GRAPHS}",
        workers=2,
        concurrency=1,
        pythonpath=[str(ROOT)],
        # E2E_LEDGER: corpus nodes report rec.count/record to e2e_ledger (corpus_support)
        extra_env={**FAST_RECOVERY, **CHUNKING, **ALIAS_ENV, "E2E_LEDGER": "1"},
    ) as c:
        yield c


@pytest.fixture(scope="session")
def client(cluster: LocalCluster) -> Iterator[GraphClient]:
    settings = cluster.settings()
    c = GraphClient.from_env(settings)
    yield c
    c.close()


@pytest.fixture
def thread() -> dict[str, dict[str, str]]:
    return {"configurable": {"thread_id": f"e2e-{uuid.uuid4()}"}}
