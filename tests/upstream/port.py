"""Vendor LangGraph's public-API tests into tests/upstream (or check that they are vendored as is).

    python -m tests.upstream.port [--source DIR]   # copy, transform, rewrite excluded.tsv
    python -m tests.upstream.port --check          # fail if a vendored file drifted

The only change made to a vendored file is the import prefix (see :func:`transform`):
``from langgraph.X import`` becomes ``from graphruntime.X import`` when ``X`` is public (no
path component starts with ``_``), and ``from tests.X import`` becomes
``from tests.upstream.X import``. Imports of LangGraph-private modules stay as they are:
the promise covers the public modules only, and the tests that use them are excluded.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

from tests.upstream.harness import exclusions
from tests.upstream.harness.paths import HERE

DEFAULT_SOURCE = Path("/work/lg/langgraph-1.2.22")

# Test files taken from langgraph's tests/ folder.
VENDORED_TESTS = (
    "test_channels.py",
    "test_checkpoint_migration.py",
    "test_config_async.py",
    "test_delta_channel_exit_mode.py",
    "test_delta_channel_fork.py",
    "test_delta_channel_id_stability.py",
    "test_delta_channel_migration.py",
    "test_delta_channel_node_cache.py",
    "test_delta_channel_parallel_order.py",
    "test_delta_channel_run_input.py",
    "test_delta_channel_seal_subscribers.py",
    "test_delta_channel_subgraph.py",
    "test_delta_channel_supersteps_bound.py",
    "test_delta_channel_to_plain.py",
    "test_delta_channel_update_overwrite.py",
    "test_delta_channel_update_state.py",
    "test_delta_channel_write_failures.py",
    "test_deprecation.py",
    "test_graph_callbacks.py",
    "test_interleave_arrival_order.py",
    "test_interrupt_migration.py",
    "test_interrupt_state.py",
    "test_interruption.py",
    "test_large_cases.py",
    "test_large_cases_async.py",
    "test_managed_values.py",
    "test_messages_state.py",
    "test_parent_command.py",
    "test_parent_command_async.py",
    "test_pregel.py",
    "test_pregel_async.py",
    "test_pregel_debug.py",
    "test_pregel_stream_events_v3.py",
    "test_pydantic.py",
    "test_retry.py",
    "test_runnable.py",
    "test_runtime.py",
    "test_state.py",
    "test_stream_before_builtins.py",
    "test_stream_data_transformers.py",
    "test_stream_events_v3.py",
    "test_stream_events_v3_e2e.py",
    "test_stream_events_v3_kwarg_forwarding.py",
    "test_stream_lifecycle_transformer.py",
    "test_stream_messages_transformer.py",
    "test_stream_namespaces.py",
    "test_stream_subgraph_transformer.py",
    "test_strict_resume.py",
    "test_subgraph_detection.py",
    "test_subgraph_persistence.py",
    "test_subgraph_persistence_async.py",
    "test_time_travel.py",
    "test_time_travel_async.py",
    "test_tool_stream_handler.py",
    "test_trace_policy.py",
    "test_tracing_interops.py",
    "test_type_checking.py",
    "test_utils.py",
)

# Support modules the tests import, transformed like the tests.
VENDORED_SUPPORT = (
    "agents.py",
    "any_int.py",
    "any_str.py",
    "fake_chat.py",
    "fake_tracer.py",
    "messages.py",
)

# Files of langgraph's tests/ not taken, with the reason (also written to excluded.tsv).
SKIPPED_FILES = {
    "test_algo.py": "private: tests langgraph.pregel._algo (prepare_next_tasks, apply_writes)",
    "test_runner_futures.py": "private: tests langgraph.pregel._runner._should_stop_others",
    "test_serde_allowlist.py": "private: tests langgraph._internal._serde",
    "test_remote_graph.py": (
        "network: RemoteGraph is an HTTP client of LangGraph Server (langgraph_sdk); "
        "its tests stand in for that server with mocks of the SDK client"
    ),
    "test_remote_graph_v3.py": (
        "network: RemoteGraph v3 streaming over HTTP (langgraph_sdk); also private "
        "langgraph.pregel._remote_run_stream"
    ),
    "test_prune_postgres.py": (
        "network: tests the langgraph-checkpoint-postgres distribution's prune against a "
        "Postgres at a hard-coded TCP address (localhost:5442); not langgraph's API"
    ),
    "test_delta_channel_benchmark.py": (
        "network: a benchmark sweeping a Postgres at a hard-coded TCP address "
        "(localhost:5432, LANGGRAPH_BENCH_POSTGRES_URI); asserts no behaviour"
    ),
}

# Hand-adapted support (not regenerated here): see README.md.
HAND_ADAPTED = ("memory_assert.py", "conftest.py")

_IMPORT = re.compile(r"^(?P<indent>[ \t]*)(?P<kw>from|import)[ \t]+(?P<module>[A-Za-z_][\w.]*)")


def is_private(module: str) -> bool:
    """True when a component of the dotted ``module`` path starts with ``_``."""
    return any(part.startswith("_") for part in module.split("."))


def transform(source: str) -> str:
    """Apply the prefix swap to every import line of ``source``; nothing else changes."""
    out: list[str] = []
    for line in source.splitlines(keepends=True):
        match = _IMPORT.match(line)
        if match is not None:
            module = match["module"]
            new = module
            if (module == "langgraph" or module.startswith("langgraph.")) and not is_private(
                module
            ):
                new = "graphruntime" + module[len("langgraph") :]
            elif module.startswith("tests."):
                new = "tests.upstream." + module[len("tests.") :]
            if new != module:
                start, end = match.span("module")
                line = line[:start] + new + line[end:]
        out.append(line)
    return "".join(out)


_SNAPSHOT_MODULE_PATH = re.compile(r'^(?P<indent>[ \t]*)"tests",\n(?=(?P=indent)"test_)', re.M)


def transform_snapshot(text: str) -> str:
    """pytest imports a vendored test module as ``upstream.test_x`` (tests/upstream is the
    topmost package): a snapshot of a test class's module path follows."""
    return _SNAPSHOT_MODULE_PATH.sub(lambda m: f'{m["indent"]}"upstream",\n', text)


def _snapshots(tests: Path) -> list[Path]:
    return [
        ambr
        for ambr in sorted((tests / "__snapshots__").glob("*.ambr"))
        if f"{ambr.stem}.py" in VENDORED_TESTS
    ]


def _vendor(source: Path) -> None:
    tests = source / "tests"
    for name in (*VENDORED_TESTS, *VENDORED_SUPPORT):
        (HERE / name).write_text(transform((tests / name).read_text()))
    snapshots = HERE / "__snapshots__"
    snapshots.mkdir(exist_ok=True)
    for ambr in _snapshots(tests):
        (snapshots / ambr.name).write_text(transform_snapshot(ambr.read_text()))
    shutil.copyfile(source / "LICENSE", HERE / "LICENSE.langgraph")


def _check(source: Path) -> list[str]:
    tests = source / "tests"
    drift = []
    for name in (*VENDORED_TESTS, *VENDORED_SUPPORT):
        vendored = HERE / name
        if not vendored.exists() or vendored.read_text() != transform((tests / name).read_text()):
            drift.append(name)
    for ambr in _snapshots(tests):
        vendored = HERE / "__snapshots__" / ambr.name
        if not vendored.exists() or vendored.read_text() != transform_snapshot(ambr.read_text()):
            drift.append(f"__snapshots__/{ambr.name}")
    return drift


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="unpacked sdist")
    parser.add_argument("--check", action="store_true", help="only check, change nothing")
    args = parser.parse_args(argv)
    if args.check:
        drift = _check(args.source)
        for name in drift:
            print(f"drifted from the transformed upstream file: tests/upstream/{name}")
        return 1 if drift else 0
    _vendor(args.source)
    rows = exclusions.analyse([HERE / name for name in VENDORED_TESTS])
    rows += [(name, reason) for name, reason in sorted(SKIPPED_FILES.items())]
    exclusions.write_tsv(rows)
    print(f"vendored {len(VENDORED_TESTS)} test files; {len(rows)} exclusion rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
