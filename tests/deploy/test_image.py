"""deploy/Dockerfile, .dockerignore and docker-compose.yml agree with the project.

The image itself is exercised by deploy/smoke.sh (needs Docker, not run here).
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from workers.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
SCRIPTS = ["deploy/smoke.sh", "deploy/lock.sh", "deploy/images/build.sh"]


def project_packages() -> set[str]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        include = tomllib.load(f)["tool"]["setuptools"]["packages"]["find"]["include"]
    return {name for name in include if "*" not in name and "." not in name}


def copied_sources() -> list[str]:
    """Build-context paths the Dockerfile COPYs (not `COPY --from=`)."""
    sources: list[str] = []
    for line in DOCKERFILE.read_text("utf-8").splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not any(w.startswith("--from") for w in words):
            sources.extend(w for w in words[1:-1] if not w.startswith("--"))
    return sources


def dockerignore_allows(path: str) -> bool:
    """Whether .dockerignore (an allow-list: `*` then `!path` lines) keeps ``path``."""
    allowed = False
    for raw in (ROOT / ".dockerignore").read_text("utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line.lstrip("!").rstrip("/")
        if fnmatch.fnmatch(path, pattern) or path.startswith(pattern + "/"):
            allowed = negate
    return allowed


def test_image_copies_every_package_and_the_context_has_them() -> None:
    sources = copied_sources()
    packages = project_packages()
    assert packages == {"graphruntime", "checkpoint_pg", "workers"}
    assert packages <= set(sources), "a package in pyproject.toml is not copied into the image"
    for source in sources:
        assert dockerignore_allows(source.rstrip("/")), f".dockerignore drops {source}"
    assert not dockerignore_allows(".venv")
    assert not dockerignore_allows(".data")


def test_image_installs_the_locks_with_hashes_and_runs_unprivileged() -> None:
    text = DOCKERFILE.read_text("utf-8")
    assert "--require-hashes" in text
    assert "-r deploy/requirements.lock" in text
    users = re.findall(r"^USER\s+(\S+)", text, flags=re.MULTILINE)
    assert users
    for user in users:
        uid = user.split(":")[0]
        assert uid.isdigit(), f"USER {user}: numeric, so that runAsNonRoot can check it"
        assert uid != "0"
    assert re.search(r"^HEALTHCHECK .*\n?.*inspect ping", text, flags=re.MULTILINE)


def load_compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text("utf-8"))
    return data


def default_of(value: str) -> str:
    """``"${VAR:-default}"`` -> ``"default"`` (Compose interpolation); other text unchanged."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", value)


def test_compose_workers_consume_the_settings_queues() -> None:
    services = load_compose()["services"]
    fields = Settings.model_fields
    expected = {
        "worker-coordinator": fields["coordinator_queue"].default,
        "worker-tasks": fields["task_queue"].default,
    }
    for name, queue in expected.items():
        command = [default_of(str(word)) for word in services[name]["command"]]
        assert command[:2] == ["graphrun", "worker"]
        assert command[command.index("--queues") + 1] == queue


def test_compose_shape() -> None:
    services = load_compose()["services"]
    ours = {n: s for n, s in services.items() if n not in {"postgres", "redis"}}
    images = {default_of(s["image"]) for s in ours.values()}
    assert len(images) == 1, f"one image for every graphruntime service, got {images}"
    assert [n for n, s in ours.items() if "build" in s] == ["migrate"], "built once"
    assert services["migrate"]["command"] == ["graphrun", "db", "migrate"]
    for name in ("worker-coordinator", "worker-tasks"):
        service = services[name]
        assert service["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert "inspect ping" in " ".join(service["healthcheck"]["test"])
        assert service["restart"] == "unless-stopped"
    for name, service in services.items():
        assert "mem_limit" in service, f"{name} has no memory limit"
        assert "cpus" in service, f"{name} has no CPU limit"
        assert "healthcheck" in service, f"{name} has no healthcheck (or an explicit disable)"
    redis = [default_of(str(w)) for w in services["redis"]["command"]]
    assert redis[redis.index("--appendonly") + 1] == "yes"
    assert redis[redis.index("--maxmemory-policy") + 1] == "noeviction"


def compose_command() -> list[str] | None:
    docker = shutil.which("docker")
    if (
        docker
        and subprocess.run(
            [docker, "compose", "version"], capture_output=True, check=False, timeout=30
        ).returncode
        == 0
    ):
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def test_compose_file_is_valid_for_compose() -> None:
    command = compose_command()
    if command is None:
        pytest.skip("no Docker Compose on this machine; test_compose_shape checked the file")
    done = subprocess.run(
        [*command, "-f", str(ROOT / "docker-compose.yml"), "--profile", "tools", "config", "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("script", SCRIPTS)
def test_deploy_scripts_parse(script: str) -> None:
    done = subprocess.run(
        ["bash", "-n", str(ROOT / script)], capture_output=True, text=True, check=False, timeout=30
    )
    assert done.returncode == 0, done.stderr
