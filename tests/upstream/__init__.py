"""LangGraph's public-API tests, vendored to measure graphruntime's parity (see README.md)."""
