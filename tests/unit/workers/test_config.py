"""langgraph.json as the workers and graphrun serve read it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from graphruntime.pregel import Pregel
from workers.config import load_config, registry_for
from workers.errors import ConfigurationError
from workers.settings import Settings

GRAPH_FILE = """
from typing import TypedDict
from graphruntime.graph import START, END, StateGraph

class S(TypedDict):
    n: int

def build():
    b = StateGraph(S)
    b.add_node("inc", lambda s: {"n": s["n"] + 1})
    b.add_edge(START, "inc")
    b.add_edge("inc", END)
    return b

graph = build().compile()
builder = build()

def factory(config):
    assert config == {"configurable": {}}
    return build().compile()

def no_args():
    return build().compile()

async def not_supported(config):
    return build().compile()
"""


def write(tmp_path: Path, data: dict[str, Any], name: str = "langgraph.json") -> Path:
    (tmp_path / "agent.py").write_text(GRAPH_FILE)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_graphs_as_files_modules_and_objects(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "graphs": {
                "a": "./agent.py:graph",
                "b": {"path": "./agent.py:builder", "description": "the builder"},
                "c": "tests.api_diff.app.graphs:chain",
            },
            "python_version": "3.11",
            "dockerfile_lines": [],
        },
    )
    loaded = load_config(path)
    assert loaded.graph_targets() == {
        "a": f"{tmp_path / 'agent.py'}:graph",
        "b": f"{tmp_path / 'agent.py'}:builder",
        "c": "tests.api_diff.app.graphs:chain",
    }
    assert loaded.descriptions() == {"a": None, "b": "the builder", "c": None}


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"graphs": {"a": "./agent.py:graph"}, "grafs": {}}, "unknown key 'grafs'"),
        ({"graphs": {}}, "graphs"),
        ({"graphs": {"a": "./agent.py:graph"}, "checkpointer": {"ttl": {}}}, "checkpointer"),
        ({"graphs": {"a": "./agent.py:graph"}, "auth": {"path": "./a.py:auth"}}, "auth"),
        ({"graphs": {"a": "./agent.py:graph"}, "http": {"app": "./a.py:app"}}, "HTTP"),
        ({"graphs": {"a": "./agent.py:graph"}, "store": {"index": {"dims": 3}}}, "vector"),
    ],
)
def test_what_cannot_be_honoured_is_refused_by_name(
    tmp_path: Path, data: dict[str, Any], says: str
) -> None:
    with pytest.raises(ConfigurationError, match=says):
        load_config(write(tmp_path, data))


def test_bad_targets_and_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="no file"):
        load_config(write(tmp_path, {"graphs": {"a": "./missing.py:graph"}})).graph_targets()
    with pytest.raises(ConfigurationError, match=r"write '\./file\.py:attr'"):
        load_config(write(tmp_path, {"graphs": {"a": "agent"}})).graph_targets()
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ConfigurationError, match="not JSON"):
        load_config(tmp_path / "broken.json")


def test_env_and_dependencies_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".env").write_text("GR_TEST_FROM_FILE=1\nGR_TEST_KEPT=file\n")
    (tmp_path / "src").mkdir()
    monkeypatch.setenv("GR_TEST_KEPT", "environment")
    monkeypatch.setattr(sys, "path", list(sys.path))
    path = write(
        tmp_path,
        {"graphs": {"a": "./agent.py:graph"}, "env": ".env", "dependencies": ["./src", "requests"]},
    )
    load_config(path).apply()
    assert os.environ["GR_TEST_FROM_FILE"] == "1"
    assert os.environ["GR_TEST_KEPT"] == "environment"  # the environment wins
    assert str(tmp_path / "src") in sys.path
    monkeypatch.delenv("GR_TEST_FROM_FILE")


def test_registry_loads_files_builders_and_factories(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "graphs": {
                "compiled": "./agent.py:graph",
                "builder": "./agent.py:builder",
                "factory": "./agent.py:factory",
                "plain": "./agent.py:no_args",
            }
        },
        name="registry.json",
    )
    registry = registry_for(Settings(config=str(path)))
    for name in ("compiled", "builder", "factory", "plain"):
        graph = registry.get(name)
        assert isinstance(graph, Pregel)
        assert graph.invoke({"n": 1}) == {"n": 2}


def test_an_async_factory_is_refused_and_names_clash(tmp_path: Path) -> None:
    path = write(tmp_path, {"graphs": {"bad": "./agent.py:not_supported"}}, name="bad.json")
    with pytest.raises(ConfigurationError, match="async factories"):
        registry_for(Settings(config=str(path))).get("bad")
    path = write(tmp_path, {"graphs": {"x": "./agent.py:graph"}}, name="clash.json")
    with pytest.raises(ConfigurationError, match="keep one"):
        registry_for(Settings(config=str(path), graphs="x=tests.api_diff.app.graphs:chain"))


def test_the_configs_env_counts_for_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workers.settings import load_settings

    monkeypatch.setenv("GRAPHRUNTIME_COORDINATE_BATCH", "")  # unset again after the test
    monkeypatch.delenv("GRAPHRUNTIME_COORDINATE_BATCH")
    monkeypatch.setenv("GRAPHRUNTIME_HEARTBEAT_INTERVAL", "3")
    path = write(
        tmp_path,
        {
            "graphs": {"a": "./agent.py:graph"},
            "env": {"GRAPHRUNTIME_COORDINATE_BATCH": "7", "GRAPHRUNTIME_HEARTBEAT_INTERVAL": "9"},
        },
    )
    monkeypatch.setenv("GRAPHRUNTIME_CONFIG", str(path))
    settings = load_settings()
    assert settings.coordinate_batch == 7  # from the config's env
    assert settings.heartbeat_interval == 3  # the environment wins
