"""Checks every store applies before it touches its data, and the JSON form of values.

Both stores run the same checks, so a call refused by one is refused by the other.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from graphruntime.store._errors import InvalidNamespaceError, InvalidStoreRequestError
from graphruntime.store._types import (
    GetOp,
    ListNamespacesOp,
    NotProvided,
    Op,
    PutOp,
    SearchOp,
    TTLConfig,
)

__all__ = (
    "check_ttl_config",
    "encode_value",
    "ensure_refresh",
    "ensure_ttl",
    "validate_namespace",
    "validate_namespace_labels",
    "validate_op",
)

# An escaped NUL (\u0000) preceded by an even number of backslashes: Postgres' jsonb
# refuses it, so no store accepts it.
_ESCAPED_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")
_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def validate_namespace_labels(namespace: tuple[str, ...]) -> None:
    """Every label is a non-empty string without ``.`` or NUL (an empty tuple passes)."""
    if not isinstance(namespace, tuple):
        raise InvalidNamespaceError(
            f"A namespace is a tuple of strings, got {type(namespace).__name__}: {namespace!r}"
        )
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {namespace}: labels must be strings, "
                f"not {type(label).__name__}"
            )
        if not label:
            raise InvalidNamespaceError(f"Namespace labels cannot be empty strings: {namespace}")
        if "." in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {namespace}: labels cannot contain "
                "periods ('.'); use one label per level instead"
            )
        if "\x00" in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {namespace}: labels cannot contain NUL"
            )


def validate_namespace(namespace: tuple[str, ...]) -> None:
    """A namespace an item may be stored in: non-empty, valid labels, not under ``langgraph``."""
    if isinstance(namespace, tuple) and not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty")
    validate_namespace_labels(namespace)
    if namespace[0] == "langgraph":
        raise InvalidNamespaceError(
            f'Root label for namespace cannot be "langgraph" (reserved). Got: {namespace}'
        )


def _validate_key(key: object) -> None:
    if not isinstance(key, str):
        raise InvalidStoreRequestError(f"Item keys are strings, got {type(key).__name__}")
    if "\x00" in key:
        raise InvalidStoreRequestError(f"Item keys cannot contain NUL: {key!r}")


def _validate_ttl(ttl: float | None) -> None:
    if ttl is None:
        return
    if isinstance(ttl, bool) or not isinstance(ttl, int | float):
        raise InvalidStoreRequestError(f"ttl is a number of minutes or None, got {ttl!r}")
    if not math.isfinite(ttl) or ttl <= 0:
        raise InvalidStoreRequestError(
            f"ttl must be a positive number of minutes (None: never expires), got {ttl!r}"
        )


def _validate_page(limit: int, offset: int) -> None:
    for name, bound in (("limit", limit), ("offset", offset)):
        if isinstance(bound, bool) or not isinstance(bound, int) or bound < 0:
            raise InvalidStoreRequestError(f"{name} must be an int >= 0, got {bound!r}")


def validate_op(op: Op) -> None:
    """Refuse an op no store may run (also those handed straight to ``batch``)."""
    if isinstance(op, GetOp):
        validate_namespace_labels(op.namespace)
        _validate_key(op.key)
    elif isinstance(op, PutOp):
        if op.value is None:
            validate_namespace_labels(op.namespace)
        else:
            validate_namespace(op.namespace)
            if not isinstance(op.value, Mapping):
                raise InvalidStoreRequestError(
                    f"Store values are JSON objects (a dict), got {type(op.value).__name__}"
                )
        _validate_key(op.key)
        _validate_ttl(op.ttl)
        if (op.index is not None and op.index is not False) and (
            not isinstance(op.index, list) or not all(isinstance(p, str) for p in op.index)
        ):
            raise InvalidStoreRequestError(
                f"index is None, False or a list of field paths, got {op.index!r}"
            )
    elif isinstance(op, SearchOp):
        validate_namespace_labels(op.namespace_prefix)
        _validate_page(op.limit, op.offset)
        if op.filter is not None and not isinstance(op.filter, dict):
            raise InvalidStoreRequestError(f"filter is a dict, got {type(op.filter).__name__}")
        if op.query is not None and not isinstance(op.query, str):
            raise InvalidStoreRequestError(f"query is a string, got {type(op.query).__name__}")
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            if condition.match_type not in ("prefix", "suffix"):
                raise InvalidStoreRequestError(
                    f"match_type is 'prefix' or 'suffix', got {condition.match_type!r}"
                )
            validate_namespace_labels(condition.path)
        _validate_page(op.limit, op.offset)
        if op.max_depth is not None and (
            isinstance(op.max_depth, bool) or not isinstance(op.max_depth, int) or op.max_depth < 1
        ):
            raise InvalidStoreRequestError(f"max_depth is an int >= 1, got {op.max_depth!r}")
    else:
        raise InvalidStoreRequestError(
            f"Unknown store operation {type(op).__name__}: expected GetOp, PutOp, SearchOp "
            "or ListNamespacesOp"
        )


def encode_value(value: Mapping[str, Any]) -> str:
    """The value as compact JSON text, as every store keeps it.

    Raises:
        InvalidStoreRequestError: the value is not JSON (a datetime, a set, NaN...),
            or holds a NUL character or a lone surrogate (Postgres refuses both).
    """
    try:
        text = _encoder.encode(dict(value))
    except (TypeError, ValueError) as exc:
        raise InvalidStoreRequestError(
            f"Store values must be JSON objects (dict, list, str, int, float, bool, None): {exc}"
        ) from exc
    if "\\u0000" in text and _ESCAPED_NUL.search(text):
        raise InvalidStoreRequestError("Store values cannot contain NUL characters ('\\x00')")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidStoreRequestError(
            "Store values cannot contain lone surrogates (not valid Unicode text)"
        ) from exc
    return text


def ensure_refresh(ttl_config: TTLConfig | None, refresh_ttl: bool | None) -> bool:
    """The read's ``refresh_ttl``: the caller's, else the store's ``refresh_on_read``."""
    if refresh_ttl is not None:
        return refresh_ttl
    if ttl_config is not None:
        return ttl_config.get("refresh_on_read", True)
    return True


def ensure_ttl(ttl_config: TTLConfig | None, ttl: float | NotProvided | None) -> float | None:
    """The put's TTL: the caller's (``None`` = never), else the store's ``default_ttl``."""
    if isinstance(ttl, NotProvided):
        return ttl_config.get("default_ttl") if ttl_config else None
    return ttl


_TTL_KEYS = frozenset(TTLConfig.__annotations__)


def check_ttl_config(config: TTLConfig | None) -> TTLConfig | None:
    """A copy of ``config`` once its keys and numbers are known to be valid."""
    if config is None:
        return None
    if not isinstance(config, Mapping):
        raise InvalidStoreRequestError(f"ttl is a TTLConfig dict, got {type(config).__name__}")
    unknown = set(config) - _TTL_KEYS
    if unknown:
        raise InvalidStoreRequestError(
            f"Unknown TTLConfig keys {sorted(unknown)}: expected some of {sorted(_TTL_KEYS)}"
        )
    _validate_ttl(config.get("default_ttl"))
    interval = config.get("sweep_interval_minutes")
    if interval is not None and (
        isinstance(interval, bool) or not isinstance(interval, int | float) or interval <= 0
    ):
        raise InvalidStoreRequestError(
            f"sweep_interval_minutes must be a positive number, got {interval!r}"
        )
    for flag in ("refresh_on_read", "omit_expired"):
        if flag in config and not isinstance(config[flag], bool):
            raise InvalidStoreRequestError(f"TTLConfig {flag!r} is a bool, got {config[flag]!r}")
    return TTLConfig(**config)
