"""Differential tests: the same graphs run on langgraph (the oracle) and on graphruntime."""
