"""Internals shared by the runtime's subpackages; not public API."""
