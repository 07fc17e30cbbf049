"""Test helpers for code built on graphruntime.

``graphruntime.testing.conformance`` holds the contract tests every checkpoint
saver must pass; it imports pytest, so it is not imported from here.
"""

from __future__ import annotations
