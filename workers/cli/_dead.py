"""``graphrun dead``: the resume queue's refused messages (list, replay, purge)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

import typer

from workers.cli._output import Col, JsonOption, connected, console, fail, json_line, table

dead_app = typer.Typer(
    help="Refused resume-queue messages: list them, replay them, purge them.",
    no_args_is_help=True,
)

ShaOption = Annotated[
    str | None, typer.Option("--sha256", help="The dead letter(s) whose sha256 starts so.")
]
AllOption = Annotated[bool, typer.Option("--all", help="Every dead letter.")]


def _redis(client: Any) -> Any:
    redis = getattr(client.broker, "redis", None)
    if redis is None:
        fail("this client's broker is not Redis: no dead letters to show", 2)
    return redis


@dead_app.command("list")
def list_dead(
    limit: Annotated[int, typer.Option(min=1, max=100_000)] = 50,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """The newest dead letters: when, why, and the message."""
    with connected() as client:
        letters = client.settings.dead_letters
        redis = _redis(client)
        entries = letters.entries(redis, limit)
        total, dropped = int(redis.llen(letters.key)), letters.dropped(redis)
    if as_json:
        for entry in entries:
            entry.pop("raw", None)
            json_line(entry)
        return
    table(
        (Col("at", 16), Col("sha256"), Col("error", 24), Col("message", fill=True)),
        [
            (
                dt.datetime.fromtimestamp(float(e.get("at", 0)), dt.UTC).isoformat(
                    timespec="seconds"
                ),
                str(e.get("sha256", ""))[:12],
                e.get("error"),
                str(e.get("message", ""))[:80] + (" [truncated]" if e.get("truncated") else ""),
            )
            for e in entries
        ],
        title=f"{total} dead letters on {letters.key}"
        + (f"; {dropped} dropped by the cap" if dropped else ""),
    )


@dead_app.command("replay", short_help="Put dead letters back on the resume queue.")
def replay(
    sha256: ShaOption = None,
    everything: AllOption = False,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Put dead letters back on the resume queue (after fixing what refused them)."""
    with connected() as client:
        try:
            done, skipped = client.settings.dead_letters.replay(
                _redis(client), client.settings.resume_queue, sha256=sha256, everything=everything
            )
        except ValueError as exc:
            fail(str(exc), 2)
    if as_json:
        json_line({"replayed": done, "skipped": skipped})
    else:
        console.print(f"replayed {done} onto {client.settings.resume_queue}", markup=False)
        for line in skipped:
            console.print(f"skipped {line}", style="yellow", markup=False)
    if skipped:
        raise typer.Exit(1)


@dead_app.command("purge")
def purge(
    sha256: ShaOption = None,
    everything: AllOption = False,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Delete dead letters for good."""
    with connected() as client:
        try:
            removed = client.settings.dead_letters.purge(
                _redis(client), sha256=sha256, everything=everything
            )
        except ValueError as exc:
            fail(str(exc), 2)
    if as_json:
        json_line({"purged": removed})
    else:
        console.print(f"purged {removed}", markup=False)
