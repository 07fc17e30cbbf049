"""The main job: an approval workflow on real Celery workers.

``make demo`` starts an embedded Postgres and Redis (or uses DATABASE_URL and
REDIS_URL), two ``celery worker`` processes, runs a fan-out review of 8
documents across them, pauses for a human decision, resumes it with a plain
JSON message on the ops queue (as an operator would), and stops every process
it started.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections import Counter

import redis

from graphruntime.errors import InvalidResumeError
from graphruntime.types import Command
from workers.client import GraphClient
from workers.local_cluster import LocalCluster

GRAPHS = "approvals=examples.approval_graphs:approval_graph"


def main() -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    print("starting embedded Postgres + Redis and 2 celery workers ...")
    with LocalCluster(GRAPHS, workers=2, concurrency=2, pythonpath=[root]) as cluster:
        print("workers:", ", ".join(str(w.pid) for w in cluster.workers))
        settings = cluster.settings()
        client = GraphClient.from_env(settings)
        thread = {"configurable": {"thread_id": f"demo-{uuid.uuid4().hex[:8]}"}}
        docs = [f"doc-{i}" for i in range(8)]

        started = time.perf_counter()
        paused = client.invoke("approvals", {"docs": docs}, thread, timeout=120)
        took = time.perf_counter() - started
        pids = Counter(r["worker_pid"] for r in paused["reviews"])
        print(
            f"reviewed {len(paused['reviews'])} documents in {took:.2f}s, "
            f"across worker processes {dict(pids)}"
        )
        question = paused["__interrupt__"][0]
        print("paused for a human:", question.value)
        print("state.next:", client.get_state("approvals", thread).next)

        # An operator resumes the thread with a plain JSON message on the ops queue.
        message = {
            "graph": "approvals",
            "thread_id": thread["configurable"]["thread_id"],
            "resume": "yes",
            "idempotency_key": "demo-approval-1",
        }
        queue = redis.Redis.from_url(settings.redis_url.replace("redis+socket://", "unix://"))
        queue.lpush(settings.resume_queue, json.dumps(message))
        queue.lpush(settings.resume_queue, json.dumps(message))  # delivered twice: applied once
        print("pushed the resume message (twice) onto", settings.resume_queue)

        deadline = time.monotonic() + 60
        state = client.get_state("approvals", thread)
        while state.values.get("decision") is None and time.monotonic() < deadline:
            time.sleep(0.05)
            state = client.get_state("approvals", thread)
        print("decision:", state.values.get("decision"), "| next:", state.next)

        try:
            client.invoke("approvals", Command(resume="no"), thread)
        except InvalidResumeError as exc:
            print("a late second resume is refused:", exc)
        client.close()
    print("workers stopped")


if __name__ == "__main__":
    main()
