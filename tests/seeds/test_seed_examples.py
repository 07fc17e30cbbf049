"""The runnable examples of the seed documents pass with only the import swap.

Every file in ``examples/`` is a runnable example copied verbatim from a seed document
(``shared/seeds/*.txt``) and written against ``langgraph``. Each test runs one example
twice in a fresh module namespace: once as written, and once with the import prefix swapped
textually (``langgraph`` -> ``graphruntime``, in import lines only). Both runs must print
the same thing, leave the same data in their module namespace (the results the example
keeps in variables) and leave their thread in the same state, once the ids that are random
per run (interrupt ids, checkpoint ids, task ids, uuids) are replaced by role tokens in
order of first appearance.

Code in the seeds that is not a runnable example (and so has no file here) is listed in
``SKIPPED`` below, each with the reason.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import os
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE / "examples"
ROOT = HERE.parent.parent
# What each example was checked against: the seed file's digest and the example's code's
# (written by `python -m tests.seeds.record` while the seeds were at hand).
RECORD = HERE / "seed_digests.json"


def find_seeds() -> Path | None:
    """The seed documents: GRAPHRUNTIME_SEEDS, else ``shared/seeds`` beside the checkout or
    beside any folder above it (CI clones the repository with shared/ beside it; a git
    worktree sits deeper)."""
    configured = os.environ.get("GRAPHRUNTIME_SEEDS")
    if configured:
        return Path(configured)
    for folder in ROOT.parents:
        if (folder / "shared" / "seeds").is_dir():
            return folder / "shared" / "seeds"
    return None


SEEDS = find_seeds()

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.py"))

# Every runnable example the seeds contain: <seed file stem>_<n>.py.
EXPECTED_EXAMPLES = (
    "002_73de0fb2319e4217_1.py",  # 处理多个中断: parallel interrupts resumed with an id map
    "002_73de0fb2319e4217_2.py",  # 审批或拒绝: ApprovalState, Command(goto=...) after resume
    "002_73de0fb2319e4217_3.py",  # 审查与编辑状态: ReviewState, resume value replaces text
    "004_ffe582f2959067ea_1.py",  # 扩展示例:使用 interrupt
    "004_ffe582f2959067ea_2.py",  # 扩展示例:使用中断批准或拒绝
    "004_ffe582f2959067ea_3.py",  # 扩展示例:使用中断编辑状态
    "004_ffe582f2959067ea_4.py",  # 扩展示例:验证用户输入 (three resumes)
    "004_ffe582f2959067ea_5.py",  # 扩展示例:父图和子图执行流程 (subgraph called as function)
    "004_ffe582f2959067ea_6.py",  # 扩展示例:引入非确定性的错误代码 (resume + update)
)

# Code in the seeds that is deliberately not run, and why. (seed, section, reason)
SKIPPED: tuple[tuple[str, str, str], ...] = (
    (
        "000_9009bb5ddaf47667",
        "all code blocks",
        "Pseudo-code of LangGraph internals (GraphBubbleUp, should_interrupt, interrupt(), "
        "PregelScratchpad, _first, _pending_interrupts, _scratchpad, suppress_interrupt) and "
        "node fragments using undefined names (State, api, process, hash_of_nodeA_ns, "
        "compiled): nothing runs on its own.",
    ),
    (
        "001_e1edc4deb5e29d32",
        "all code blocks",
        "Excerpts of LangGraph source (interrupt(), PregelScratchpad, Command, "
        "PregelLoop._first, InMemorySaver.get_tuple) and the 5.2 human_node fragment, which "
        "has no State, graph or invocation.",
    ),
    (
        "002_73de0fb2319e4217",
        "使用 interrupt 暂停 / 恢复中断 / 审批或拒绝 / 审查与编辑状态 (short snippets)",
        "Fragments: `graph`, `State` and `config` are not defined; the full examples of the "
        "same sections are run instead (002_73de0fb2319e4217_2/_3).",
    ),
    (
        "002_73de0fb2319e4217",
        "使用人机协作(HITL)中断进行流式处理",
        "Fragment: top-level `async for` with undefined graph, initial_input, "
        "AIMessageChunk, display_streaming_content and get_user_input.",
    ),
    (
        "002_73de0fb2319e4217",
        "工具中的中断 (send_email tool + full agent example)",
        "Needs langchain (`from langchain.tools import tool`), an Anthropic model over the "
        "network (ChatAnthropic) and langgraph-checkpoint-sqlite (SqliteSaver); none is a "
        "project dependency. Stubbing the LLM would not help: the graph is agent -> END and "
        "never executes the tool, so `initial['__interrupt__']` raises KeyError even in "
        "LangGraph.",
    ),
    (
        "002_73de0fb2319e4217",
        "验证人类输入 (full FormState example)",
        "Needs langgraph-checkpoint-sqlite (`from langgraph.checkpoint.sqlite import "
        "SqliteSaver`), which is not installed, and graphruntime has no "
        "graphruntime.checkpoint.sqlite, so the import swap alone cannot make it run; the "
        "only allowed adaptation is stubbing an LLM call. (It also writes forms.db into the "
        "working directory.) The get_age_node loop is covered by 004_ffe582f2959067ea_4.",
    ),
    (
        "002_73de0fb2319e4217",
        "中断规则 / 与以函数方式调用的子图配合使用 / 使用中断进行调试",
        "Fragments illustrating rules: undefined State, fetch_data, db, datetime, subgraph, "
        "some_code, builder, inputs; no graph is built or run.",
    ),
    (
        "003_f0f38bb21964880d",
        "all code blocks",
        "A condensed rewrite of 002 with only fragments (no complete example): undefined "
        "graph, State, db, NetworkException, DataProcessor, validate_input, builder, inputs; "
        "the send_email tool needs langchain.",
    ),
    (
        "004_ffe582f2959067ea",
        "interrupt / 批准或拒绝 / 审查和编辑状态 / 验证人工输入 (short snippets)",
        "Fragments: graph_builder, checkpointer and State are not defined; the extended "
        "examples of the same sections are run instead (004_ffe582f2959067ea_1.._4).",
    ),
    (
        "004_ffe582f2959067ea",
        "审查工具调用",
        "Fragment: tool_call, get_updated_msg, get_feedback_msg and updated_message are not "
        "defined.",
    ),
    (
        "004_ffe582f2959067ea",
        "使用 Command 原语恢复 / 中断后如何恢复? / 一次调用恢复多个中断 / 常见陷阱",
        "Fragments: graph, thread_config, parent, parent_graph, api_call, question and "
        "subgraph are not defined; the counter example is a node with no graph.",
    ),
)

_IMPORT_LINE = re.compile(r"^(?P<indent>[ \t]*)(?P<kw>from|import)[ \t]+langgraph(?=[.\s])", re.M)

# A uuid (e.g. a checkpoint id or a uuid4 thread id), then a bare 32-hex id (interrupt ids).
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_HEX32 = re.compile(r"\b[0-9a-f]{32}\b")


def swap_imports(source: str) -> str:
    """``from langgraph.x import y`` / ``import langgraph.x`` -> the graphruntime prefix."""
    return _IMPORT_LINE.sub(r"\g<indent>\g<kw> graphruntime", source)


def normalize(text: str) -> str:
    """Replace per-run ids with role tokens numbered by first appearance."""
    for pattern, role in ((_UUID, "uuid"), (_HEX32, "id")):
        seen: dict[str, str] = {}

        def token(match: re.Match[str], seen: dict[str, str] = seen, role: str = role) -> str:
            return seen.setdefault(match.group(0), f"<{role}{len(seen) + 1}>")

        text = pattern.sub(token, text)
    return text


@dataclass
class Run:
    stdout: str
    namespace: dict[str, Any]
    transcript: str


def _is_data(value: Any) -> bool:
    return isinstance(value, (dict, list, tuple, str, int, float, bool, type(None)))


def _state_of(namespace: dict[str, Any]) -> str:
    """The example's thread, as get_state shows it (when it keeps a graph and a config)."""
    graph, config = namespace.get("graph"), namespace.get("config")
    if graph is None or not isinstance(config, dict) or not hasattr(graph, "get_state"):
        return "<no graph/config>"
    # A copy: LangGraph's get_state rewrites a non-str thread_id in the caller's config.
    snap = graph.get_state(copy.deepcopy(config))
    tasks = [(t.name, t.path, [i.value for i in t.interrupts]) for t in snap.tasks]
    return repr(
        {
            "values": snap.values,
            "next": snap.next,
            "interrupts": [(i.value, i.id) for i in snap.interrupts],
            "tasks": tasks,
        }
    )


def run_example(path: Path, prefix: str) -> Run:
    """Exec the example (import prefix swapped for graphruntime) into a fresh module."""
    source = path.read_text(encoding="utf-8")
    if prefix == "graphruntime":
        swapped = swap_imports(source)
        assert swapped != source, f"{path.name} imports nothing from langgraph"
        assert not re.search(r"^\s*(from|import)\s+langgraph\b", swapped, re.M)
        source = swapped
    name = f"seed_example_{path.stem}_{prefix}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module  # typing.get_type_hints looks schemas' modules up here
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(source, str(path), "exec"), module.__dict__)
            namespace = {
                k: v for k, v in module.__dict__.items() if not k.startswith("__") and _is_data(v)
            }
            data = "\n".join(f"{k} = {v!r}" for k, v in sorted(namespace.items()))
            state = _state_of(module.__dict__)
    finally:
        del sys.modules[name]
    transcript = f"{out.getvalue()}\n--- namespace ---\n{data}\n--- state ---\n{state}\n"
    return Run(out.getvalue(), module.__dict__, normalize(transcript))


def test_every_seed_example_is_here() -> None:
    assert [p.name for p in EXAMPLE_FILES] == sorted(EXPECTED_EXAMPLES)


def example_code(path: Path) -> tuple[str, str]:
    """An example's citing docstring and the code after it."""
    text = path.read_text(encoding="utf-8")
    docstring_end = text.index('"""', 3) + 3
    return text[:docstring_end], text[docstring_end:].strip("\n")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_example_is_seed_text_verbatim(path: Path) -> None:
    """The code after the citing docstring is a contiguous run of lines of the seed.

    Checked against the seed itself wherever the seeds are found; everywhere, the code is
    byte for byte the code recorded when it was last checked against them (and the seed
    found is the one recorded)."""
    docstring, code = example_code(path)
    seed_name = f"{path.stem.rsplit('_', 1)[0]}.txt"
    assert seed_name in docstring
    record = json.loads(RECORD.read_text("utf-8"))
    assert record["examples"][path.name] == {"seed": seed_name, "code_sha256": sha256(code)}, (
        f"{path.name} changed since it was checked against its seed: "
        "run `python -m tests.seeds.record` with the seeds at hand"
    )
    if SEEDS is not None:
        seed_text = (SEEDS / seed_name).read_text(encoding="utf-8")
        assert sha256(seed_text) == record["seeds"][seed_name], f"{seed_name} changed"
        assert code in seed_text


def test_the_record_names_every_example_and_its_seed() -> None:
    record = json.loads(RECORD.read_text("utf-8"))
    assert sorted(record["examples"]) == sorted(EXPECTED_EXAMPLES)
    assert {e["seed"] for e in record["examples"].values()} == set(record["seeds"])


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_example_runs_the_same_with_the_import_swap(path: Path) -> None:
    oracle = run_example(path, "langgraph")
    ported = run_example(path, "graphruntime")

    assert oracle.stdout.strip(), f"{path.name} printed nothing under langgraph"
    # The swapped run really used graphruntime: nothing it built comes from langgraph.
    leaked = {
        k: type(v).__module__
        for k, v in ported.namespace.items()
        if type(v).__module__.split(".")[0] == "langgraph"
    }
    assert not leaked
    assert any(type(v).__module__.startswith("graphruntime.") for v in ported.namespace.values())
    assert ported.transcript == oracle.transcript


def test_swap_imports_only_touches_import_lines() -> None:
    source = (
        "from langgraph.graph import StateGraph\n"
        "import langgraph.types as t\n"
        "    from langgraph.types import interrupt\n"
        "import langgraphx\n"
        "x = 'from langgraph.graph import END'  # langgraph\n"
        "print('import langgraph')\n"
    )
    assert swap_imports(source) == (
        "from graphruntime.graph import StateGraph\n"
        "import graphruntime.types as t\n"
        "    from graphruntime.types import interrupt\n"
        "import langgraphx\n"
        "x = 'from langgraph.graph import END'  # langgraph\n"
        "print('import langgraph')\n"
    )


def test_normalize_numbers_ids_by_first_appearance() -> None:
    a, b = "ab" * 16, "cd" * 16
    u = "1f1e6748-f3de-676e-8001-c20798f687d0"
    text = f"{b} {a} {b} UUID('{u}') {u}"
    assert normalize(text) == "<id1> <id2> <id1> UUID('<uuid1>') <uuid1>"
    # Different ids in the same roles normalize to the same text; different roles do not.
    assert normalize(f"{a} {b} {a}") == normalize(f"{b} {a} {b}")
    assert normalize(f"{a} {b} {a}") != normalize(f"{a} {a} {b}")
