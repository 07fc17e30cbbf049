"""The harness that runs the vendored LangGraph tests against graphruntime or LangGraph."""
