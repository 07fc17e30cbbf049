"""graphruntime.prebuilt mirrors langgraph.prebuilt's import paths and names."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import get_type_hints

import pytest

import graphruntime.prebuilt as prebuilt
from graphruntime.prebuilt import chat_agent_executor, interrupt, tool_node, tool_validator

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import langgraph.prebuilt as lg_prebuilt
    import langgraph.prebuilt.chat_agent_executor as lg_chat_agent_executor
    import langgraph.prebuilt.interrupt as lg_interrupt

ROOT = Path(__file__).resolve().parents[3]


def test_package_exports_langgraphs_names() -> None:
    assert set(prebuilt.__all__) == set(lg_prebuilt.__all__)
    for name in prebuilt.__all__:
        assert getattr(prebuilt, name) is not None


def test_agent_module_exports_langgraphs_names() -> None:
    assert set(chat_agent_executor.__all__) == set(lg_chat_agent_executor.__all__)


@pytest.mark.parametrize(
    "name", ["HumanInterruptConfig", "ActionRequest", "HumanInterrupt", "HumanResponse"]
)
def test_interrupt_types_have_langgraphs_keys(name: str) -> None:
    ours, theirs = getattr(interrupt, name), getattr(lg_interrupt, name)
    assert set(get_type_hints(ours)) == set(get_type_hints(theirs))
    assert ours.__required_keys__ == theirs.__required_keys__


def test_tool_modules_have_the_names_ports_import() -> None:
    for name in ("ToolNode", "ToolRuntime", "InjectedState", "InjectedStore", "tools_condition"):
        assert getattr(tool_node, name) is getattr(prebuilt, name)
    for name in (
        "ToolCallRequest",
        "ToolCallWithContext",
        "ToolInvocationError",
        "msg_content_output",
    ):
        assert hasattr(tool_node, name)
    assert tool_validator.ValidationNode is prebuilt.ValidationNode


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_graphruntime_does_not_load_prebuilt() -> None:
    done = _python(
        """
        import sys
        import graphruntime, graphruntime.graph, graphruntime.pregel
        assert "graphruntime.prebuilt" not in sys.modules
        assert "langchain_core" not in sys.modules
        """
    )
    assert done.returncode == 0, done.stderr


def test_without_langchain_prebuilt_says_what_to_install() -> None:
    done = _python(
        """
        import sys
        sys.modules["langchain_core"] = None  # as if not installed
        try:
            import graphruntime.prebuilt
        except ImportError as exc:
            print(exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'graphruntime[messages]'" in done.stdout
