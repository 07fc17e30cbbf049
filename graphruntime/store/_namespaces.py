"""Namespace patterns of ``list_namespaces``, merged into one prefix and one suffix.

Any number of :class:`MatchCondition` collapse into at most one prefix pattern
and one suffix pattern (a wildcard is ``None``), which a store tests label by
label. Conditions that contradict each other match nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from graphruntime.store._types import ListNamespacesOp, MatchCondition

__all__ = ("NamespacePattern", "list_matching_namespaces", "namespace_pattern")

Pattern = tuple[str | None, ...]


class NamespacePattern(NamedTuple):
    """Labels a namespace must start and end with (``None``: any label)."""

    prefix: Pattern
    suffix: Pattern

    def matches(self, namespace: tuple[str, ...]) -> bool:
        """Whether ``namespace`` starts with :attr:`prefix` and ends with :attr:`suffix`."""
        n = len(namespace)
        if n < len(self.prefix) or n < len(self.suffix):
            return False
        for label, want in zip(namespace, self.prefix, strict=False):
            if want is not None and label != want:
                return False
        tail = namespace[n - len(self.suffix) :]
        pairs = zip(tail, self.suffix, strict=True)
        return all(want is None or label == want for label, want in pairs)

    def literal_head(self) -> tuple[str, ...]:
        """The prefix's labels before its first wildcard (what an index can range over)."""
        head: list[str] = []
        for label in self.prefix:
            if label is None:
                break
            head.append(label)
        return tuple(head)


def _merge(a: Pattern, b: Pattern) -> Pattern | None:
    merged: list[str | None] = []
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x is not None and y is not None and x != y:
            return None
        merged.append(x if x is not None else y)
    return tuple(merged)


def namespace_pattern(conditions: Sequence[MatchCondition] | None) -> NamespacePattern | None:
    """The one pattern equivalent to all ``conditions``; ``None`` if none can match."""
    prefix: Pattern = ()
    suffix: Pattern = ()
    for condition in conditions or ():
        path: Pattern = tuple(None if label == "*" else label for label in condition.path)
        if condition.match_type == "prefix":
            merged = _merge(prefix, path)
            if merged is None:
                return None
            prefix = merged
        else:
            merged = _merge(suffix[::-1], path[::-1])
            if merged is None:
                return None
            suffix = merged[::-1]
    return NamespacePattern(prefix, suffix)


def list_matching_namespaces(
    namespaces: Iterable[tuple[str, ...]], op: ListNamespacesOp
) -> list[tuple[str, ...]]:
    """``op`` over an in-memory collection of namespaces: match, truncate, sort, page."""
    pattern = namespace_pattern(op.match_conditions)
    if pattern is None:
        return []
    found = {ns for ns in namespaces if pattern.matches(ns)}
    if op.max_depth is not None:
        found = {ns[: op.max_depth] for ns in found}
    return sorted(found)[op.offset : op.offset + op.limit]
