"""graphruntime before and after a change, in process: ``runtime_bench``'s cases, paired.

    .venv/bin/python -m bench.runtime_pair --before ../before            # all cases
    .venv/bin/python -m bench.runtime_pair --before ../before --batches 60 --cases chain10_saver

``--before`` is another checkout of this repository (e.g. ``git worktree add --detach
../before REV``). Each checkout runs in a process of its own, with that checkout first on
``sys.path`` (its own ``.venv/bin/python`` if it has one, else this one's; the process
checks that every ``graphruntime`` module it loaded comes from its checkout), on the graphs
``bench/runtime_bench.py`` builds (graphruntime's side only: LangGraph does not change).

The two processes take turns: a batch of runs in one, then a batch in the other, the
order swapped every batch, so that load on the (shared) machine hits both alike. Per case:
the median thread CPU time and wall time per run of each side, the ratio after/before of
the medians, and the paired ratio: the median (and quartiles) over batches of the ratio
of the two sides' batch medians. The noise is what "before" measures against itself: the
ratio of the medians of its even and odd batches. Prints a markdown table; writes nothing.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent

# runs per batch: a batch takes some tens of milliseconds on a quiet machine
BATCH = {
    "chain10_saver": 20,
    "chain10_nosaver": 30,
    "fanout1000": 2,
    "interrupt_resume": 20,
    "fanout1000_saver": 1,
}
WARMUP = 5


def serve(root: Path) -> None:
    """A worker process: reads ``<case> <runs>`` lines, answers each with a JSON list of
    ``[wall, cpu]`` seconds per run."""
    if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
        del sys.path[0]  # this file's folder: its modules would shadow the checkout's
    sys.path.insert(0, str(root))
    from bench import runtime_bench as rb  # from the checkout served

    api = rb.load_api("graphruntime")
    cases = {case.name: case for case in rb.all_cases(1000)}
    built: dict[str, Any] = {}
    for line in sys.stdin:
        name, runs = line.split()
        workload = built.get(name)
        if workload is None:
            workload = built[name] = cases[name].build(api)
            for _ in range(WARMUP):
                workload.run()
                workload.cleanup()
            gc.collect()
            gc.freeze()
        times = []
        for _ in range(int(runs)):
            cpu, wall = time.thread_time(), time.perf_counter()
            workload.run()
            wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
            workload.cleanup()
            times.append((wall, cpu))
        sys.stdout.write(json.dumps(times) + "\n")
        sys.stdout.flush()
    strays = sorted(
        str(module.__file__)
        for name, module in list(sys.modules.items())
        if name.startswith("graphruntime")
        and getattr(module, "__file__", None)
        and not Path(str(module.__file__)).resolve().is_relative_to(root.resolve())
    )
    if strays:
        raise SystemExit(f"modules loaded from outside {root}: {strays[:5]}")


class Side:
    """One checkout's worker process."""

    def __init__(self, root: Path) -> None:
        own = root / ".venv" / "bin" / "python"
        python = str(own) if own.exists() else sys.executable
        self.root = root
        self.process = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--serve", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
        )

    def runs(self, case: str, runs: int) -> list[tuple[float, float]]:
        stdin, stdout = self._pipes()
        stdin.write(f"{case} {runs}\n")
        stdin.flush()
        line = stdout.readline()
        if not line:
            raise SystemExit(f"the worker for {self.root} stopped (exit {self.process.wait()})")
        return [(wall, cpu) for wall, cpu in json.loads(line)]

    def close(self) -> None:
        stdin, _ = self._pipes()
        stdin.close()
        if self.process.wait(timeout=120) != 0:
            raise SystemExit(f"the worker for {self.root} failed")

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        return self.process.stdin, self.process.stdout


@dataclass
class Paired:
    case: str
    samples: dict[str, list[tuple[float, float]]] = field(
        default_factory=lambda: {"before": [], "after": []}
    )
    batch_cpu: dict[str, list[float]] = field(default_factory=lambda: {"before": [], "after": []})

    def median(self, side: str, index: int) -> float:
        return statistics.median(sample[index] for sample in self.samples[side])

    def ratio(self, index: int) -> float:
        return self.median("after", index) / self.median("before", index)

    def paired(self) -> tuple[float, float, float]:
        """Quartiles of the per-batch ratio after/before of the CPU medians."""
        ratios = sorted(
            a / b for a, b in zip(self.batch_cpu["after"], self.batch_cpu["before"], strict=True)
        )
        q1, q2, q3 = statistics.quantiles(ratios, n=4)
        return q1, q2, q3

    def noise(self) -> float:
        """Before against itself: its even batches' median over its odd batches'."""
        before = self.batch_cpu["before"]
        return statistics.median(before[::2]) / statistics.median(before[1::2])


def measure(before: Side, after: Side, case: str, batches: int) -> Paired:
    result = Paired(case)
    for batch in range(batches):
        order = ((before, "before"), (after, "after"))
        for side, name in order if batch % 2 == 0 else reversed(order):
            times = side.runs(case, BATCH[case])
            result.samples[name] += times
            result.batch_cpu[name].append(statistics.median(cpu for _, cpu in times))
    return result


def table(results: Sequence[Paired]) -> str:
    lines = [
        "| case | before CPU ms | after CPU ms | after/before CPU | paired ratio (quartiles) "
        "| noise (before/before) | before wall ms | after wall ms | after/before wall |",
        "|---|---:|---:|---:|:-:|---:|---:|---:|---:|",
    ]
    for r in results:
        q1, q2, q3 = r.paired()
        lines.append(
            f"| {r.case} | {r.median('before', 1) * 1e3:.3f} | {r.median('after', 1) * 1e3:.3f} "
            f"| {r.ratio(1):.3f} | {q2:.3f} ({q1:.3f}-{q3:.3f}) | {r.noise():.3f} "
            f"| {r.median('before', 0) * 1e3:.3f} | {r.median('after', 0) * 1e3:.3f} "
            f"| {r.ratio(0):.3f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--before", type=Path, help="the other checkout (the code before)")
    parser.add_argument("--batches", type=int, default=40, help="batches per side per case")
    parser.add_argument("--cases", nargs="+", metavar="CASE", help="only these (default: all)")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        serve(args.serve)
        return 0
    if args.before is None or not (args.before / "graphruntime").is_dir():
        parser.error("--before must name another checkout of this repository")
    if args.batches < 4:
        parser.error("--batches must be at least 4")
    cases = args.cases or list(BATCH)
    if unknown := sorted(set(cases) - set(BATCH)):
        parser.error(f"unknown case(s) {unknown}; known: {sorted(BATCH)}")
    load_start = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    before, after = Side(args.before.resolve()), Side(ROOT)
    try:
        results = [measure(before, after, case, args.batches) for case in cases]
    finally:
        before.close()
        after.close()
    load_end = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    sys.stdout.write(table(results))
    sys.stdout.write(
        f"\nload average (1/5/15 min): {load_start} at the start, {load_end} at the end\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
