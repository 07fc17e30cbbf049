"""Test helpers for code built on graphruntime.

``graphruntime.testing.conformance`` holds the contract tests every checkpoint
saver must pass, ``graphruntime.testing.store_conformance`` those of every store;
they import pytest, so they are not imported from here.
"""

from __future__ import annotations
