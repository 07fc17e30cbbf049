"""How every command prints: rich tables for people, JSON lines for scripts, errors
with an exit code (0 done, 1 refused or failed, 2 bad usage or configuration, 3 recorded
but not yet sent)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, is_dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from workers.errors import ConfigurationError, InvalidRequestError, WorkerError

if TYPE_CHECKING:
    from workers.client import GraphClient

console = Console()
errors = Console(stderr=True)

JsonOption = typer.Option("--json", help="One JSON object per line instead of a table.")
WideOption = typer.Option(
    "--wide", help="Whole ids and values, one line per row (wider than 80 columns)."
)


def fail(message: str, code: int = 1, *, style: str = "red") -> NoReturn:
    errors.print(message, style=style, markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def parse_json(option: str, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        fail(f"{option} must be JSON ({exc}); a string must be quoted, e.g. '\"yes\"'", 2)
    except RecursionError:
        fail(f"{option} nests too deeply to be read", 2)


def plain(value: Any) -> Any:
    """A JSON-safe copy: dataclasses as dicts, datetimes as ISO text."""
    if is_dataclass(value) and not isinstance(value, type):
        return plain(asdict(value))
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


def json_line(value: Any) -> None:
    sys.stdout.write(json.dumps(plain(value), sort_keys=True) + "\n")
    sys.stdout.flush()


@dataclass(frozen=True)
class Col:
    """A table column. ``width``: in the default (80-column) layout, values longer than this
    are cut with an ellipsis; an ``id`` is then named in a hint (``--wide`` and ``--json``
    show it whole). ``fill``: the column that takes the width the others leave (cut at the
    terminal's edge). ``wide_only``: a column only ``--wide`` shows."""

    header: str
    width: int | None = None
    id: bool = False
    fill: bool = False
    wide_only: bool = False


def table(
    columns: Sequence[Col | str],
    rows: Sequence[Sequence[Any]],
    *,
    title: str | None = None,
    wide: bool = False,
) -> None:
    """Rows as a table that fits the terminal (80 columns and up: one line per row, long
    values cut), or, ``wide``, with every value whole on one line however wide."""
    cols = [c if isinstance(c, Col) else Col(c) for c in columns]
    shown = [i for i, c in enumerate(cols) if wide or not c.wide_only]
    out = Table(
        title=title,
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
        show_header=any(c.header for c in cols),
    )
    cut_ids: set[str] = set()
    cells = []
    for row in rows:
        line = []
        for i in shown:
            text = "" if row[i] is None else str(row[i])
            width = cols[i].width
            if not wide and width is not None and len(text) > width:
                text = text[: width - 1] + "…"
                if cols[i].id:
                    cut_ids.add(cols[i].header)
            line.append(text)
        cells.append(line)
    widths = [
        max([len(cols[i].header), *(len(line[k]) for line in cells)]) for k, i in enumerate(shown)
    ]
    fill = next((k for k, i in enumerate(shown) if cols[i].fill), None)
    if not wide and fill is not None:
        # the filling column gets what the others leave (each column but the first is
        # 3 characters from the previous one); its values are cut to that
        others = sum(w for k, w in enumerate(widths) if k != fill) + 3 * (len(shown) - 1)
        room = max(len(cols[shown[fill]].header), console.width - others)
        widths[fill] = min(widths[fill], room)
        for line in cells:
            if len(line[fill]) > room:
                line[fill] = line[fill][: room - 1] + "…"
    for k, i in enumerate(shown):
        exact = None if wide else widths[k]
        out.add_column(
            cols[i].header, no_wrap=True, overflow="ellipsis", min_width=exact, max_width=exact
        )
    for line in cells:
        out.add_row(*line)
    if wide:  # as wide as the values: a console of its own, wider than any terminal
        Console(width=100_000, no_color=console.no_color).print(out)
    else:
        console.print(out)
    if cut_ids:
        errors.print(
            f"{', '.join(sorted(cut_ids))} cut to fit: --wide or --json shows them whole",
            style="dim",
            markup=False,
            highlight=False,
        )


def reach_services(
    *, postgres: bool = True, redis: bool = True, unreachable: int = 1
) -> tuple[str, str]:
    """The URLs of the services a command needs, once each has answered.

    A missing or malformed setting exits 2; a service that does not answer within
    ``GRAPHRUNTIME_CONNECT_TIMEOUT`` seconds (or refuses) exits ``unreachable``: 1 for a
    command that reports, 3 for one that starts a service (as ``graphrun worker``). Both
    name the setting and where it points, never a password, in one line.
    """
    from workers.services import check_urls, reach
    from workers.settings import load_settings

    try:
        settings = load_settings()
        db, broker = check_urls(settings, postgres=postgres, redis=redis)
    except WorkerError as exc:  # ConfigurationError: says what to set
        fail(f"{type(exc).__name__}: {exc}", 2)
    try:
        reach(settings, db, broker)
    except WorkerError as exc:  # StoreUnavailableError, BrokerUnavailableError
        fail(f"{type(exc).__name__}: {exc}", unreachable)
    return db, broker


class _NoBroker:
    """The broker of a command that reads Postgres only, run without ``REDIS_URL``: it
    sends nothing (a use of it is a bug, said as such)."""

    def _refuse(self, *_: Any, **__: Any) -> NoReturn:
        raise ConfigurationError("REDIS_URL is not set: this command cannot reach the broker")

    send_coordinate = send_coordinates = send_tasks = queue_depths = dead_letter = _refuse


@contextmanager
def connected(*, redis: bool = True, read_only: bool = False) -> Iterator[GraphClient]:
    """A client for the configured cluster, once Postgres (and Redis, unless ``redis`` is
    false: the command reads Postgres only, or records runs that a worker's sweeper sends
    if the broker is away) answered; see :func:`reach_services`. A ``read_only`` command
    (it reads Postgres only) needs no ``REDIS_URL``."""
    reach_services(postgres=True, redis=redis)
    from workers.client import GraphClient
    from workers.settings import load_settings

    try:
        settings = load_settings()
        if read_only and not settings.redis_url and not settings.embedded:
            client = GraphClient.from_env(settings, broker=_NoBroker())
        else:
            client = GraphClient.from_env(settings)
    except WorkerError as exc:
        fail(f"{type(exc).__name__}: {exc}", 2)
    try:
        yield client
    except typer.Exit:
        raise
    except InvalidRequestError as exc:  # bad usage: nothing was read or changed
        fail(f"{type(exc).__name__}: {exc}", 2)
    except (WorkerError, ValueError, LookupError) as exc:
        fail(f"{type(exc).__name__}: {exc}", 1)
    finally:
        client.close()
