"""``graphrun resume`` and ``graphrun runs``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from workers.cli._output import (
    Col,
    JsonOption,
    WideOption,
    connected,
    console,
    errors,
    fail,
    json_line,
    parse_json,
    table,
)


def resume(
    graph: Annotated[str, typer.Option(help="Registered graph name.")],
    thread: Annotated[str, typer.Option(help="Thread id.")],
    value: Annotated[
        str | None, typer.Option(help="Resume value as JSON (a string must be quoted).")
    ] = None,
    decision: Annotated[
        list[str] | None,
        typer.Option(
            "--decision",
            help="Instead of --value: answer the thread's waits (or --interrupt) each in its "
            "own format: approve, edit, reject or respond, or LangChain's JSON decision; "
            "repeat it for a batched request's actions, in order.",
        ),
    ] = None,
    message: Annotated[
        str | None, typer.Option(help="A reject's reason or a respond's answer.")
    ] = None,
    edit_args: Annotated[
        str | None, typer.Option("--edit-args", help="An edit's new args as JSON.")
    ] = None,
    interrupt: Annotated[
        str | None, typer.Option(help="With --decision: only this wait (an interrupt id).")
    ] = None,
    key: Annotated[
        str | None, typer.Option(help="Idempotency key: the same key applies once.")
    ] = None,
    actor: Annotated[str | None, typer.Option(help="Who resumes (kept with the run).")] = None,
    note: Annotated[str | None, typer.Option(help="Why (kept with the run).")] = None,
    wait: Annotated[
        bool, typer.Option(help="Wait for the resumed run and print its result.")
    ] = True,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Resume an interrupted thread (checked against its pending interrupts when it runs).

    A map of interrupt id to value resumes several waits of the thread (``graphrun inbox
    list`` shows the ids). Exit codes: 0 applied (or queued, with --no-wait); 1 refused or
    failed (nothing was changed); 3 recorded but not yet sent to the broker (a worker's
    sweeper sends it).
    """
    from graphruntime.types import Command
    from workers.errors import NotDispatchedError

    if (value is None) == (not decision):
        fail("give --value (the resume value) or --decision, not both", 2)
    if interrupt is not None and value is not None:
        fail("--interrupt picks the wait a --decision answers; a --value names its own", 2)
    resume_value: Any = parse_json("--value", value) if value is not None else None
    with connected(redis=False) as client:  # no broker: recorded, exit 3
        if decision:
            resume_value = _decided(client, graph, thread, interrupt, decision, message, edit_args)
        try:
            handle = client.submit(
                graph,
                Command(resume=resume_value),
                {"configurable": {"thread_id": thread}},
                idempotency_key=key,
                actor=actor,
                note=note,
                route="cli",
            )
            if not as_json:
                state = "new" if handle.created else "already submitted"
                console.print(f"run {handle.run_id} ({state})", markup=False)
            result = handle.wait() if wait else None
        except NotDispatchedError as exc:
            fail(f"{type(exc).__name__}: {exc}", 3, style="yellow")
        except Exception as exc:  # noqa: BLE001 - shown to the operator, exit non-zero
            fail(f"{type(exc).__name__}: {exc}", 1)
    if as_json:
        json_line({"run_id": handle.run_id, "created": handle.created, "result": result})
    elif wait:
        console.print(result)
    else:
        console.print("queued: it is checked against the thread when it runs")


def _decided(
    client: Any,
    graph: str,
    thread: str,
    interrupt: str | None,
    decision: list[str],
    message: str | None,
    edit_args: str | None,
) -> dict[str, Any]:
    """The thread's pending waits (or one) answered with the decision: interrupt id ->
    value; refused (exit 2, nothing written) where a wait does not allow it."""
    from workers.cli._inbox import decision_of
    from workers.decisions import DecisionError, answer, read_request

    given = decision_of(decision, message, edit_args)
    waits = [
        w
        for w in client.inbox(graph, thread=thread, limit=1000).items
        if interrupt is None or w.interrupt_id == interrupt
    ]
    if not waits:
        which = f"wait {interrupt!r}" if interrupt else "pending wait"
        fail(f"Thread {thread!r} of graph {graph!r} has no {which}; nothing was resumed.", 1)
    try:
        return {
            w.interrupt_id: answer(read_request(w.value, w.response_schema), given) for w in waits
        }
    except DecisionError as exc:
        fail(f"DecisionError: {exc} Nothing was resumed.", 2)


def runs(
    thread: Annotated[str | None, typer.Option(help="Only this thread's runs.")] = None,
    graph: Annotated[str | None, typer.Option(help="Only runs of this graph.")] = None,
    status: Annotated[
        str | None,
        typer.Option(help="queued, running, interrupted, success, error or cancelled."),
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Only runs created in the last 30s/15m/2h/7d.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000)] = 50,
    wide: Annotated[bool, WideOption] = False,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Recent runs, newest first, with their errors."""
    from workers.cli._inbox import age_of, parse_age
    from workers.store import TERMINAL, RunQuery

    if status is not None and status not in {*TERMINAL, "queued", "running"}:
        fail(f"--status must be one of queued, running, {', '.join(sorted(TERMINAL))}", 2)
    age = parse_age(since).total_seconds() if since else None
    query = RunQuery(thread_id=thread, graph=graph, status=status, newer_than=age, limit=limit)
    with connected(redis=False, read_only=True) as client:
        rows = client.store.list_runs(query)
    if as_json:
        for row in rows:
            json_line(row)
        return
    table(
        (
            Col("run", 8, id=True),
            Col("graph", 10),
            Col("thread", 16, id=True),
            Col("status", 11),
            Col("step tasks", 11),
            Col("kind", wide_only=True),
            Col("age"),
            Col("created", wide_only=True),
            Col("error", fill=True),
        ),
        [
            (
                row["run_id"],
                row["graph"],
                row["thread_id"],
                row["status"],
                _progress(row["step_tasks"]),
                row["kind"],
                age_of(row["created_at"]),
                row["created_at"].isoformat(timespec="seconds"),
                _error_line(row["error"]),
            )
            for row in rows
        ],
        wide=wide,
    )


def _progress(step: dict[str, int] | None) -> str:
    """A running run's dispatched step, e.g. "7312/10000 done"."""
    return "" if step is None else f"{step['done']}/{step['total']} done"


def _error_line(error: dict[str, Any] | None) -> str:
    if not error:
        return ""
    where = f" (node {error['task']})" if error.get("task") else ""
    return f"{error.get('type', '')}: {error.get('message', '')}{where}"


def status(as_json: Annotated[bool, JsonOption] = False) -> None:
    """The cluster at a glance: workers alive, queue depths, runs in flight, pending
    interrupts, dead letters.

    Exit 0 when the cluster looks healthy; 1 when no worker is alive or Redis (the broker)
    does not answer (the table still shows what Postgres says); Postgres unreachable exits 1
    after GRAPHRUNTIME_CONNECT_TIMEOUT seconds, naming it.
    """
    from workers.services import redis_location

    with connected(redis=False) as client:
        settings = client.settings
        overview = client.store.overview(settings.stale_after)
        queues: dict[str, int | None] = {
            settings.coordinator_queue: None,
            settings.task_queue: None,
        }
        broker_problem = ""
        try:
            depths = client.broker.queue_depths()
            queues = {
                settings.coordinator_queue: depths.coordinator,
                settings.task_queue: depths.tasks,
            }
        except Exception as exc:  # noqa: BLE001 - reported, and the exit code says so
            where = redis_location(settings.redis_url) if settings.redis_url else "?"
            broker_problem = f"REDIS_URL: Redis at {where} does not answer: {exc}"
        dead = dead_letter_count(client) if not broker_problem else None
    report = {
        "workers_alive": overview.workers,
        "worker_processes": overview.processes,
        "broker_reachable": not broker_problem,
        "queues": queues,
        "runs_queued": overview.queued,
        "runs_running": overview.running,
        "pending_interrupts": overview.pending_interrupts,
        "overdue_interrupts": overview.overdue,
        "dead_letters": dead,
    }
    if as_json:
        json_line(report)
    else:
        table(
            ("", ""),
            [
                ("workers alive", overview.workers),
                ("  their processes", overview.processes),
                *((f"queue {name}", "?" if n is None else n) for name, n in queues.items()),
                ("runs queued", overview.queued),
                ("runs running", overview.running),
                ("pending interrupts", overview.pending_interrupts),
                ("  past their deadline", overview.overdue),
                ("dead letters", "?" if dead is None else dead),
            ],
        )
    if broker_problem:
        errors.print(broker_problem, style="red", markup=False, highlight=False)
    if overview.workers == 0:
        errors.print("no worker is alive", style="red", markup=False, highlight=False)
    if broker_problem or overview.workers == 0:
        raise typer.Exit(1)


def dead_letter_count(client: Any) -> int | None:
    redis = getattr(client.broker, "redis", None)
    if redis is None:
        return None
    try:
        return int(redis.llen(client.settings.dead_letters.key))
    except Exception:  # noqa: BLE001 - a count for display
        return None
