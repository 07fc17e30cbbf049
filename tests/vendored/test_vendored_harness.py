"""The vendored suites' porting rules and lists (tests/vendored/harness.py)."""

from __future__ import annotations

from pathlib import Path

from tests.upstream_langchain.port import SUITE as LANGCHAIN
from tests.upstream_prebuilt.port import SUITE as PREBUILT
from tests.vendored.harness import _matches, read_tsv, rewrite_imports


def test_prebuilt_imports_swap_public_and_provided_private_modules_only() -> None:
    rename = PREBUILT.rename
    assert rename("langgraph.prebuilt.tool_node") == "graphruntime.prebuilt.tool_node"
    assert rename("langgraph") == "graphruntime"
    # private modules graphruntime provides at LangGraph's path, for LangChain
    assert rename("langgraph.stream._mux") == "graphruntime.stream._mux"
    assert rename("langgraph.prebuilt._tool_call_stream") == (
        "graphruntime.prebuilt._tool_call_stream"
    )
    # other private modules stay LangGraph's (the tests that use them are excluded)
    assert rename("langgraph.pregel._checkpoint") == "langgraph.pregel._checkpoint"
    assert rename("tests.model") == "tests.upstream_prebuilt.model"
    assert rename("langchain_core.messages") == "langchain_core.messages"


def test_langchain_imports_keep_langgraph_for_the_alias() -> None:
    rename = LANGCHAIN.rename
    assert rename("langgraph.graph.state") == "langgraph.graph.state"
    assert rename("langgraph._internal._runnable") == "langgraph._internal._runnable"
    assert rename("tests.unit_tests.agents.model") == "tests.upstream_langchain.model"
    assert rename("tests.unit_tests.agents.middleware.core") == (
        "tests.upstream_langchain.middleware.core"
    )
    assert rename("tests.unit_tests.other") == "tests.unit_tests.other"


def test_only_import_lines_change() -> None:
    source = (
        "from langgraph.types import Command\n"
        "    import langgraph.graph as g  # indented\n"
        'text = "from langgraph.types import x"\n'
        "x = langgraph.types  # not an import line\n"
    )
    assert rewrite_imports(source, PREBUILT.rename) == (
        "from graphruntime.types import Command\n"
        "    import graphruntime.graph as g  # indented\n"
        'text = "from langgraph.types import x"\n'
        "x = langgraph.types  # not an import line\n"
    )


def test_a_listed_test_matches_with_or_without_its_parameters_or_by_file() -> None:
    listed = {"a.py::test_x", "b.py"}
    assert _matches("a.py::test_x[memory]", listed)
    assert _matches("a.py::test_x", listed)
    assert _matches("b.py::test_y", listed)
    assert not _matches("a.py::test_xy", listed)


def test_every_vendored_suite_has_its_lists(tmp_path: Path) -> None:
    for suite in (PREBUILT, LANGCHAIN):
        assert suite.excluded_tsv.exists()
        assert suite.unsound_tsv.exists()
        assert suite.expected_failures.exists()
        for test in read_tsv(suite.unsound_tsv):
            assert test.startswith(suite.rel + "/"), test
    assert read_tsv(tmp_path / "missing.tsv") == {}
