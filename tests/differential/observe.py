"""Turn what a runtime returns into plain data that compares equal across runtimes.

Ids (checkpoint, task, interrupt and run ids) are random, so they are replaced by role
tokens ``"<id0>"``, ``"<id1>"`` … in order of first appearance within one scenario's
transcript: equal ids stay equal, distinct ids stay distinct, values are forgotten.
Runtime-specific classes are reduced to their class name, so
``langgraph.errors.GraphRecursionError`` and ``graphruntime.errors.GraphRecursionError``
both become ``"GraphRecursionError"``.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = ("ErrorObs", "IdRoles", "Recorder", "first_line", "normalize", "same")

# uuid-shaped ids (checkpoint ids are uuid6, task ids xxh3 formatted as a uuid, run ids
# uuid4) and bare 32-hex ids (interrupt ids), also when embedded in a namespace string
# such as "sub:<task id>|inner:<task id>" or in an error message.
_ID_RE = re.compile(
    r"(?<![0-9a-fA-F])"
    r"(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})"
    r"(?![0-9a-fA-F])"
)


def first_line(exc: BaseException) -> str:
    """The first line of ``str(exc)`` (messages often continue with a docs link)."""
    text = str(exc)
    return text.splitlines()[0] if text else ""


class IdRoles:
    """Maps each distinct id to a stable role token, by order of first appearance."""

    def __init__(self) -> None:
        self._roles: dict[str, str] = {}

    def token(self, raw: str) -> str:
        if raw not in self._roles:
            self._roles[raw] = f"<id{len(self._roles)}>"
        return self._roles[raw]

    def sub(self, text: str) -> str:
        return _ID_RE.sub(lambda m: self.token(m.group(0)), text)


@dataclasses.dataclass(frozen=True)
class ErrorObs:
    """An exception as observed: class name, the names in its MRO, first message line.

    graphruntime raises subclasses of the built-in types LangGraph raises (e.g.
    ``GraphValidationError(GraphRuntimeError, ValueError)`` where LangGraph raises
    ``ValueError``), so :func:`same` accepts a candidate whose MRO contains the oracle's
    built-in type; for non-built-in oracle types the class names must be equal.
    """

    type: str
    bases: tuple[str, ...]
    builtin: bool
    message: str

    @classmethod
    def of(cls, exc: BaseException, roles: IdRoles) -> ErrorObs:
        kind = type(exc)
        return cls(
            type=kind.__name__,
            bases=tuple(k.__name__ for k in kind.__mro__),
            builtin=kind.__module__ == "builtins",
            message=roles.sub(first_line(exc)),
        )

    def __repr__(self) -> str:
        return f"{self.type}({self.message!r})"


def _sort_key(key: Any) -> str:
    # Traverse dicts in a runtime-independent order so role tokens are assigned in the
    # same order on both sides; id-like keys compare equal here and keep insertion order.
    return _ID_RE.sub("<id>", str(key))


def _config(cfg: Any, roles: IdRoles) -> Any:
    """A checkpoint config: only the identifying keys, ids as roles."""
    if not isinstance(cfg, Mapping):
        return normalize(cfg, roles)
    conf = cfg.get("configurable", {})
    keep = ("thread_id", "checkpoint_ns", "checkpoint_id")
    return {"configurable": {k: normalize(conf[k], roles) for k in keep if k in conf}}


def _snapshot(snap: Any, roles: IdRoles) -> dict[str, Any]:
    # Field order fixes the order in which ids get their roles.
    out: dict[str, Any] = {"type": "StateSnapshot"}
    out["config"] = _config(snap.config, roles)
    out["parent_config"] = _config(snap.parent_config, roles) if snap.parent_config else None
    out["values"] = normalize(snap.values, roles)
    out["next"] = normalize(snap.next, roles)
    out["tasks"] = type(snap.tasks)(_task(t, roles) for t in snap.tasks)
    out["interrupts"] = normalize(snap.interrupts, roles)
    out["metadata"] = normalize(snap.metadata, roles)
    return out


def _task(task: Any, roles: IdRoles) -> dict[str, Any]:
    state = task.state
    if state is not None and type(state).__name__ == "StateSnapshot":
        norm_state: Any = _snapshot(state, roles)
    elif state is not None:
        norm_state = _config(state, roles)
    else:
        norm_state = None
    return {
        "type": "PregelTask",
        "id": roles.sub(task.id),
        "name": task.name,
        "path": normalize(task.path, roles),
        "error": normalize(task.error, roles),
        "interrupts": normalize(task.interrupts, roles),
        "state": norm_state,
        "result": normalize(task.result, roles),
    }


def normalize(value: Any, roles: IdRoles) -> Any:
    """Plain, runtime-independent, comparable data for ``value``."""
    if value is None or isinstance(value, (bool, int, float, bytes)):
        return value
    if isinstance(value, str):
        return roles.sub(value)
    cls = type(value).__name__
    if isinstance(value, BaseException):
        return ErrorObs.of(value, roles)
    if cls == "Interrupt":
        return ("Interrupt", normalize(value.value, roles), roles.sub(str(value.id)))
    if cls == "Send":
        return ("Send", value.node, normalize(value.arg, roles))
    if cls == "StateSnapshot":
        return _snapshot(value, roles)
    if cls == "PregelTask":
        return _task(value, roles)
    if cls == "Overwrite":
        return ("Overwrite", normalize(value.value, roles))
    if cls == "Command":
        fields = ("graph", "update", "resume", "goto")
        return ("Command", {f: normalize(getattr(value, f), roles) for f in fields})
    if isinstance(value, Mapping):
        items = sorted(value.items(), key=lambda kv: _sort_key(kv[0]))
        out = {}
        for k, v in items:
            if k == "__interrupt__" and isinstance(v, (list, tuple)):
                # interrupts of one run are listed in task completion order: not deterministic
                v = type(v)(order_free(v))
            out[normalize(k, roles)] = normalize(v, roles)
        return out
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return (cls, {f: normalize(getattr(value, f), roles) for f in value._fields})
    if isinstance(value, tuple):
        return tuple(normalize(v, roles) for v in value)
    if isinstance(value, list):
        return [normalize(v, roles) for v in value]
    if isinstance(value, (set, frozenset)):
        return ("set", sorted((normalize(v, roles) for v in value), key=repr))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        attrs = {
            f.name: normalize(getattr(value, f.name), roles) for f in dataclasses.fields(value)
        }
        return (cls, attrs)
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):  # pydantic v2 model
        return (cls, {k: normalize(getattr(value, k), roles) for k in type(value).model_fields})
    return ("repr", roles.sub(repr(value)))


def _masked_repr(value: Any) -> str:
    return _ID_RE.sub("<id>", repr(value))


def order_free(items: Any) -> list[Any]:
    """``items`` in a canonical order that ignores ids (sorted by their id-masked repr).

    Sort *before* normalizing, so ids get their roles in a runtime-independent order.
    """
    return sorted(items, key=_masked_repr)


class Recorder:
    """Collects one scenario's transcript: labelled, normalized observations."""

    def __init__(self) -> None:
        self.roles = IdRoles()
        self.entries: list[tuple[str, Any]] = []
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._threads = 0

    def record(self, label: str, value: Any) -> None:
        """Record ``value`` (normalized now, so ids get roles in transcript order)."""
        self.entries.append((label, normalize(value, self.roles)))

    def record_unordered(self, label: str, values: Any) -> None:
        """Record a collection whose order is not guaranteed (e.g. parallel stream chunks)."""
        normalized = [normalize(v, self.roles) for v in order_free(values)]
        self.entries.append((label, ("unordered", normalized)))

    def count(self, name: str) -> None:
        """Count one execution of a node body (called first thing in the node)."""
        with self._lock:  # sync nodes of one step run on a thread pool
            self.counts[name] += 1

    def record_counts(self, label: str = "counts") -> None:
        """Record how many times each node body ran so far."""
        self.entries.append((label, dict(sorted(self.counts.items()))))

    def thread(self, **configurable: Any) -> dict[str, Any]:
        """A config with a fresh thread id (deterministic per scenario)."""
        self._threads += 1
        return {"configurable": {"thread_id": f"thread-{self._threads}", **configurable}}

    @contextmanager
    def expect_error(self, label: str) -> Iterator[None]:
        """Run the block; record the exception's type and first line, or that none was raised."""
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - the exception *is* the observation
            self.entries.append((label, ("raised", ErrorObs.of(exc, self.roles))))
        else:
            self.entries.append((label, ("no error",)))

    def finish(self) -> list[tuple[str, Any]]:
        """The complete transcript, with final execution counts appended."""
        return [*self.entries, ("final counts", dict(sorted(self.counts.items())))]


_ERROR_TEXT = re.compile(r"^(\w+)(\(.*\))$", re.DOTALL)


def _same_error_text(oracle: str, candidate: str) -> bool:
    """An error stored as its repr (a task's ``error`` in ``get_state``): the same rule as
    :class:`ErrorObs`, a graphruntime error that derives from the oracle's built-in type."""
    import builtins

    from graphruntime import errors as tree

    ours, theirs = _ERROR_TEXT.match(candidate), _ERROR_TEXT.match(oracle)
    if ours is None or theirs is None or ours.group(2) != theirs.group(2):
        return False
    builtin = getattr(builtins, theirs.group(1), None)
    cls = getattr(tree, ours.group(1), None)
    return (
        isinstance(builtin, type)
        and isinstance(cls, type)
        and issubclass(cls, tree.GraphRuntimeError)
        and issubclass(cls, builtin)
    )


def same(oracle: Any, candidate: Any) -> bool:
    """Structural equality, except that errors match as described in :class:`ErrorObs`."""
    if isinstance(oracle, ErrorObs) and isinstance(candidate, ErrorObs):
        if oracle.message != candidate.message:
            return False
        return oracle.type == candidate.type or (oracle.builtin and oracle.type in candidate.bases)
    if type(oracle) is not type(candidate):
        return False
    if isinstance(oracle, str) and oracle != candidate:
        return _same_error_text(oracle, candidate)
    if isinstance(oracle, dict):
        return oracle.keys() == candidate.keys() and all(
            same(v, candidate[k]) for k, v in oracle.items()
        )
    if isinstance(oracle, (list, tuple)):
        return len(oracle) == len(candidate) and all(
            same(o, c) for o, c in zip(oracle, candidate, strict=True)
        )
    return bool(oracle == candidate)
