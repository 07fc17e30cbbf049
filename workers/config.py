"""``langgraph.json``, read as ``langgraph dev`` reads it, for workers and the server.

The keys that change what runs are honoured: ``graphs`` (``"id": "./path.py:attr"`` or
``"pkg.module:attr"``, a compiled graph, a builder, or a factory taking a config),
``env`` (a dotenv file or a map), ``dependencies`` (local paths put on ``sys.path``),
``store`` (``ttl``). The keys ``langgraph build`` uses to make an image (Python
version, Dockerfile lines, pip settings...) change nothing here and are accepted as
such. Whatever cannot be honoured (vector ``store.index``, ``checkpointer`` settings,
custom ``auth`` handlers, ``http`` apps, ``webhooks`` settings) is refused at start,
saying why; an unknown key is refused by name.
"""

from __future__ import annotations

import json
import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from workers.errors import ConfigurationError
from workers.registry import GraphRegistry
from workers.settings import Settings

BUILD_ONLY = frozenset(
    {
        "python_version",
        "node_version",
        "pip_config_file",
        "pip_installer",
        "base_image",
        "image_distro",
        "dockerfile_lines",
        "keep_pkg_tools",
        "api_version",
        "ui",
        "ui_config",
        "$schema",
    }
)
"""Keys that only shape the image ``langgraph build`` makes: accepted, they change nothing."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GraphEntry(_Strict):
    """A graph as an object: ``{"path": "./agent.py:graph", "description": "..."}``."""

    path: str
    description: str | None = None


class StoreTTL(_Strict):
    refresh_on_read: bool = True
    default_ttl: float | None = None
    sweep_interval_minutes: int | None = None


class StoreConfig(_Strict):
    ttl: StoreTTL | None = None
    index: dict[str, Any] | None = None

    @field_validator("index")
    @classmethod
    def _no_index(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            raise ValueError(
                "vector search (store.index) is not available: the Postgres store has no "
                "pgvector; remove store.index"
            )
        return value


class LangGraphConfig(_Strict):
    """The parts of langgraph.json graphruntime reads (see the module's docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    graphs: dict[str, str | GraphEntry] = Field(min_length=1)
    dependencies: list[str] = Field(default_factory=list)
    env: str | dict[str, str] | None = None
    store: StoreConfig | None = None
    checkpointer: dict[str, Any] | None = None
    auth: dict[str, Any] | None = None
    http: dict[str, Any] | None = None
    webhooks: dict[str, Any] | None = None

    @field_validator("checkpointer")
    @classmethod
    def _no_checkpointer(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value:
            raise ValueError(
                "checkpointer settings (ttl, serde) are not available: the workers keep every "
                "checkpoint in Postgres with their own serializer (prune with "
                "PostgresSaver.prune); remove the checkpointer section"
            )
        return value

    @field_validator("auth")
    @classmethod
    def _no_auth(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value:
            raise ValueError(
                "custom auth handlers (auth.path) cannot be honoured: graphrun serve checks "
                "GRAPHRUNTIME_API_TOKEN (x-api-key or bearer) and serves loopback without one; "
                "remove the auth section"
            )
        return value

    @field_validator("http", "webhooks")
    @classmethod
    def _no_http(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value:
            raise ValueError(
                "custom HTTP apps, CORS and webhook settings are not available in graphrun "
                "serve; remove the section"
            )
        return value


class LoadedConfig:
    """A parsed langgraph.json and the folder its relative paths start from."""

    def __init__(self, path: Path, config: LangGraphConfig) -> None:
        self.path = path
        self.root = path.parent
        self.config = config

    def graph_targets(self) -> dict[str, str]:
        """Graph id -> ``module:attr`` or ``/abs/file.py:attr``, as the registry loads them."""
        out: dict[str, str] = {}
        for name, entry in self.config.graphs.items():
            target = entry.path if isinstance(entry, GraphEntry) else entry
            where, sep, attr = target.rpartition(":")
            if not sep or not where or not attr:
                raise ConfigurationError(
                    f"{self.path}: graphs.{name} is {target!r}; write './file.py:attr' or "
                    "'package.module:attr'"
                )
            if where.endswith(".py") or "/" in where or where.startswith("."):
                file = (self.root / where).resolve()
                if not file.is_file():
                    raise ConfigurationError(f"{self.path}: graphs.{name}: no file {file}")
                out[name] = f"{file}:{attr}"
            else:
                out[name] = f"{where}:{attr}"
        return out

    def descriptions(self) -> dict[str, str | None]:
        return {
            name: entry.description if isinstance(entry, GraphEntry) else None
            for name, entry in self.config.graphs.items()
        }

    def apply(self) -> None:
        """Put the local dependencies on ``sys.path`` and the env into ``os.environ``
        (a variable already set keeps its value: the environment wins)."""
        for dependency in self.config.dependencies:
            if dependency.startswith((".", "/")):
                folder = str((self.root / dependency).resolve())
                if folder not in sys.path:
                    sys.path.insert(0, folder)
        for name, value in self.env().items():
            os.environ.setdefault(name, value)

    def env(self) -> dict[str, str]:
        env = self.config.env
        if env is None:
            return {}
        if isinstance(env, dict):
            return dict(env)
        file = (self.root / env).resolve()
        if not file.is_file():
            raise ConfigurationError(f"{self.path}: env names {file}, which does not exist")
        return _dotenv(file)


def _dotenv(file: Path) -> dict[str, str]:
    from dotenv import dotenv_values

    return {k: v for k, v in dotenv_values(file).items() if v is not None}


def load_config(path: str | os.PathLike[str]) -> LoadedConfig:
    """Read and check a langgraph.json; a bad one is a :class:`ConfigurationError` naming
    the file, the key and what to do."""
    file = Path(path).expanduser().resolve()
    try:
        data = json.loads(file.read_text())
    except OSError as exc:
        raise ConfigurationError(f"Cannot read the config {file}: {exc}") from None
    except ValueError as exc:
        raise ConfigurationError(f"{file} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigurationError(f"{file} must hold a JSON object with a 'graphs' key")
    known = {k: v for k, v in data.items() if k not in BUILD_ONLY}
    try:
        config = LangGraphConfig.model_validate(known)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            where = ".".join(str(p) for p in error["loc"])
            if error["type"] == "extra_forbidden":
                problems.append(
                    f"unknown key {where!r} (known: graphs, dependencies, env, store, and the "
                    "image build keys of langgraph build)"
                )
            else:
                problems.append(f"{where}: {error['msg'].removeprefix('Value error, ')}")
        raise ConfigurationError(f"{file}: " + "; ".join(problems)) from None
    return LoadedConfig(file, config)


@cache
def _loaded(path: str) -> LoadedConfig:
    loaded = load_config(path)
    loaded.apply()
    return loaded


def apply_config(path: str | os.PathLike[str]) -> LoadedConfig:
    """The config at ``path``, applied once per process (dependencies on sys.path, env)."""
    return _loaded(str(Path(path).expanduser().resolve()))


def config_graphs(path: str | None) -> dict[str, str]:
    """The graph targets of the config at ``path`` (GRAPHRUNTIME_CONFIG), applied once per
    process (dependencies on sys.path, env); none without a path."""
    if not path:
        return {}
    return apply_config(path).graph_targets()


def registry_for(settings: Settings) -> GraphRegistry:
    """The graphs of GRAPHRUNTIME_GRAPHS and of the config (GRAPHRUNTIME_CONFIG); a name
    in both must name the same target."""
    # the config's env first: it may set what parse reads (GRAPHRUNTIME_ALIAS_LANGGRAPH)
    targets = config_graphs(settings.config)
    registry = GraphRegistry.parse(settings.graphs)
    for name, target in targets.items():
        if registry.specs.get(name, target) != target:
            raise ConfigurationError(
                f"Graph {name!r} is {registry.specs[name]} in GRAPHRUNTIME_GRAPHS and {target} "
                f"in {settings.config}: keep one"
            )
        registry = GraphRegistry({**registry.specs, name: target})
    return registry
