"""``graphrun resume`` and ``graphrun runs``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from workers.cli._output import JsonOption, connected, console, fail, json_line, parse_json, table


def resume(
    graph: Annotated[str, typer.Option(help="Registered graph name.")],
    thread: Annotated[str, typer.Option(help="Thread id.")],
    value: Annotated[str, typer.Option(help="Resume value as JSON (a string must be quoted).")],
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

    resume_value: Any = parse_json("--value", value)
    with connected() as client:
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


def runs(
    thread: Annotated[str, typer.Option(help="Thread id.")],
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """List a thread's runs, newest first."""
    with connected() as client:
        rows = client.store.runs_of_thread(thread)
    if as_json:
        for row in rows:
            json_line(row)
        return
    table(
        ("run", "status", "kind", "created", "error"),
        [
            (
                row["run_id"],
                row["status"],
                row["kind"],
                row["created_at"],
                f"{(row['error'] or {}).get('type', '')} {(row['error'] or {}).get('message', '')}",
            )
            for row in rows
        ],
    )
