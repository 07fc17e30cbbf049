"""Search filters and namespace patterns compiled to parameterized SQL for PostgresStore.

Only fixed text is composed: the fragments of ``sql/store_queries.sql``, named
placeholders and comparison operators from :data:`_OPERATORS`. Every value
(paths, JSON, labels) travels as a query parameter.
"""

from __future__ import annotations

import json
from typing import Any

from psycopg import sql

from checkpoint_pg import _store_queries as q
from graphruntime.store.base import FilterCondition, NamespacePattern

__all__ = ("filter_sql", "namespace_sql", "pattern_sql")

_OPERATORS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_FIXED = {"eq": q.FILTER_EQ, "ne": q.FILTER_NE, "object": q.FILTER_OBJECT}


def namespace_sql(namespace: tuple[str, ...], params: dict[str, Any]) -> sql.Composable:
    """``namespace`` and everything below it; ``()`` is everything."""
    if not namespace:
        return sql.SQL(q.WHERE_ALL)
    text = ".".join(namespace)
    # Under collation "C", the prefixes starting with "<ns>." are exactly those in
    # ["<ns>.", "<ns>/"): "/" is the character after ".".
    params.update(ns=text, ns_below=text + ".", ns_after=text + "/")
    return sql.SQL(q.WHERE_NAMESPACE)


def pattern_sql(pattern: NamespacePattern, params: dict[str, Any]) -> sql.Composable:
    """The namespaces matching ``pattern`` (wildcards included)."""
    parts: list[sql.Composable] = [namespace_sql(pattern.literal_head(), params)]
    if any(label is None for label in pattern.prefix):
        params["prefix_pattern"] = list(pattern.prefix)
        parts.append(sql.SQL(q.WHERE_PREFIX_PATTERN))
    if pattern.suffix:
        params["suffix_pattern"] = list(pattern.suffix)
        parts.append(sql.SQL(q.WHERE_SUFFIX_PATTERN))
    return sql.SQL("\n    AND ").join(parts)


def filter_sql(
    conditions: tuple[FilterCondition, ...], params: dict[str, Any]
) -> list[sql.Composable]:
    """One SQL condition per filter condition; their values are added to ``params``."""
    parts: list[sql.Composable] = []
    for i, condition in enumerate(conditions):
        path, value = f"f{i}_path", f"f{i}_value"
        params[path] = list(condition.path)
        if condition.op in _FIXED:
            template = _FIXED[condition.op]
            params[value] = json.dumps(condition.value)
            fmt: dict[str, sql.Composable] = {}
        else:
            is_number = not isinstance(condition.value, str)
            template = q.FILTER_NUMBER if is_number else q.FILTER_STRING
            params[value] = json.dumps(condition.value) if is_number else condition.value
            fmt = {"op": sql.SQL(_OPERATORS[condition.op])}
        parts.append(
            sql.SQL(template).format(
                path=sql.Placeholder(path), value=sql.Placeholder(value), **fmt
            )
        )
    return parts
