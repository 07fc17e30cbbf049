"""graphruntime vs LangGraph, in one process, on the same graphs.

Run on demand (never in CI)::

    .venv/bin/python -m bench.runtime_bench            # all cases, writes bench/RESULTS.md
    .venv/bin/python -m bench.runtime_bench --reps 100 --cases chain10_saver
    .venv/bin/python bench/runtime_bench.py --no-write

Every graph is built for both runtimes by one builder function that takes the
runtime's API (loaded from the module prefix ``langgraph`` or ``graphruntime``), so
the two graphs are the same code. For each case the script

1. runs the graph once with each runtime and checks both return the same result,
2. warms both up,
3. times ``--reps`` runs of each, interleaved (LangGraph then graphruntime, then the
   other way round, ...) so that drift of the machine hits both alike,

and reports median and p90 per runtime, the ratio of medians (LangGraph /
graphruntime: above 1 means graphruntime is faster) and the median of the per-rep
paired ratios. The target is a ratio of at least 2 on every case. Results replace
the section ``## In-process runtime vs LangGraph`` of bench/RESULTS.md and leave
every other section of that file as it is.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.metadata
import itertools
import operator
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypedDict

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/runtime_bench.py` as well as `-m`
    sys.path.insert(0, str(ROOT))

from bench._report import (  # noqa: E402 - after the sys.path fix
    command_line,
    git_revision,
    loadavg,
    machine,
    write_section,
)

RESULTS = ROOT / "bench" / "RESULTS.md"
SECTION = "## In-process runtime vs LangGraph"
MARK = "runtime_bench"
RUNTIMES = ("langgraph", "graphruntime")
TARGET = 2.0


# --------------------------------------------------------------------------------------
# The two APIs, loaded by module prefix
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Api:
    """The names a graph builder needs, from one runtime."""

    prefix: str
    StateGraph: Any
    START: str
    END: str
    Send: Any
    Command: Any
    interrupt: Callable[[Any], Any]
    InMemorySaver: Any


def load_api(prefix: str) -> Api:
    graph = importlib.import_module(f"{prefix}.graph")
    types = importlib.import_module(f"{prefix}.types")
    memory = importlib.import_module(f"{prefix}.checkpoint.memory")
    return Api(
        prefix=prefix,
        StateGraph=graph.StateGraph,
        START=graph.START,
        END=graph.END,
        Send=types.Send,
        Command=types.Command,
        interrupt=types.interrupt,
        InMemorySaver=memory.InMemorySaver,
    )


# --------------------------------------------------------------------------------------
# Workloads: one builder per case, shared by both runtimes
# --------------------------------------------------------------------------------------


@dataclass
class Workload:
    """``run`` is timed; ``cleanup`` (untimed) undoes what a run left behind."""

    run: Callable[[], Any]
    cleanup: Callable[[], None] = lambda: None


class _Threads:
    """A fresh thread id per run, deleted from the saver after the run (untimed)."""

    def __init__(self, saver: Any) -> None:
        self.saver = saver
        self.counter = itertools.count()
        self.current = ""

    def next_config(self) -> dict[str, Any]:
        self.current = f"bench-{next(self.counter)}"
        return {"configurable": {"thread_id": self.current}}

    def cleanup(self) -> None:
        if self.current:
            self.saver.delete_thread(self.current)
            self.current = ""


class ChainState(TypedDict):
    x: int
    path: Annotated[list[str], operator.add]


CHAIN_LENGTH = 10


def build_chain(api: Api, *, checkpointer: bool) -> Workload:
    """``CHAIN_LENGTH`` nodes in a line, each adds 1 to ``x`` and appends its name."""
    builder = api.StateGraph(ChainState)

    def make_node(name: str) -> Callable[[ChainState], dict[str, Any]]:
        def node(state: ChainState) -> dict[str, Any]:
            return {"x": state["x"] + 1, "path": [name]}

        return node

    names = [f"n{i}" for i in range(CHAIN_LENGTH)]
    for name in names:
        builder.add_node(name, make_node(name))
    builder.add_edge(api.START, names[0])
    for a, b in itertools.pairwise(names):
        builder.add_edge(a, b)
    builder.add_edge(names[-1], api.END)
    if not checkpointer:
        graph = builder.compile()
        return Workload(run=lambda: graph.invoke({"x": 0, "path": []}))
    threads = _Threads(api.InMemorySaver())
    graph = builder.compile(checkpointer=threads.saver)
    return Workload(
        run=lambda: graph.invoke({"x": 0, "path": []}, threads.next_config()),
        cleanup=threads.cleanup,
    )


class FanOutState(TypedDict, total=False):
    n: int
    results: Annotated[list[int], operator.add]
    total: int


def build_fanout(api: Api, *, tasks: int, checkpointer: bool) -> Workload:
    """START sends ``tasks`` Sends to ``work``; results reduce with operator.add; ``total`` sums."""
    builder = api.StateGraph(FanOutState)

    def work(arg: dict[str, int]) -> dict[str, Any]:
        return {"results": [arg["i"] * 2]}

    def total(state: FanOutState) -> dict[str, Any]:
        return {"total": sum(state["results"])}

    def dispatch(state: FanOutState) -> list[Any]:
        return [api.Send("work", {"i": i}) for i in range(state["n"])]

    builder.add_node("work", work)
    builder.add_node("total", total)
    builder.add_conditional_edges(api.START, dispatch, ["work"])
    builder.add_edge("work", "total")
    builder.add_edge("total", api.END)
    if not checkpointer:
        graph = builder.compile()
        return Workload(run=lambda: graph.invoke({"n": tasks, "results": []}))
    threads = _Threads(api.InMemorySaver())
    graph = builder.compile(checkpointer=threads.saver)
    return Workload(
        run=lambda: graph.invoke({"n": tasks, "results": []}, threads.next_config()),
        cleanup=threads.cleanup,
    )


class ApprovalState(TypedDict, total=False):
    request: str
    draft: str
    answer: str
    result: str


def build_interrupt(api: Api) -> Workload:
    """draft -> review (interrupt) -> publish, with InMemorySaver; one run = invoke + resume."""
    builder = api.StateGraph(ApprovalState)

    def draft(state: ApprovalState) -> dict[str, Any]:
        return {"draft": f"draft of {state['request']}"}

    def review(state: ApprovalState) -> dict[str, Any]:
        answer = api.interrupt({"question": "publish?", "draft": state["draft"]})
        return {"answer": answer}

    def publish(state: ApprovalState) -> dict[str, Any]:
        return {"result": f"{state['draft']}: {state['answer']}"}

    builder.add_node("draft", draft)
    builder.add_node("review", review)
    builder.add_node("publish", publish)
    builder.add_edge(api.START, "draft")
    builder.add_edge("draft", "review")
    builder.add_edge("review", "publish")
    builder.add_edge("publish", api.END)
    threads = _Threads(api.InMemorySaver())
    graph = builder.compile(checkpointer=threads.saver)

    def run() -> tuple[Any, Any]:
        config = threads.next_config()
        paused = graph.invoke({"request": "report"}, config)
        done = graph.invoke(api.Command(resume="yes"), config)
        return paused, done

    return Workload(run=run, cleanup=threads.cleanup)


@dataclass(frozen=True)
class Case:
    name: str
    description: str
    build: Callable[[Api], Workload]
    required: bool = True


def all_cases(fanout_tasks: int) -> list[Case]:
    return [
        Case(
            "chain10_saver",
            f"{CHAIN_LENGTH}-node chain, InMemorySaver (new thread per run)",
            lambda api: build_chain(api, checkpointer=True),
        ),
        Case(
            "chain10_nosaver",
            f"{CHAIN_LENGTH}-node chain, no checkpointer",
            lambda api: build_chain(api, checkpointer=False),
        ),
        Case(
            f"fanout{fanout_tasks}",
            f"Send fan-out to {fanout_tasks} tasks, operator.add reducer, no checkpointer",
            lambda api: build_fanout(api, tasks=fanout_tasks, checkpointer=False),
        ),
        Case(
            "interrupt_resume",
            "3-node graph, interrupt() then Command(resume=...), InMemorySaver",
            build_interrupt,
        ),
        Case(
            f"fanout{fanout_tasks}_saver",
            f"Send fan-out to {fanout_tasks} tasks, InMemorySaver (informational)",
            lambda api: build_fanout(api, tasks=fanout_tasks, checkpointer=True),
            required=False,
        ),
    ]


# --------------------------------------------------------------------------------------
# Sanity check, timing, statistics
# --------------------------------------------------------------------------------------


def normalize(value: Any) -> Any:
    """Make results of the two runtimes comparable: Interrupts by value, ids dropped."""
    if type(value).__name__ == "Interrupt" and hasattr(value, "value"):
        return ("Interrupt", normalize(value.value))
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(normalize(v) for v in value)
    return value


@dataclass
class CaseResult:
    case: Case
    samples: dict[str, list[float]] = field(default_factory=dict)

    def median(self, runtime: str) -> float:
        return statistics.median(self.samples[runtime])

    def p90(self, runtime: str) -> float:
        return percentile(self.samples[runtime], 0.9)

    @property
    def ratio(self) -> float:
        return self.median("langgraph") / self.median("graphruntime")

    def ratio_interval(
        self, confidence: float = 0.95, resamples: int = 2000
    ) -> tuple[float, float]:
        """Paired bootstrap interval of the ratio of medians (deterministic seed)."""
        lg, gr = self.samples["langgraph"], self.samples["graphruntime"]
        rng = random.Random(0)
        n = len(lg)
        ratios = []
        for _ in range(resamples):
            idx = [rng.randrange(n) for _ in range(n)]
            ratios.append(
                statistics.median(lg[i] for i in idx) / statistics.median(gr[i] for i in idx)
            )
        ratios.sort()
        tail = (1 - confidence) / 2
        return ratios[int(tail * resamples)], ratios[
            min(resamples - 1, int((1 - tail) * resamples))
        ]

    @property
    def paired_ratio(self) -> float:
        pairs = zip(self.samples["langgraph"], self.samples["graphruntime"], strict=True)
        return statistics.median(lg / gr for lg, gr in pairs)


def percentile(samples: Sequence[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    rank = max(1, min(len(ordered), round(q * len(ordered) + 0.5)))
    return ordered[rank - 1]


def _timed(workload: Workload) -> float:
    start = time.perf_counter()
    workload.run()
    elapsed = time.perf_counter() - start
    workload.cleanup()
    return elapsed


def bench_case(case: Case, apis: dict[str, Api], reps: int, warmup: int) -> CaseResult:
    workloads = {name: case.build(api) for name, api in apis.items()}
    results = {}
    for name, workload in workloads.items():
        results[name] = normalize(workload.run())
        workload.cleanup()
    if results["langgraph"] != results["graphruntime"]:
        raise AssertionError(
            f"{case.name}: results differ\n  langgraph:    {results['langgraph']!r}\n"
            f"  graphruntime: {results['graphruntime']!r}"
        )
    for _ in range(warmup):
        for workload in workloads.values():
            _timed(workload)
    # Both runtimes share one heap: freeze what exists (modules, compiled graphs) so that a
    # full collection during a run scans only objects made by runs, not the other runtime's
    # imports. GC stays enabled while timing: collections a run's allocations cause count.
    gc.collect()
    gc.freeze()
    out = CaseResult(case, {name: [] for name in RUNTIMES})
    try:
        for rep in range(reps):
            order = RUNTIMES if rep % 2 == 0 else RUNTIMES[::-1]
            for name in order:
                out.samples[name].append(_timed(workloads[name]))
    finally:
        gc.unfreeze()
    return out


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.3f}" if ms < 10 else f"{ms:.1f}" if ms < 1000 else f"{ms:.0f}"


def table(results: Sequence[CaseResult]) -> str:
    head = (
        "| case | LangGraph median ms | LangGraph p90 ms | graphruntime median ms "
        "| graphruntime p90 ms | ratio (LG/GR medians) | ratio 95% CI | paired ratio median "
        f"| ≥{TARGET:g}x |\n"
        "|---|---:|---:|---:|---:|---:|:-:|---:|:-:|\n"
    )
    rows = []
    for r in results:
        low, high = r.ratio_interval()
        if not r.case.required:
            verdict = "(info)"
        elif low >= TARGET:
            verdict = "yes"
        elif r.ratio >= TARGET:
            verdict = "borderline"
        else:
            verdict = "**no**"
        rows.append(
            f"| {r.case.name} | {_ms(r.median('langgraph'))} | {_ms(r.p90('langgraph'))} "
            f"| {_ms(r.median('graphruntime'))} | {_ms(r.p90('graphruntime'))} "
            f"| {r.ratio:.2f}x | {low:.2f}-{high:.2f}x | {r.paired_ratio:.2f}x | {verdict} |"
        )
    return head + "\n".join(rows) + "\n"


def versions() -> dict[str, str]:
    out = {}
    for dist in ("langgraph", "langgraph-checkpoint"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    out["graphruntime"] = git_revision("graphruntime")
    return out


def section(results: Sequence[CaseResult], args: argparse.Namespace, load_start: str) -> str:
    lines = [
        SECTION,
        "",
        "Written by `bench/runtime_bench.py` (replaces only this section). Both runtimes run",
        "the same graphs, built by one builder function per case, in one process; timed runs",
        "alternate between them. Ratio = LangGraph median / graphruntime median: above 1",
        f"means graphruntime is faster; the target is at least {TARGET:g}x on every required",
        "case. The paired ratio is the median of the per-repetition ratios.",
        "",
        f"- Command: `{command_line()}` (from the repository root)",
        f"- Date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}",
    ]
    lines += [f"- {k}: {v}" for k, v in machine().items()]
    lines.append(f"- Load average (1/5/15 min): {load_start} at the start, {loadavg()} at the end")
    lines += [f"- {k}: {v}" for k, v in versions().items()]
    lines += [
        f"- Repetitions: {args.reps} timed per runtime per case, after {args.warmup} warm-up "
        "runs; results of both runtimes checked equal first; `gc.collect()` then `gc.freeze()` "
        "before each case's timed runs (GC stays on while timing)",
        "",
        "Cases:",
        "",
    ]
    lines += [f"- `{r.case.name}`: {r.case.description}" for r in results]
    lines += ["", table(results).rstrip("\n"), ""]
    lines += [
        "Verdict: `yes` when the whole 95% interval of the ratio is at or above the target,",
        "`borderline` when only the point estimate is, `no` otherwise. The interval covers",
        "noise within this run only; other load on the machine moves whole runs (see the",
        "load average above), so compare runs made on a quiet machine.",
        "",
    ]
    required = [r for r in results if r.case.required]
    missed = [r.case.name for r in required if r.ratio < TARGET]
    shaky = [r.case.name for r in required if r.ratio >= TARGET > r.ratio_interval()[0]]
    if missed:
        lines.append(f"Target ({TARGET:g}x) not met on: {', '.join(missed)}.")
    if shaky:
        lines.append(f"Target ({TARGET:g}x) met only borderline on: {', '.join(shaky)}.")
    if required and not missed and not shaky:
        lines.append(f"Target ({TARGET:g}x) met on every required case that was run.")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reps", type=int, default=40, help="timed runs per runtime per case")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs first")
    parser.add_argument(
        "--cases", nargs="+", metavar="CASE", help="only these cases (default: all)"
    )
    parser.add_argument("--fanout-tasks", type=int, default=1000, help="Sends in the fan-out cases")
    parser.add_argument("--no-write", action="store_true", help="do not touch RESULTS.md")
    parser.add_argument("--results", type=Path, default=RESULTS, help="markdown file to update")
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error("--reps must be at least 1")

    cases = all_cases(args.fanout_tasks)
    if args.cases:
        known = {c.name for c in cases}
        if unknown := set(args.cases) - known:
            parser.error(f"unknown case(s) {sorted(unknown)}; known: {sorted(known)}")
        cases = [c for c in cases if c.name in args.cases]
    apis = {name: load_api(name) for name in RUNTIMES}
    load_start = loadavg()

    results = []
    for case in cases:
        gc.collect()
        result = bench_case(case, apis, args.reps, args.warmup)
        results.append(result)
        sys.stdout.write(
            f"{case.name:<18} LG {_ms(result.median('langgraph')):>8} ms  "
            f"GR {_ms(result.median('graphruntime')):>8} ms  ratio {result.ratio:.2f}x\n"
        )
        sys.stdout.flush()
    sys.stdout.write("\n" + table(results))
    if not args.no_write:
        write_section(args.results, section(results, args, load_start), SECTION, MARK)
        sys.stdout.write(f"\nwrote section {SECTION!r} of {args.results}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
