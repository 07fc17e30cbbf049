"""The ``Interrupt`` value type and how interrupt ids are made (below ``types`` and ``errors``)."""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from xxhash import xxh3_128_hexdigest

from graphruntime import warnings as deprecation
from graphruntime._internal._constants import NS_SEP
from graphruntime._internal._errors import InvalidArgumentTypeError

_DEFAULT_INTERRUPT_ID = "placeholder-id"

# fields LangGraph removed from Interrupt in 0.6; still accepted, ``ns`` gives the id
_LEGACY_FIELDS = frozenset({"ns", "resumable", "when"})


def interrupt_id(ns: str, answered: int) -> str:
    """Id of a task's next interrupt: keyed by the task namespace and answers so far."""
    return xxh3_128_hexdigest((f"{ns}{NS_SEP}{answered}" if answered else ns).encode())


@dataclass(init=False, slots=True)
class Interrupt:
    """A pause requested by a node: the value shown to the caller and its id.

    ``deadline`` and ``default`` are graphruntime's: set only by
    ``interrupt(value, deadline=..., default=...)``, they are neither shown in the repr
    nor compared, so an Interrupt without them is exactly LangGraph's.
    """

    value: Any
    id: str
    response_schema: Any = None
    deadline: datetime | None = field(default=None, repr=False, compare=False)
    """When the wait ends (UTC); the workers then resume with ``default``."""
    default: Any = field(default=None, repr=False, compare=False)
    """The resume value a deadline applies."""

    def __init__(
        self,
        value: Any,
        id: str = _DEFAULT_INTERRUPT_ID,
        *,
        response_schema: Any = None,
        deadline: datetime | None = None,
        default: Any = None,
        **legacy: Any,
    ) -> None:
        unknown = set(legacy) - _LEGACY_FIELDS
        if unknown:
            raise InvalidArgumentTypeError(
                f"Interrupt() got unexpected keyword arguments {sorted(unknown)}: it takes "
                "value, id, response_schema, deadline and default"
            )
        ns = legacy.get("ns")
        if id == _DEFAULT_INTERRUPT_ID and isinstance(ns, (list, tuple)):
            # a pre-1.0 interrupt (saved, or built by old code) was identified by its
            # task namespace: the same id the namespace gives today
            id = xxh3_128_hexdigest("|".join(ns).encode())
        self.value = value
        self.id = id
        self.response_schema = response_schema
        self.deadline = deadline
        self.default = default

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


def interrupt_dict(intr: Interrupt) -> dict[str, Any]:
    """An interrupt as the ``debug`` / ``tasks`` streams show it: LangGraph's fields, and
    graphruntime's deadline fields only when the interrupt has a deadline."""
    out = asdict(intr)
    if intr.deadline is None:
        del out["deadline"], out["default"]
    return out
