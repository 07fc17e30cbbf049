"""``graphrun inbox`` (list, resume, history) and ``graphrun cancel``."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import typer
from rich.progress import Progress

from workers.cli._output import (
    Col,
    JsonOption,
    WideOption,
    connected,
    console,
    fail,
    json_line,
    parse_json,
    table,
)
from workers.decisions import DecisionError
from workers.errors import NotDispatchedError

inbox_app = typer.Typer(
    help="Pending interrupts: list, resume in bulk, audit.", no_args_is_help=True
)

_AGE = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}

GraphOption = Annotated[str | None, typer.Option("--graph", help="Registered graph name.")]


def parse_age(text: str) -> timedelta:
    match = _AGE.match(text.strip())
    if not match:
        fail(f"--older-than takes an age like 30s, 15m, 2h or 7d, got {text!r}", 2)
    try:
        return timedelta(seconds=float(match[1]) * _UNIT[match[2]])
    except OverflowError:
        fail(f"--older-than {text!r} is too long an age; give at most 36500d", 2)


def _where(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    where = parse_json("--where", text)
    if not isinstance(where, dict):
        fail('--where is a JSON object the value must contain, e.g. \'{"team": "ops"}\'', 2)
    return where


def _args(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    args = parse_json("--args", text)
    if not isinstance(args, dict):
        fail('--args is a JSON object the action\'s args must contain, e.g. \'{"to": "ops"}\'', 2)
    return args


def decision_of(decisions: list[str], message: str | None, edit_args: str | None) -> Any:
    """The --decision options as resume_many's ``decision``: one per action (in order), each
    a type (approve, edit, reject, respond) or LangChain's JSON decision; --message and
    --edit-args complete a single one."""
    from workers.decisions import Decision, DecisionError

    parsed: list[Any] = []
    for text in decisions:
        parsed.append(parse_json("--decision", text) if text.lstrip().startswith("{") else text)
    if (message is not None or edit_args is not None) and len(parsed) != 1:
        fail("--message and --edit-args complete one --decision; give several as JSON", 2)
    try:
        if message is not None or edit_args is not None:
            args = parse_json("--edit-args", edit_args) if edit_args is not None else None
            kind = parsed[0]
            if not isinstance(kind, str):
                fail("--message and --edit-args complete a --decision given as its type", 2)
            return Decision(kind, args=args, message=message)  # type: ignore[arg-type]
        return [Decision.of(d) for d in parsed] if len(parsed) > 1 else Decision.of(parsed[0])
    except DecisionError as exc:
        fail(f"DecisionError: {exc}", 2)


ARGS_HELP = "Only approval requests whose action's args contain this JSON."
DecisionOption = Annotated[
    list[str] | None,
    typer.Option(
        "--decision",
        help="Answer each wait in its own format (LangChain HITL, Agent Inbox, choices): "
        "approve, edit, reject or respond, or LangChain's JSON decision; repeat it for a "
        "batched request's actions, in order. Instead of --value.",
    ),
]
MessageOption = Annotated[
    str | None, typer.Option(help="A reject's reason or a respond's answer (one --decision).")
]
EditArgsOption = Annotated[
    str | None, typer.Option("--edit-args", help="An edit's new args as JSON (one --decision).")
]


def _short(value: Any, width: int = 60) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= width else text[: width - 1] + "…"


def age_of(at: datetime | None) -> str:
    """How long ago, in the largest whole unit: 45s, 12m, 3h, 2d ("" when not known)."""
    if at is None:
        return ""
    seconds = int((datetime.now(UTC) - at).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


@inbox_app.command("list", short_help="Pending interrupts, oldest first.")
def list_waits(
    graph: GraphOption = None,
    where: Annotated[
        str | None, typer.Option(help='Keep values containing this JSON, e.g. \'{"team": "ops"}\'.')
    ] = None,
    node: Annotated[str | None, typer.Option(help="Only waits of this node.")] = None,
    older_than: Annotated[
        str | None, typer.Option("--older-than", help="Only waits older than 30s/15m/2h/7d.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Rows per page.")] = 50,
    cursor: Annotated[str | None, typer.Option(help="The next-page cursor printed before.")] = None,
    thread: Annotated[str | None, typer.Option(help="Only this thread's waits.")] = None,
    action: Annotated[
        str | None, typer.Option(help="Only approval requests of this action (tool) name.")
    ] = None,
    args: Annotated[str | None, typer.Option(help=ARGS_HELP)] = None,
    wide: Annotated[bool, WideOption] = False,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Pending interrupts, oldest first: thread, interrupt id, node, age, deadline, value."""
    age = parse_age(older_than) if older_than else None
    with connected(redis=False, read_only=True) as client:
        page = client.inbox(
            graph,
            where=_where(where),
            node=node,
            older_than=age,
            limit=limit,
            cursor=cursor,
            thread=thread,
            action=action,
            args=_args(args),
        )
    if as_json:
        for wait in page.items:
            json_line(wait)
        if page.cursor:
            json_line({"next_cursor": page.cursor})
        return
    table(
        (
            Col("graph", 10, wide_only=graph is not None),  # the filter names it
            Col("thread", 16, id=True),
            Col("interrupt", 8, id=True),
            Col("node", 10),
            Col("age"),
            Col("due"),
            Col("deadline", wide_only=True),
            Col("value", fill=True),
        ),
        [
            (
                w.graph,
                w.thread_id,
                w.interrupt_id,
                w.node,
                age_of(w.created_at) + (" (resuming)" if w.resuming else ""),
                _due(w.deadline),
                w.deadline.isoformat(timespec="seconds") if w.deadline else "",
                _short(w.value, 10_000 if wide else 60),
            )
            for w in page.items
        ],
        wide=wide,
    )
    if page.cursor:
        # soft_wrap: one line however long, so that it pastes back whole
        console.print(
            f"next page: --cursor {page.cursor}", markup=False, highlight=False, soft_wrap=True
        )


def _due(deadline: datetime | None) -> str:
    """When a wait's deadline falls, from now: "in 3h", or "5m ago" once past."""
    if deadline is None:
        return ""
    now = datetime.now(UTC)
    if deadline <= now:
        return f"{age_of(deadline)} ago"
    return f"in {age_of(now - (deadline - now))}"  # the span from now, as an age


def _item(text: str) -> tuple[str, str]:
    thread, sep, interrupt = text.rpartition(":")
    if not sep or not thread or not interrupt:
        fail(f"--item is THREAD_ID:INTERRUPT_ID, got {text!r}", 2)
    return thread, interrupt


@inbox_app.command("resume", short_help="Resume many pending interrupts at once.")
def resume_waits(
    graph: Annotated[str, typer.Option(help="Registered graph name.")],
    key: Annotated[
        str, typer.Option(help="Idempotency key: running the same command again changes nothing.")
    ],
    value: Annotated[
        str | None, typer.Option(help="The resume value as JSON (quote a string).")
    ] = None,
    decision: DecisionOption = None,
    message: MessageOption = None,
    edit_args: EditArgsOption = None,
    where: Annotated[
        str | None,
        typer.Option(help="Resume the waits whose value contains this JSON; {} for all."),
    ] = None,
    item: Annotated[
        list[str] | None, typer.Option(help="THREAD_ID:INTERRUPT_ID to resume (repeatable).")
    ] = None,
    node: Annotated[str | None, typer.Option(help="Only waits of this node.")] = None,
    action: Annotated[
        str | None, typer.Option(help="Only approval requests of this action (tool) name.")
    ] = None,
    args: Annotated[str | None, typer.Option(help=ARGS_HELP)] = None,
    actor: Annotated[str | None, typer.Option(help="Who resumes (kept with each run).")] = None,
    note: Annotated[str | None, typer.Option(help="Why (kept with each run).")] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Resume many pending interrupts with one value, or one decision; one outcome per thread.

    A --decision answers each wait in its own format and is refused, resuming nothing,
    if any selected wait does not allow it (exit 2, naming what they allow). Outcomes:
    applied, already applied (this key did it before), conflict (another
    resume got there first), not pending. Exit 0 when every thread is applied or was
    already; 1 when some were not; 3 when the runs are recorded but the broker was
    unreachable (a worker's sweeper sends them).
    """
    if (where is None) == (not item):
        fail("give --where (a JSON filter; '{}' for all) or --item, not both", 2)
    if (value is None) == (not decision):
        fail("give --value (the resume value) or --decision, not both", 2)
    answer: dict[str, Any] = (
        {"value": parse_json("--value", value)}
        if value is not None
        else {"decision": decision_of(decision or [], message, edit_args)}
    )
    items = [_item(i) for i in item] if item else None
    options: dict[str, Any] = {
        **answer,
        "idempotency_key": key,
        "where": _where(where),
        "node": node,
        "items": items,
        "action": action,
        "args": _args(args),
        "actor": actor,
        "note": note,
        "route": "inbox",
    }
    with connected(redis=False) as client:  # no broker: recorded, exit 3
        try:
            if as_json:
                outcomes = client.resume_many(graph, **options)
            else:
                with Progress(console=console, transient=True) as bar:
                    task = bar.add_task("resuming", total=None)

                    def progress(done: int, total: int) -> None:
                        bar.update(task, completed=done, total=total)

                    outcomes = client.resume_many(graph, **options, progress=progress)
        except NotDispatchedError as exc:
            fail(f"{type(exc).__name__}: {exc}", 3, style="yellow")
        except DecisionError as exc:
            fail(f"{type(exc).__name__}: {exc}", 2)
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.outcome] = counts.get(outcome.outcome, 0) + 1
        if as_json:
            json_line(outcome)
    others = [o for o in outcomes if o.outcome != "applied"]
    if not as_json:
        if others:
            table(
                (
                    Col("thread", 24, id=True),
                    Col("outcome"),
                    Col("run", 8, id=True),
                    Col("detail", fill=True),
                ),
                [(o.thread_id, o.outcome, o.run_id, o.detail) for o in others],
                title="threads not newly applied",
            )
        summary = (
            ", ".join(f"{n} {what}" for what, n in sorted(counts.items())) or "nothing pending"
        )
        console.print(f"{len(outcomes)} threads: {summary}", markup=False)
    if set(counts) - {"applied", "already applied"}:
        raise typer.Exit(1)


@inbox_app.command("history", short_help="Who resumed a thread, when, and how.")
def history(
    graph: Annotated[str, typer.Option(help="Registered graph name.")],
    thread: Annotated[str, typer.Option(help="Thread id.")],
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 50,
    wide: Annotated[bool, WideOption] = False,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Who resumed the thread, when, with what value and by which route; newest first."""
    with connected(redis=False, read_only=True) as client:
        records = client.resume_history(graph, {"configurable": {"thread_id": thread}}, limit=limit)
    if as_json:
        for record in records:
            json_line(record)
        return
    table(
        (
            Col("when", 16),
            Col("route", 8),
            Col("actor", 10),
            Col("value", fill=True),
            Col("status", 12),
            Col("note", 12),
            Col("run", id=True, wide_only=True),
        ),
        [
            (
                r.created_at.isoformat(sep=" ", timespec="seconds" if wide else "minutes"),
                r.route,
                r.actor,
                _short(r.value, 10_000 if wide else 40),
                r.status + (f": {r.error.get('message')}" if r.error else ""),
                r.note,
                r.run_id,
            )
            for r in records
        ],
        wide=wide,
    )


def cancel(
    graph: Annotated[str, typer.Option(help="Registered graph name.")],
    thread: Annotated[str, typer.Option(help="Thread id.")],
    reason: Annotated[str, typer.Option(help="Why (kept in the thread's state).")],
    actor: Annotated[str | None, typer.Option(help="Who cancels.")] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Cancel a thread: its queued and running runs end as cancelled, its open tasks can
    no longer write, its waits leave the inbox, and its state says who and why.

    A thread id no run was ever made on (mistyped?) is refused: exit 1, nothing changed.
    """
    with connected(redis=False) as client:
        runs = client.cancel(
            graph,
            {"configurable": {"thread_id": thread}},
            reason=reason,
            actor=actor,
            route="cli",
        )
    if as_json:
        json_line({"thread_id": thread, "cancelled_runs": runs})
    else:
        console.print(
            f"thread {thread} cancelled ({len(runs)} run(s) ended: {', '.join(runs) or 'none'})",
            markup=False,
        )
