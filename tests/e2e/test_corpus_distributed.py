"""The whole differential corpus through GraphClient on real Celery workers.

Each scenario runs twice: in-process on graphruntime, and with the ``remote`` runtime
(:mod:`tests.e2e.corpus_remote`), whose graphs run on the cluster's two worker
processes from the registry entries :mod:`tests.e2e.corpus_graphs` provides. The
normalized transcripts (``tests.differential.observe``: ids compare by role, node
counts come from the workers' ledger) must be equal.

``SKIPPED`` lists the scenarios that cannot run distributed by nature, each with the
reason and where its behaviour is still covered end to end. ``KNOWN_DISTRIBUTED_BUGS``
lists scenarios that show a bug of the distributed runtime, and ``BY_DESIGN`` those the
cluster refuses on purpose with a clear error: both are strict xfails, so a change
turns them into failures that ask for their removal from the set.
"""

from __future__ import annotations

import os
import pprint
from collections import defaultdict
from typing import Any

import pytest

from tests.differential.observe import same
from tests.e2e import corpus_graphs
from tests.e2e.corpus_remote import RemoteRecorder, abandon_runs, run_local, run_remote
from tests.e2e.corpus_support import LEDGER_DDL, configure_db, db
from workers.client import GraphClient
from workers.local_cluster import LocalCluster

SCENARIOS = corpus_graphs.all_scenarios()

SKIPPED: dict[str, str] = {
    "failed_node_keeps_sibling_writes": (
        "its flaky node waits for an event set by an in-process saver subclass "
        "(SignallingSaver.put_writes); the workers save with Postgres. Covered by "
        "e2e_failed_node_keeps_sibling_writes (same steps, no hook; issue items 4 and 6) "
        "and test_cluster_basics.test_node_error_is_raised_to_the_caller"
    ),
    "interrupt_without_checkpointer": (
        "a distributed run always has a checkpointer (Postgres), so 'Cannot use "
        "Command(resume=...) without checkpointer' cannot happen; interrupt() and resume "
        "are covered by the interrupt_* and subgraph_* scenarios (item 5)"
    ),
    "invalid_graph_nodes": (
        "builder errors only, no graph is compiled or run; the remote runtime's builder is "
        "graphruntime's own, so there is nothing distributed to compare (item 3)"
    ),
    "invalid_graph_edges": (
        "builder/compile errors only, no graph is run; nothing distributed to compare (item 3)"
    ),
    "child_graph_own_thread": (
        "the child graph saves with an InMemorySaver of its own, which lives in the worker "
        "process that ran the node; the test process cannot read it back"
    ),
}

# scenario -> the distributed-runtime bug it shows (strict xfail: a fix makes it XPASS,
# which fails and asks for the entry's removal). workers/ and graphruntime/ are not
# edited here; each entry names where the bug is.
_RESUME_SAME_CHECKPOINT = (
    "a second resume while the thread is still on the same checkpoint (the first resume "
    "re-interrupted in the same step) raises ResumeConflictError: the one-resume-per-"
    "checkpoint guard (graphruntime_runs_one_resume, set by GraphClient._prepare_resume) "
    "keys on the checkpoint id only"
)
_LOOP_ERROR_HANGS = (
    "an error raised by the loop itself in the coordinator ({what}) escapes "
    "workers.coordinator._advance (only node errors are handled): the Celery task fails, "
    "the run stays '{status}' forever and invoke times out instead of raising {error}"
)
KNOWN_DISTRIBUTED_BUGS: dict[str, str] = {}

# scenario -> why the cluster refuses what it does on purpose (strict xfails too: each
# refusal is a clear error, checked by tests/unit/workers/test_node_features.py)
BY_DESIGN: dict[str, str] = {
    "durability_exit": (
        "the workers save every step (each may run on another worker), so GraphClient "
        "refuses durability='exit' with a ValueError instead of saving only the last"
    ),
    "run_control_drain": (
        "RunControl is an in-process object: GraphClient refuses control= (a run is "
        "stopped with GraphClient.cancel; workers finish their jobs on a warm shutdown)"
    ),
}

# Ledger rows of every remote scenario run in this session, for the superstep test.
ROWS: dict[str, list[dict[str, Any]]] = {}


@pytest.fixture(scope="session")
def corpus_client(cluster: LocalCluster, client: GraphClient) -> GraphClient:
    configure_db(cluster.env["DATABASE_URL"])
    with db() as d:
        d.execute("SELECT pg_advisory_lock(4242, 77)")
        try:
            d.execute(LEDGER_DDL)
        finally:
            d.execute("SELECT pg_advisory_unlock(4242, 77)")
        # runs a previous session left hung (each one a reported bug) would be nudged by
        # the sweeper over and over; finish them before this session measures anything
        stale = d.execute(
            "SELECT thread_id FROM graphruntime_runs WHERE graph LIKE 'corpus.%%'"
            " AND status IN ('queued', 'running')"
            # only runs a previous session left behind: another pytest process may be
            # running corpus scenarios on its own cluster right now
            " AND updated_at < now() - interval '10 minutes'"
        )
    abandon_runs(client, sorted({t for (t,) in stale}))
    return client


def _mismatch(expected: list[Any], actual: list[Any]) -> str | None:
    for i, (e, a) in enumerate(zip(expected, actual, strict=False)):
        if e[0] != a[0] or not same(e[1], a[1]):
            return (
                f"entry #{i} differs\n"
                f"  in-process  [{e[0]}]:\n{pprint.pformat(e[1], width=96, indent=4)}\n"
                f"  distributed [{a[0]}]:\n{pprint.pformat(a[1], width=96, indent=4)}"
            )
    if len(expected) != len(actual):
        longer, who = (
            (expected, "in-process") if len(expected) > len(actual) else (actual, "distributed")
        )
        extra = longer[min(len(expected), len(actual))]
        return (
            f"transcript lengths differ: in-process {len(expected)}, distributed {len(actual)}; "
            f"first extra entry ({who}) [{extra[0]}]:\n"
            f"{pprint.pformat(extra[1], width=96, indent=4)}"
        )
    return None


def _params() -> list[Any]:
    params = []
    for name in sorted(SCENARIOS):
        marks: list[Any] = []
        if name in SKIPPED:
            marks.append(pytest.mark.skip(reason=SKIPPED[name]))
        elif name in KNOWN_DISTRIBUTED_BUGS or name in BY_DESIGN:
            reason = KNOWN_DISTRIBUTED_BUGS.get(name) or BY_DESIGN[name]
            marks.append(pytest.mark.xfail(reason=reason, strict=True))
        params.append(pytest.param(name, marks=marks))
    return params


@pytest.mark.parametrize("name", _params())
def test_scenario_distributed(name: str, corpus_client: GraphClient) -> None:
    fn = SCENARIOS[name]
    expected = run_local(fn)
    actual, rec = run_remote(corpus_client, name, fn)
    ROWS[name] = rec.rows
    problem = _mismatch(expected, actual)
    if problem:
        summary = (fn.__doc__ or "").strip().splitlines()[0]
        pytest.fail(f"{name}: {summary}\n{problem}", pytrace=False)


def test_capture_is_deterministic() -> None:
    """Capturing the corpus again compiles the same graphs in the same order."""
    assert corpus_graphs.signatures(corpus_graphs.capture_all()) == corpus_graphs.SIGNATURES
    names = corpus_graphs.GRAPHS.split(",")
    assert len(names) == sum(len(s) for s in corpus_graphs.SIGNATURES.values())


def test_skip_list_is_small_and_known() -> None:
    assert set(SKIPPED) <= set(SCENARIOS)
    assert set(KNOWN_DISTRIBUTED_BUGS) | set(BY_DESIGN) <= set(SCENARIOS)
    assert not set(SKIPPED) & (set(KNOWN_DISTRIBUTED_BUGS) | set(BY_DESIGN))
    assert not set(KNOWN_DISTRIBUTED_BUGS) & set(BY_DESIGN)
    assert len(SKIPPED) <= 5


def _worker_group(cluster: LocalCluster, pid: int) -> int | None:
    """Which worker (by index) a pid belongs to: workers lead their own process group."""
    try:
        group = os.getpgid(pid)
    except ProcessLookupError:
        return None
    for w in cluster.workers:
        if w.pid == group:
            return w.index
    return None


def _spread_steps(rows: list[dict[str, Any]]) -> dict[tuple[Any, ...], set[int]]:
    """Supersteps (thread, namespace, step) whose node executions ran in >= 2 pids."""
    pids: dict[tuple[Any, ...], set[int]] = defaultdict(set)
    for row in rows:
        if row["kind"] == "count" and row["step"] is not None:
            # a task's namespace is "<parent ns>|<node>:<task id>": group by the parent's
            parent = "|".join(str(row["checkpoint_ns"]).split("|")[:-1])
            pids[(row["thread_id"], parent, row["step"])].add(row["pid"])
    return {key: p for key, p in pids.items() if len(p) >= 2}


def test_one_superstep_runs_in_several_worker_processes(
    corpus_client: GraphClient, cluster: LocalCluster
) -> None:
    """The Send fan-out of send_map_reduce: its write tasks of one step ran in >= 2 workers."""
    spread: dict[tuple[Any, ...], set[int]] = {}
    for _attempt in range(10):
        _transcript, rec = run_remote(
            corpus_client, "send_map_reduce", SCENARIOS["send_map_reduce"]
        )
        assert isinstance(rec, RemoteRecorder)
        writes = [r for r in rec.rows if r["label"] == "write"]
        assert len(writes) == 6  # 3 Sends x 2 runs, each executed once
        spread = _spread_steps(writes)
        if spread:
            break
    assert spread, "the Send tasks of every fan-out step ran in one worker process"
    for pids in spread.values():
        workers = {_worker_group(cluster, pid) for pid in pids}
        assert None not in workers, f"pids {pids} are not all worker processes"
        assert os.getpid() not in pids
        assert len(workers) >= 2, f"pids {pids} belong to one worker"


def test_corpus_supersteps_spread_over_workers() -> None:
    """Across the corpus run, multi-task supersteps ran their tasks in both worker processes."""
    if not ROWS:
        pytest.skip("the corpus did not run in this session")
    spread = [key for rows in ROWS.values() for key in _spread_steps(rows)]
    assert spread, "no superstep of the corpus ran its tasks in two worker processes"
