"""Where the harness keeps its lists."""

from __future__ import annotations

from pathlib import Path

__all__ = ("EXCLUDED", "EXPECTED_FAILURES", "HERE", "ROOT", "UNSOUND")

HERE = Path(__file__).resolve().parent.parent
ROOT = HERE.parent.parent
EXCLUDED = HERE / "excluded.tsv"
EXPECTED_FAILURES = HERE / "expected_failures.txt"
UNSOUND = HERE / "unsound.tsv"
