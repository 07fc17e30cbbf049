"""Runnable examples: ``python -m examples.demo``."""
