"""Chaos, crash mode: Postgres killed hard right after the moments that matter.

The chaos workload (tests/chaos/workload.py) runs while, every few seconds, the private
Postgres is killed, its whole process group at once (SIGKILL, or SIGSTOP for a while and
then SIGKILL: nothing shuts down), right after one of these moments committed:

- ``release``: a thread's lease freed while its run waits on its step's task jobs;
- ``dispatch``: a step's tasks registered (their jobs are sent next);
- ``end``: a run's end (with its lease's release and its inbox);
- ``ack``: a submit or a resume taken (the client or the resume queue is told next);
- ``lease``, ``claim``: a thread's lease or a task taken (soft state, async commits).

It is then started again on the same data directory: crash recovery. The server runs
with ``wal_writer_delay`` at its maximum (10 s) and ``synchronous_commit`` at its
default, so an async commit (a lease or claim taken, a run marked running, held
checkpoint puts) reaches the WAL files only with the next durable commit or the WAL
writer's next round: a crash right after a moment loses the async commits that followed
it, as a rule, not by luck. Each crash checks it with a canary, an async commit made
just before the kill (the count of canaries lost is printed).

The test learns of a moment from test-only triggers (tests/chaos/moments.sql): they
NOTIFY it once an armed moment committed. Nothing in the product changes.

The checks are the workload's: every node's entry exactly once, every acknowledged
submit and resume the run that ran, no run left queued or running and no lease held.
``make chaos`` runs it (``CHAOS_CRASH_SECONDS``, default ``CHAOS_SECONDS``); ``make test``
leaves it out (scripts/test.sh says why).
"""

from __future__ import annotations

import os
import random
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from tests.chaos.chaos_graphs import GRAPHS
from tests.chaos.workload import DRAIN, SETTLE, run_with_faults
from tests.e2e.private_cluster import Private, private_cluster

pytestmark = pytest.mark.e2e

CRASH_SECONDS = float(os.environ.get("CHAOS_CRASH_SECONDS", os.environ.get("CHAOS_SECONDS", "30")))
CLIENT_THREADS = int(os.environ.get("CHAOS_CLIENT_THREADS", "6"))
MOMENTS = ("release", "dispatch", "end", "ack", "lease", "claim")
MOMENT_WAIT = 15.0  # seconds to wait for an armed moment; then the crash is untimed
MOMENTS_SQL = (Path(__file__).parent / "moments.sql").read_text()


@pytest.fixture(scope="module")
def crashing() -> Iterator[Private]:
    with private_cluster(
        {"GRAPHRUNTIME_GRAPHS": GRAPHS},
        workers=3,
        postgres_settings={"wal_writer_delay": "10s"},
    ) as p:
        with psycopg.connect(p.ledger.url, autocommit=True) as conn:
            conn.execute(MOMENTS_SQL)
        yield p


@dataclass
class Crash:
    at: str  # wall clock (UTC), as in the workers' and the server's logs
    moment: str
    subject: str | None  # the thread or run the moment was about (None: none came)
    stopped_for: float  # seconds SIGSTOPped before the SIGKILL (0: SIGKILL at once)
    canary_lost: bool


class Crasher:
    """Kills the private cluster's Postgres right after an armed moment commits."""

    def __init__(self, p: Private, rng: random.Random) -> None:
        self.p = p
        self.rng = rng
        self.url = p.ledger.url
        self.crashes: list[Crash] = []

    def crash_at(self, moment: str) -> Crash:
        stopped_for = self.rng.choice([0.0, self.rng.uniform(0.5, 4.0)])
        canary = uuid.uuid4().hex
        with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
            conn.execute("SET synchronous_commit = off")  # the canary's commit
            conn.execute("LISTEN chaos_moment")
            conn.execute("UPDATE chaos_armed SET moment = %s", (moment,))
            known = self.p.postgres.processes()
            note = next(conn.notifies(timeout=MOMENT_WAIT, stop_after=1), None)
            at = datetime.now(UTC).strftime("%H:%M:%S.%f")
            if self.rng.random() < 0.5:  # now, or a little later (the moment's next steps)
                time.sleep(self.rng.uniform(0.0, 0.02))
            conn.execute("INSERT INTO chaos_canary VALUES (%s)", (canary,))
            self.p.postgres.crash(
                stopped_for=stopped_for, down=self.rng.uniform(0.0, 1.0), known=known
            )
        with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
            conn.execute("UPDATE chaos_armed SET moment = NULL")
            kept = conn.execute("SELECT 1 FROM chaos_canary WHERE id = %s", (canary,)).fetchone()
        subject = note.payload.split(" ", 1)[1] if note is not None else None
        crash = Crash(at, moment, subject, stopped_for, canary_lost=kept is None)
        self.crashes.append(crash)
        print(f"crash: {crash}", flush=True)  # the timeline, for a failure's reproduction
        return crash


@pytest.mark.timeout(CRASH_SECONDS + DRAIN + SETTLE + 240)
def test_the_ledger_holds_when_postgres_crashes_at_the_moments_that_matter(
    crashing: Private,
) -> None:
    rng = random.Random(os.environ.get("CHAOS_SEED"))
    crasher = Crasher(crashing, rng)

    def crash() -> str:
        moment = rng.choice(MOMENTS)
        done = crasher.crash_at(moment)
        style = "stop+kill" if done.stopped_for else "kill"
        return f"{style} after {moment if done.subject is not None else f'{moment} (none came)'}"

    outcome = run_with_faults(
        crashing, seconds=CRASH_SECONDS, clients=CLIENT_THREADS, rng=rng, inject=crash
    )
    lost = sum(c.canary_lost for c in crasher.crashes)
    print(  # the run's shape, for the record (pytest -s)
        f"crash: {len(outcome.done)} threads, {len(crasher.crashes)} crashes "
        f"(the canary async commit lost in {lost}), {dict(outcome.faults)}, "
        f"{outcome.seconds:.0f}s"
    )
    assert crasher.crashes, "no crash happened"
