"""The harness's own rules: the import swap, the private-API reading, the private-name loan."""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from tests.upstream.harness.exclusions import base_id, reach
from tests.upstream.harness.targets import lend
from tests.upstream.port import is_private, transform, transform_snapshot


def test_transform_swaps_public_prefixes_only() -> None:
    source = (
        "from langgraph.graph import StateGraph\n"
        "    from langgraph.checkpoint.memory import InMemorySaver  # indented\n"
        "from langgraph._internal._constants import PULL\n"
        "from langgraph.pregel._loop import PregelLoop\n"
        "import langgraph.types\n"
        "from tests.any_str import AnyStr\n"
        "x = 'from langgraph.graph import StateGraph'\n"
        "from langgraph_sdk.client import Client\n"
    )
    assert transform(source) == (
        "from graphruntime.graph import StateGraph\n"
        "    from graphruntime.checkpoint.memory import InMemorySaver  # indented\n"
        "from langgraph._internal._constants import PULL\n"
        "from langgraph.pregel._loop import PregelLoop\n"
        "import graphruntime.types\n"
        "from tests.upstream.any_str import AnyStr\n"
        "x = 'from langgraph.graph import StateGraph'\n"
        "from langgraph_sdk.client import Client\n"
    )


def test_is_private() -> None:
    assert is_private("langgraph._internal._constants")
    assert is_private("langgraph.stream._mux")
    assert not is_private("langgraph.channels.delta")


def test_snapshot_module_path_follows_the_test_package() -> None:
    before = '    "id": [\n      "tests",\n      "test_large_cases",\n      "Fake"\n'
    after = '    "id": [\n      "upstream",\n      "test_large_cases",\n      "Fake"\n'
    assert transform_snapshot(before) == after
    assert (
        transform_snapshot('      "tests",\n      "other"\n') == '      "tests",\n      "other"\n'
    )


def test_reach_follows_helpers_fixtures_and_strings(tmp_path: Path) -> None:
    path = tmp_path / "test_reach_sample.py"
    path.write_text(
        "import pytest\n"
        "from langgraph._internal._constants import CONFIG_KEY_X\n"
        "def helper():\n"
        "    return CONFIG_KEY_X\n"
        "def indirect():\n"
        "    return helper()\n"
        "@pytest.fixture\n"
        "def fixture_using_it():\n"
        "    return indirect()\n"
        "def test_direct():\n"
        "    assert CONFIG_KEY_X\n"
        "def test_via_helper():\n"
        "    indirect()\n"
        "def test_via_fixture(fixture_using_it):\n"
        "    pass\n"
        "def test_via_string(mocker):\n"
        "    mocker.patch('langgraph.pregel._loop.X')\n"
        "def test_shadowed():\n"
        "    helper = lambda: 1\n"
        "    helper()\n"
        "def test_clean():\n"
        "    pass\n"
        "class TestGroup:\n"
        "    def _make(self):\n"
        "        return helper()\n"
        "    def test_in_class(self):\n"
        "        self._make()\n"
    )
    found = reach(path, {"CONFIG_KEY_X": "private thing"})
    rel = path.name
    assert found == {
        f"{rel}::test_direct": "private thing",
        f"{rel}::test_via_helper": "private thing",
        f"{rel}::test_via_fixture": "private thing",
        f"{rel}::test_via_string": "langgraph.pregel._loop.X",
        f"{rel}::TestGroup::test_in_class": "private thing",
    }


def test_base_id_drops_parameters() -> None:
    assert base_id("a.py::test_x[memory-sync]") == "a.py::test_x"
    assert base_id("a.py::C::test_y") == "a.py::C::test_y"


def test_lend_resolves_only_the_lent_names(monkeypatch: pytest.MonkeyPatch) -> None:
    ours = types.ModuleType("graphruntime_sample_module")
    theirs = types.ModuleType("langgraph_sample_module")
    theirs._helper = "theirs"  # type: ignore[attr-defined]
    theirs.Public = "theirs too"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "langgraph_sample_module", theirs)
    lend(ours, "langgraph_sample_module", {"_helper"})
    assert ours._helper == "theirs"
    with pytest.raises(AttributeError):
        _ = ours.Public
    assert importlib.import_module("langgraph_sample_module") is theirs


# --- the slower clock of time-sensitive tests (harness/timescale.py) -----------------------


def test_step_timeout_tests_are_the_time_sensitive_ones() -> None:
    from tests.upstream.harness.timescale import is_time_sensitive

    # by name: mypy is not to read LangGraph's test files (pyproject's exclude)
    test_pregel = importlib.import_module("tests.upstream.test_pregel")
    test_pregel_async = importlib.import_module("tests.upstream.test_pregel_async")

    assert is_time_sensitive(test_pregel.test_timeout_with_parent_command)
    assert is_time_sensitive(test_pregel_async.test_step_timeout_on_stream_hang)
    assert not is_time_sensitive(test_pregel.test_invoke_two_processes_in_out)


def test_the_slower_clock_scales_step_timeout_and_sleeps_then_restores_them() -> None:
    from graphruntime.graph import START, StateGraph
    from graphruntime.pregel import Pregel
    from tests.upstream.harness import timescale

    def build() -> Any:
        builder = StateGraph(dict)
        builder.add_node("n", lambda state: state)
        builder.add_edge(START, "n")
        return builder.compile()

    before = build()
    before.step_timeout = 2
    module = types.ModuleType("fake_test_module")
    module.time = timescale.time  # type: ignore[attr-defined]
    module.asyncio = timescale.asyncio  # type: ignore[attr-defined]
    with timescale.slower_clock(module, scale=3):
        graph = build()
        assert graph.step_timeout is None
        graph.step_timeout = 1
        assert graph.step_timeout == 3
        assert before.step_timeout == 6  # read through the class while the clock is slow
        assert isinstance(module.time, timescale._SlowTime)
        assert module.time.monotonic is timescale.time.monotonic  # type: ignore[attr-defined]
        assert module.asyncio.TimeoutError is timescale.asyncio.TimeoutError  # type: ignore[attr-defined]
    assert module.time is timescale.time  # type: ignore[attr-defined]
    assert module.asyncio is timescale.asyncio  # type: ignore[attr-defined]
    assert "step_timeout" not in Pregel.__dict__
    assert before.step_timeout == 2


def test_slow_sleeps_sleep_scale_times_longer() -> None:
    from tests.upstream.harness import timescale

    slept: list[float] = []
    real = types.ModuleType("time")
    real.sleep = slept.append  # type: ignore[attr-defined]
    timescale._SlowTime(real, 3).sleep(0.1)
    assert slept == [pytest.approx(0.3)]
