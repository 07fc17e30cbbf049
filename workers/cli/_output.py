"""How every command prints: rich tables for people, JSON lines for scripts, errors
with an exit code (0 done, 1 refused or failed, 2 bad usage or configuration, 3 recorded
but not yet sent)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table

from workers.errors import InvalidRequestError, WorkerError

if TYPE_CHECKING:
    from workers.client import GraphClient

console = Console()
errors = Console(stderr=True)

JsonOption = typer.Option("--json", help="One JSON object per line instead of a table.")


def fail(message: str, code: int = 1, *, style: str = "red") -> NoReturn:
    errors.print(message, style=style, markup=False, highlight=False)
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


def table(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], *, title: str | None = None
) -> None:
    out = Table(*columns, title=title)
    for row in rows:
        out.add_row(*("" if v is None else str(v) for v in row))
    console.print(out)


@contextmanager
def connected() -> Iterator[GraphClient]:
    """A client for the configured cluster; a configuration error exits 2, saying what to set."""
    from workers.client import GraphClient

    try:
        client = GraphClient.from_env()
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
