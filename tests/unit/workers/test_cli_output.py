"""The `graphrun` framework: which modules a command loads before it does anything, and
tables that fit 80 columns with whole ids on demand."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from workers.cli import _output

ROOT = Path(__file__).resolve().parents[3]

# What `graphrun --help` (or a command's --help) has no use for: the broker, the drivers,
# the runtime's execution loop, the client, the settings. (typer itself loads pydantic for a
# command's options.)
HEAVY = (
    "celery",
    "kombu",
    "redis",
    "psycopg",
    "psycopg_pool",
    "prometheus_client",
    "pydantic_settings",
    "tenacity",
    "graphruntime.pregel",
    "graphruntime.graph",
    "checkpoint_pg",
    "workers.client",
    "workers.app",
    "workers.store",
    "workers.settings",
)

HELPS = (
    ("--help",),
    ("status", "--help"),
    ("runs", "--help"),
    ("worker", "--help"),
    ("inbox", "list", "--help"),
    ("db", "migrate", "--help"),
)

# One process shows every help in turn, saying after each which modules are loaded; then it
# imports the client, to show the check sees what it looks for.
SHOW_MODULES = """
import json, sys
from workers.cli import app
for args in json.loads(sys.argv[1]):
    try:
        app(args)
    except SystemExit:
        pass
    print(json.dumps(sorted(sys.modules)), file=sys.stderr)
import workers.client
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def loaded() -> list[set[str]]:
    """The modules loaded after each help of HELPS, then after importing the client."""
    done = subprocess.run(
        [sys.executable, "-c", SHOW_MODULES, json.dumps(HELPS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.count("Usage") == len(HELPS), done.stdout
    return [set(json.loads(line)) for line in done.stderr.strip().splitlines()[-len(HELPS) - 1 :]]


def heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)}


@pytest.mark.parametrize("step", range(len(HELPS)), ids=[" ".join(a) for a in HELPS])
def test_help_loads_no_heavy_module(loaded: list[set[str]], step: int) -> None:
    assert heavy(loaded[step]) == set()


def test_the_check_sees_a_heavy_module(loaded: list[set[str]]) -> None:
    """The test above can fail: importing the client brings in what it looks for."""
    assert {"psycopg", "graphruntime.pregel", "workers.store"} <= heavy(loaded[-1])


@pytest.fixture
def at_80_columns() -> Iterator[None]:
    before = _output.console.width
    _output.console.width = 80
    try:
        yield
    finally:
        _output.console.width = before


RUN_ID = "c3887b03-93f5-42f2-8536-a13072d3cacf"
THREAD = "customer-order-2026-11-27-0042-retry"
COLUMNS = (
    _output.Col("run", 8, id=True),
    _output.Col("graph", 12),
    _output.Col("thread", 16, id=True),
    _output.Col("status", 11),
    _output.Col("created", wide_only=True),
    _output.Col("error", fill=True),
)
ROW = (
    RUN_ID,
    "approvals",
    THREAD,
    "error",
    "2026-11-27T06:24:48+00:00",
    "ValueError: " + "the node failed on purpose " * 6,
)


@pytest.mark.usefixtures("at_80_columns")
def test_a_table_fits_80_columns_and_says_which_ids_it_cut(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _output.table(COLUMNS, [ROW, ROW])
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines
    assert max(len(line) for line in lines) <= 80
    assert len(lines) == 4  # header, rule, one line per row
    assert RUN_ID[:7] + "…" in out
    assert RUN_ID not in out
    assert "created" not in out
    assert "run, thread cut to fit: --wide or --json shows them whole" in err


@pytest.mark.usefixtures("at_80_columns")
def test_a_wide_table_shows_every_id_and_value_whole_on_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _output.table(COLUMNS, [ROW], wide=True)
    out, err = capsys.readouterr()
    header, _rule, row = out.splitlines()
    assert RUN_ID in row
    assert THREAD in row
    assert ROW[-1].strip() in row
    assert "created" in header
    assert err == ""


@pytest.mark.usefixtures("at_80_columns")
def test_a_table_of_short_values_cuts_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    _output.table(COLUMNS, [("r1", "g", "t1", "success", "", "")])
    out, err = capsys.readouterr()
    assert "r1" in out
    assert "t1" in out
    assert err == ""


@pytest.mark.parametrize("group", [(), ("inbox",), ("dead",), ("db",)])
def test_each_command_is_summed_up_in_one_line_at_80_columns(group: tuple[str, ...]) -> None:
    """`graphrun --help` lists each command with a one-line summary: no description
    broken mid-sentence over several lines."""
    from typer.testing import CliRunner

    from workers.cli import app

    result = CliRunner().invoke(app, [*group, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    panel = result.output.split("Commands ", 1)[1].splitlines()[1:]
    rows = [line for line in panel if line.startswith("│")]
    assert rows, result.output
    continued = [row for row in rows if row.startswith("│  ")]
    assert not continued, result.output
    assert all(len(row) <= 80 for row in rows)
