"""On-demand benchmarks (not run in CI). See bench/RESULTS.md for recorded figures."""

from __future__ import annotations
