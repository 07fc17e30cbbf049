"""graphruntime.compat.alias_langgraph: ``langgraph.*`` is graphruntime for a whole process.

The alias changes the process's imports for good, so each test runs in a fresh interpreter.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphruntime.compat import (
    ALIAS_SETTING,
    LangGraphAliasError,
    LangGraphModuleNotFoundError,
    alias_from_env,
)
from graphruntime.errors import GraphRuntimeError

ROOT = Path(__file__).resolve().parents[3]


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _ok(code: str, **env: str) -> str:
    done = _python(code, **env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_errors_are_graphruntime_errors_of_the_builtin_kinds() -> None:
    assert issubclass(LangGraphAliasError, GraphRuntimeError)
    assert issubclass(LangGraphAliasError, RuntimeError)
    assert issubclass(LangGraphModuleNotFoundError, GraphRuntimeError)
    assert issubclass(LangGraphModuleNotFoundError, ModuleNotFoundError)


def test_refused_once_the_real_langgraph_is_imported() -> None:
    done = _python(
        """
        import langgraph.graph
        from graphruntime.compat import alias_langgraph
        alias_langgraph()
        """
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("graphruntime.compat._alias.LangGraphAliasError:")
    assert "already imported the real LangGraph (langgraph" in last
    assert "before anything imports langgraph" in last


def test_langgraph_modules_are_graphruntimes_modules() -> None:
    out = _ok(
        """
        from graphruntime.compat import alias_langgraph, is_aliased
        alias_langgraph()
        alias_langgraph()  # a second call does nothing
        import langgraph.types, langgraph.graph, langgraph.prebuilt
        from langgraph.graph import StateGraph
        from langgraph.prebuilt import ToolNode
        import graphruntime.types, graphruntime.graph, graphruntime.prebuilt
        assert is_aliased()
        assert langgraph.types is graphruntime.types
        assert StateGraph is graphruntime.graph.StateGraph
        assert ToolNode is graphruntime.prebuilt.ToolNode
        # the module keeps its own identity
        assert langgraph.types.__name__ == "graphruntime.types"
        assert langgraph.types.__spec__.name == "graphruntime.types"
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_a_module_graphruntime_lacks_is_a_module_not_found_error() -> None:
    out = _ok(
        """
        from graphruntime.compat import alias_langgraph
        alias_langgraph()
        try:
            import langgraph.checkpoint.sqlite
        except ModuleNotFoundError as exc:
            print(type(exc).__name__, exc.name)
            print(exc)
        """
    )
    first, message = out.strip().splitlines()
    assert first == "LangGraphModuleNotFoundError langgraph.checkpoint.sqlite"
    assert "maps it to 'graphruntime.checkpoint.sqlite', which does not exist" in message


def test_langgraph_postgres_packages_are_checkpoint_pg() -> None:
    out = _ok(
        """
        from graphruntime.compat import alias_langgraph
        alias_langgraph()
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.store.postgres import PostgresStore
        import checkpoint_pg
        assert PostgresSaver is checkpoint_pg.PostgresSaver
        assert PostgresStore is checkpoint_pg.PostgresStore
        print("ok")
        """
    )
    assert out.strip() == "ok"


def _langchain_imports() -> dict[str, list[str]]:
    """Every ``from langgraph.X import name`` in the installed langchain package."""
    import langchain

    found: dict[str, set[str]] = {}
    for path in Path(langchain.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and (node.module or "").split(".")[0] == "langgraph"
            ):
                found.setdefault(str(node.module), set()).update(a.name for a in node.names)
    return {module: sorted(names) for module, names in found.items()}


def test_every_name_langchain_imports_from_langgraph_is_there() -> None:
    wanted = _langchain_imports()
    # the private modules LangChain reaches for are among them
    assert {"langgraph._internal._runnable", "langgraph.stream._mux"} <= set(wanted)
    out = _ok(
        f"""
        import importlib, json
        from graphruntime.compat import alias_langgraph
        alias_langgraph()
        missing = []
        for module, names in json.loads({json.dumps(json.dumps(wanted))}).items():
            loaded = importlib.import_module(module)
            assert loaded.__name__.startswith("graphruntime"), loaded
            missing += [f"{{module}}.{{n}}" for n in names if not hasattr(loaded, n)]
        import langchain.agents  # and LangChain's agents import
        print(json.dumps(missing))
        """
    )
    assert json.loads(out) == []


_AGENT = """
    from graphruntime.compat import alias_langgraph
    alias_langgraph()

    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    sent = []

    @tool
    def send_email(to: str, body: str) -> str:
        \"\"\"Send an email.\"\"\"
        sent.append((to, body))
        return f"sent to {to}"

    class Model(GenericFakeChatModel):
        def bind_tools(self, tools, **kwargs):
            return self

    call = {"name": "send_email", "args": {"to": "a@x", "body": "hi"}, "id": "c1"}
    model = Model(messages=iter([AIMessage("", tool_calls=[call]), AIMessage("done")]))
    agent = create_agent(
        model,
        [send_email],
        middleware=[HumanInTheLoopMiddleware({"send_email": True}, interrupt_mode=MODE)],
        checkpointer=InMemorySaver(),
    )
    assert type(agent).__module__ == "graphruntime.graph.state", type(agent)
    config = {"configurable": {"thread_id": "t1"}}
"""


def test_create_agent_pauses_for_approval_and_resumes_with_an_edit() -> None:
    out = _ok(
        _AGENT.replace("MODE", '"batched"')
        + """
    paused = agent.invoke({"messages": [("user", "mail a")]}, config)
    [pending] = paused["__interrupt__"]
    request = pending.value
    assert request["action_requests"] == [
        {"name": "send_email", "args": {"to": "a@x", "body": "hi"},
         "description": request["action_requests"][0]["description"]}
    ], request
    assert request["review_configs"][0]["action_name"] == "send_email"
    assert sent == []  # nothing ran before the decision
    assert [i.id for i in agent.get_state(config).interrupts] == [pending.id]

    edit = {"type": "edit", "edited_action": {"name": "send_email",
                                              "args": {"to": "b@x", "body": "hi"}}}
    done = agent.invoke(Command(resume={"decisions": [edit]}), config)
    assert sent == [("b@x", "hi")], sent
    [tool_message] = [m for m in done["messages"] if isinstance(m, ToolMessage)]
    # LangChain tells the model that a reviewer edited its call, then the tool's result
    assert "Executed instead: send_email" in tool_message.content, tool_message.content
    assert tool_message.content.endswith("sent to b@x"), tool_message.content
    assert done["messages"][-1].content == "done"
    print("ok")
    """
    )
    assert out.strip() == "ok"


def test_create_agent_per_call_approval_rejects_a_bad_answer_then_resumes() -> None:
    out = _ok(
        _AGENT.replace("MODE", '"per_call"')
        + """
    import pydantic
    paused = agent.invoke({"messages": [("user", "mail a")]}, config)
    [pending] = paused["__interrupt__"]
    assert pending.value["type"] == "tool_approval", pending.value
    assert pending.value["tool_call_id"] == "c1"
    assert pending.response_schema is not None
    try:
        agent.invoke(Command(resume={pending.id: {"type": "maybe"}}), config)
    except pydantic.ValidationError:
        pass
    else:
        raise AssertionError("a decision outside the schema was accepted")
    # refused before anything was saved: the same interrupt is still pending
    assert [i.id for i in agent.get_state(config).interrupts] == [pending.id]
    assert sent == []
    done = agent.invoke(Command(resume={pending.id: {"type": "approve"}}), config)
    assert sent == [("a@x", "hi")], sent
    assert done["messages"][-1].content == "done"
    print("ok")
    """
    )
    assert out.strip() == "ok"


@pytest.mark.parametrize("value", ["", "0", "false", "off"])
def test_the_setting_off_installs_nothing(value: str) -> None:
    assert alias_from_env({ALIAS_SETTING: value}) is False
    assert alias_from_env({}) is False


def test_the_setting_refuses_a_value_it_does_not_know() -> None:
    with pytest.raises(LangGraphAliasError, match=f"{ALIAS_SETTING}='maybe'"):
        alias_from_env({ALIAS_SETTING: "maybe"})


def test_the_setting_on_installs_the_alias() -> None:
    out = _ok(
        """
        from graphruntime.compat import alias_from_env
        assert alias_from_env() is True
        import langgraph.graph
        print(langgraph.graph.__name__)
        """,
        **{ALIAS_SETTING: "1"},
    )
    assert out.strip() == "graphruntime.graph"


def test_the_workers_registry_honours_the_setting() -> None:
    out = _ok(
        """
        from workers.registry import GraphRegistry
        registry = GraphRegistry.parse("agent=tests.unit.compat.agent_graph:agent")
        graph = registry.get("agent")
        print(type(graph).__module__, sorted(graph.nodes))
        """,
        **{ALIAS_SETTING: "1"},
    )
    module, nodes = out.strip().split(" ", 1)
    assert module == "graphruntime.graph.state"
    assert "HumanInTheLoopMiddleware.after_model" in nodes


def test_the_workers_registry_refuses_a_bad_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from workers.errors import ConfigurationError
    from workers.registry import GraphRegistry

    monkeypatch.setenv(ALIAS_SETTING, "maybe")
    with pytest.raises(ConfigurationError, match=ALIAS_SETTING):
        GraphRegistry.parse("agent=tests.unit.compat.agent_graph:agent")


def test_a_create_agent_graph_pauses_and_resumes_on_the_workers_logic() -> None:
    """The workers' coordinator and task jobs (in memory, their strict serializer) run a
    LangChain agent: paused for approval, resumed with an edit."""
    out = _ok(
        """
        from graphruntime.compat import alias_langgraph
        alias_langgraph()
        from langgraph.types import Command
        from tests.unit.compat.agent_graph import agent
        from workers.testing import InlineCluster

        cluster = InlineCluster({"agent": agent})
        config = {"configurable": {"thread_id": "t1"}}
        paused = cluster.run("agent", {"messages": [("user", "mail a")]}, config)
        [pending] = paused["__interrupt__"]
        assert pending.value["action_requests"][0]["args"] == {"to": "a@x", "body": "hi"}
        edit = {"type": "edit",
                "edited_action": {"name": "send_email", "args": {"to": "b@x", "body": "hi"}}}
        done = cluster.run("agent", Command(resume={"decisions": [edit]}), config)
        print(done["messages"][-2].content.splitlines()[-1], "|", done["messages"][-1].content)
        """
    )
    assert out.strip() == "sent to b@x | done"


LANGGRAPH_GRAPH_FILE = """
from typing import TypedDict
from langgraph.graph import START, StateGraph

class S(TypedDict):
    n: int

builder = StateGraph(S)
builder.add_node("inc", lambda s: {"n": s["n"] + 1})
builder.add_edge(START, "inc")
graph = builder.compile()
"""

LOAD_FROM_CONFIG = """
import sys
from workers.config import registry_for
from workers.errors import ConfigurationError
from workers.settings import Settings
try:
    graph = registry_for(Settings(config=sys.argv[1])).get("g")
except ConfigurationError as exc:
    print("refused:", exc)
else:
    print(type(graph).__module__, graph.invoke({"n": 1}))
"""


def _load_from_config(tmp_path: Path, env: dict[str, str] | None) -> str:
    """Load graph ``g`` (built with ``from langgraph.graph import ...``) from a langgraph.json
    whose env is ``env``, in a fresh interpreter whose environment lacks the setting."""
    (tmp_path / "agent.py").write_text(LANGGRAPH_GRAPH_FILE)
    config = tmp_path / "langgraph.json"
    config.write_text(json.dumps({"graphs": {"g": "./agent.py:graph"}, "env": env or {}}))
    environ = {k: v for k, v in os.environ.items() if k != ALIAS_SETTING}
    done = subprocess.run(
        [sys.executable, "-c", LOAD_FROM_CONFIG, str(config)],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_setting_in_langgraph_json_env_is_honoured(tmp_path: Path) -> None:
    out = _load_from_config(tmp_path, {ALIAS_SETTING: "1"})
    assert out == "graphruntime.graph.state {'n': 2}"


def test_a_graph_built_with_the_real_langgraph_is_refused_with_the_fix(tmp_path: Path) -> None:
    out = _load_from_config(tmp_path, None)
    assert out.startswith("refused: Graph entry g=")
    assert "built with the real LangGraph" in out
    assert f"{ALIAS_SETTING}=1" in out
    assert "graphruntime.graph" in out
