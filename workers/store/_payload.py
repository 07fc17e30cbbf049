"""What a run carries: its payload, typed and versioned.

Built by the client, bulk resumes, deadlines and cancels, digested with the run
(:meth:`~workers.store.NewRun.of`); stored through the serde as a plain
dict. Version 1 is the dict every run was stored as before the payload had a type, so
its stored form has no ``"v"`` key and its digest is what it always was (a retried
request with the same idempotency key still matches); a later version writes its
``"v"``. Rows of either shape decode (:meth:`RunPayload.from_stored`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from graphruntime.errors import CheckpointError
from graphruntime.pregel.driver import is_resume_map
from graphruntime.types import Command

__all__ = ("PAYLOAD_VERSION", "CancelRequest", "RunKind", "RunPayload")

RunKind = Literal["input", "command", "resume", "cancel"]

PAYLOAD_VERSION = 1
"""The newest payload version this code reads and writes."""


@dataclass(frozen=True)
class CancelRequest:
    """What a cancel run was asked: why, by whom, and how long it waits for running nodes."""

    reason: str
    actor: str | None = None
    wait: float = 10.0


@dataclass(frozen=True)
class RunPayload:
    """A run's request: its input and the options of its loop."""

    input: Any = None
    """The graph's input, or a :class:`~graphruntime.types.Command`."""
    config: Mapping[str, Any] = field(default_factory=dict)
    """The JSON-safe part of the caller's config (configurable, metadata, tags...)."""
    stream_modes: tuple[str, ...] = ()
    """The modes a streaming client reads; none: the run stores no events."""
    subgraphs: bool = False
    interrupt_before: Sequence[str] | str | None = None
    interrupt_after: Sequence[str] | str | None = None
    context: Any = None
    """The run's ``Runtime.context``."""
    durability: Literal["sync"] | None = None
    """``"sync"``: each step's checkpoint stored before the next; None: "async"."""
    cancel: CancelRequest | None = None
    """A cancel run's request (kind ``cancel``)."""
    v: Literal[1] = 1

    @property
    def kind(self) -> RunKind:
        if self.cancel is not None:
            return "cancel"
        if isinstance(self.input, Command):
            return "resume" if self.input.resume is not None else "command"
        return "input"

    def stored(self) -> dict[str, Any]:
        """The dict the serde stores (version 1: the shape runs were always stored in)."""
        out: dict[str, Any] = {
            "input": self.input,
            "config": dict(self.config),
            "stream_modes": list(self.stream_modes),
            "subgraphs": self.subgraphs,
            "interrupt_before": self.interrupt_before,
            "interrupt_after": self.interrupt_after,
        }
        if self.context is not None:
            out["context"] = self.context
        if self.durability is not None:
            out["durability"] = self.durability
        if self.cancel is not None:
            cancel = self.cancel
            out["cancel"] = {"reason": cancel.reason, "actor": cancel.actor, "wait": cancel.wait}
        return out

    @classmethod
    def from_stored(cls, data: Any) -> RunPayload:
        """The payload of a stored dict; keys a version-1 reader does not know are left
        out, as the untyped readers of the first rows did."""
        if not isinstance(data, dict):
            raise CheckpointError(f"a run payload is a dict, this one is {type(data).__name__}")
        version = data.get("v", 1)
        if version != PAYLOAD_VERSION:
            raise CheckpointError(
                f"the run payload is version {version!r}; this worker reads version "
                f"{PAYLOAD_VERSION}: upgrade it"
            )
        cancel = data.get("cancel")
        durability = data.get("durability")
        return cls(
            input=data.get("input"),
            config=data.get("config") or {},
            stream_modes=tuple(data.get("stream_modes") or ()),
            subgraphs=bool(data.get("subgraphs")),
            interrupt_before=data.get("interrupt_before"),
            interrupt_after=data.get("interrupt_after"),
            context=data.get("context"),
            durability="sync" if durability == "sync" else None,
            cancel=(
                CancelRequest(
                    str(cancel.get("reason") or ""),
                    cancel.get("actor"),
                    float(cancel.get("wait", CancelRequest.wait)),
                )
                if isinstance(cancel, dict)
                else None
            ),
        )

    @property
    def answers(self) -> list[str] | None:
        """The interrupt ids a resume map answers, sorted (None: not a resume map)."""
        resume = self.input.resume if isinstance(self.input, Command) else None
        if self.kind != "resume" or not is_resume_map(resume):
            return None
        return sorted(resume or ())
