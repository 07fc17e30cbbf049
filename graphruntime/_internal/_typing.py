"""Sentinels shared across the runtime."""

from __future__ import annotations

from typing import Any, Final


class _Missing:
    """Marks 'no value' where ``None`` is a legitimate value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final[Any] = _Missing()
