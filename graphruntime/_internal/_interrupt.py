"""The ``Interrupt`` value type and how interrupt ids are made (below ``types`` and ``errors``)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from xxhash import xxh3_128_hexdigest

from graphruntime import warnings as deprecation
from graphruntime._internal._constants import NS_SEP

_DEFAULT_INTERRUPT_ID = "placeholder-id"


def interrupt_id(ns: str, answered: int) -> str:
    """Id of a task's next interrupt: keyed by the task namespace and answers so far."""
    return xxh3_128_hexdigest((f"{ns}{NS_SEP}{answered}" if answered else ns).encode())


@dataclass(init=False, slots=True)
class Interrupt:
    """A pause requested by a node: the value shown to the caller and its id."""

    value: Any
    id: str
    response_schema: Any = None

    def __init__(
        self, value: Any, id: str = _DEFAULT_INTERRUPT_ID, *, response_schema: Any = None
    ) -> None:
        self.value = value
        self.id = id
        self.response_schema = response_schema

    @classmethod
    def from_ns(cls, value: Any, ns: str, *, response_schema: Any = None) -> Interrupt:
        return cls(value=value, id=interrupt_id(ns, 0), response_schema=response_schema)

    @property
    def interrupt_id(self) -> str:
        """Deprecated: use ``id``."""
        warnings.warn(
            "`interrupt_id` is deprecated. Use `id` instead.",
            deprecation.LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        return self.id
