"""What every benchmark writes next to its figures: the machine, the command, the commit,
and its own section of ``bench/RESULTS.md`` (each script owns one, between markers)."""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def machine() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    ram = "unknown"
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            ram = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
            break
    affinity = getattr(os, "sched_getaffinity", None)
    nproc = len(affinity(0)) if affinity is not None else os.cpu_count()
    return {
        "nproc": str(nproc),
        "CPU": cpu,
        "RAM": ram,
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
        "OS": platform.platform(),
    }


def loadavg() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def git_revision(*packages: str) -> str:
    """The commit, and whether ``packages`` have uncommitted changes (what was measured)."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        rev = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--", *packages)
    except (OSError, subprocess.CalledProcessError):
        return "unknown revision"
    return f"git {rev}" + (f" + uncommitted changes in {'/'.join(packages)}" if dirty else "")


def command_line() -> str:
    argv = list(getattr(sys, "orig_argv", [sys.executable, *sys.argv]))
    exe = argv[0]
    if os.path.isabs(exe):
        with contextlib.suppress(ValueError):
            exe = os.path.relpath(exe, ROOT)
    return " ".join([exe, *argv[1:]])


def replace_section(text: str, new: str, heading: str, mark: str) -> str:
    """``text`` with one script's section replaced by ``new`` (appended if absent).

    The section sits between ``<!-- {mark}:start -->`` and ``<!-- {mark}:end -->``.
    Without them (a file edited by hand) it runs from ``heading`` to the next level-2
    heading or HTML comment outside a fenced code block. The rest is left as it is.
    """
    start_mark, end_mark = f"<!-- {mark}:start -->", f"<!-- {mark}:end -->"
    block = f"{start_mark}\n{new.rstrip()}\n{end_mark}\n"
    start_at, end_at = text.find(start_mark), text.find(end_mark)
    if 0 <= start_at < end_at:
        head, tail = text[:start_at], text[end_at + len(end_mark) :].lstrip("\n")
        return head + block + ("\n" + tail if tail else "")
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == heading), None)
    if start is None:
        if not text.strip():
            return "# Benchmarks\n\n" + block
        return text.rstrip("\n") + "\n\n" + block
    end = len(lines)
    fenced = False
    for i in range(start + 1, len(lines)):
        if lines[i].lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and lines[i].startswith(("## ", "<!--")):
            end = i
            break
    tail = "".join(lines[end:])
    return "".join(lines[:start]) + block + ("\n" + tail if tail else "")


def write_section(path: Path, new: str, heading: str, mark: str) -> None:
    """Re-read the file just before writing: other benchmarks own the other sections."""
    text = path.read_text() if path.exists() else ""
    tmp = path.with_suffix(f".md.{os.getpid()}.tmp")
    tmp.write_text(replace_section(text, new, heading, mark))
    os.replace(tmp, path)
