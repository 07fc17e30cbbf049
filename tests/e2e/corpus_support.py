"""What the worker side and the test side of the distributed corpus run share.

The differential corpus (``tests/differential``) builds graphs whose nodes call
``rec.count`` / ``rec.record`` and read small dicts captured from the scenario
(``broken = {"on": True}``, retry ``attempts``). When such a node runs in a
Celery worker, both must reach the test process:

* the **ledger** (table ``e2e_ledger``): every ``count``/``record`` a node makes on
  a worker is a row keyed by the thread the node runs on (``get_config()``), with
  the worker's pid and the node's superstep; the test side merges the rows into
  the transcript when the remote call returns;
* **shared cells** (table ``e2e_cells``): a plain-JSON dict captured by a node's
  closure is replaced, on the worker, by :class:`SharedDict`, which reads and
  writes the test side's dict (pushed before every remote call) in Postgres.

Thread ids carry a per-run tag (``thread-<n>-<32 hex>``): rows of one scenario run
never mix with another's, and the tag normalizes to an id role in transcripts.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from types import CellType, FunctionType
from typing import Any

import psycopg

from graphruntime.checkpoint import JsonSerializer
from tests.differential.observe import Recorder

__all__ = (
    "LEDGER_DDL",
    "GraphSession",
    "SharedDict",
    "TaggedRecorder",
    "configure_db",
    "db",
    "graph_signature",
    "ledger_active",
    "new_tag",
    "share_cells",
    "tag_of",
    "tracking_state_graph",
)

LEDGER_DDL = """
CREATE TABLE IF NOT EXISTS e2e_ledger (
    seq bigserial PRIMARY KEY,
    scenario text NOT NULL,
    thread_id text NOT NULL,
    kind text NOT NULL,
    label text NOT NULL,
    payload_type text,
    payload bytea,
    pid integer NOT NULL,
    node text,
    step integer,
    checkpoint_ns text
);
CREATE INDEX IF NOT EXISTS e2e_ledger_thread ON e2e_ledger (thread_id);
CREATE TABLE IF NOT EXISTS e2e_cells (
    tag text NOT NULL,
    key text NOT NULL,
    value jsonb NOT NULL,
    PRIMARY KEY (tag, key)
);
"""

SERDE = JsonSerializer(allowed_modules=("tests.differential", "tests.e2e"))


def new_tag() -> str:
    return uuid.uuid4().hex


def tag_of(thread_id: str) -> str:
    """The run tag of a thread id ``<prefix>-<n>-<tag>``."""
    return thread_id.rsplit("-", 1)[-1]


class TaggedRecorder(Recorder):
    """A Recorder whose thread ids are unique per scenario run (``thread-<n>-<tag>``)."""

    def __init__(self, tag: str | None = None) -> None:
        super().__init__()
        self.tag = tag or new_tag()
        self.thread_ids: list[str] = []

    def thread(self, **configurable: Any) -> dict[str, Any]:
        self._threads += 1
        thread_id = f"thread-{self._threads}-{self.tag}"
        self.thread_ids.append(thread_id)
        return {"configurable": {"thread_id": thread_id, **configurable}}


# --- the database both sides share ---------------------------------------------------------

_db_url: str | None = None
_db_lock = threading.Lock()
_db_conn: tuple[int, psycopg.Connection[Any]] | None = None


def configure_db(url: str) -> None:
    """Point this process's ledger and shared cells at ``url`` (the test process does)."""
    global _db_url
    _db_url = url


def ledger_active() -> bool:
    """Workers write the ledger when ``E2E_LEDGER`` is set; the test process once configured."""
    return _db_url is not None or bool(os.environ.get("E2E_LEDGER"))


@dataclass
class _Db:
    conn: psycopg.Connection[Any]

    def execute(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        cur = self.conn.execute(sql, params)
        return cur.fetchall() if cur.description else []


class _DbContext:
    def __enter__(self) -> _Db:
        global _db_conn
        _db_lock.acquire()
        try:
            if _db_conn is None or _db_conn[0] != os.getpid() or _db_conn[1].closed:
                url = _db_url or os.environ.get("E2E_LEDGER_URL") or os.environ["DATABASE_URL"]
                _db_conn = (os.getpid(), psycopg.connect(url, autocommit=True))
            return _Db(_db_conn[1])
        except BaseException:
            _db_lock.release()
            raise

    def __exit__(self, *exc: object) -> None:
        _db_lock.release()


def db() -> _DbContext:
    """``with db() as d: d.execute(...)``: this process's autocommit connection, locked."""
    return _DbContext()


# --- closure cells ----------------------------------------------------------------------------


def _plain_json(value: Any) -> bool:
    try:
        return bool(json.loads(json.dumps(value)) == value)
    except (TypeError, ValueError):
        return False


@dataclass
class GraphSession:
    """One scenario run's graphs and the mutable closure cells its nodes share."""

    scenario: str
    graphs: list[Any] = field(default_factory=list)
    cells: dict[str, CellType] = field(default_factory=dict)
    initial: dict[str, str] = field(default_factory=dict)
    _seen: set[int] = field(default_factory=set)

    def scan(self, *objs: Any) -> None:
        """Find dict cells in the closures of ``objs`` (functions), in discovery order.

        Keys are ``<qualname>.<freevar>`` of the first function that captures the cell;
        both sides add the same functions in the same order, so keys match.
        """
        for obj in objs:
            self._scan(obj, set())

    def _scan(self, obj: Any, visiting: set[int]) -> None:
        if not isinstance(obj, FunctionType) or id(obj) in visiting:
            return
        visiting.add(id(obj))
        for name, cell in zip(obj.__code__.co_freevars, obj.__closure__ or (), strict=True):
            try:
                contents = cell.cell_contents
            except ValueError:  # not assigned yet
                continue
            if isinstance(contents, FunctionType):
                self._scan(contents, visiting)
            elif (
                isinstance(contents, dict | SharedDict)
                and id(cell) not in self._seen
                and (isinstance(contents, SharedDict) or _plain_json(contents))
            ):
                self._seen.add(id(cell))
                key = f"{obj.__qualname__}.{name}"
                n = 1
                while key in self.cells:
                    n += 1
                    key = f"{obj.__qualname__}.{name}#{n}"
                self.cells[key] = cell
                if not isinstance(contents, SharedDict):
                    self.initial[key] = json.dumps(contents, sort_keys=True)


def share_cells(session: GraphSession) -> None:
    """Worker side: replace each dict the capture run mutated by a :class:`SharedDict`.

    Dicts that stayed as they were (e.g. an interrupt's question) are constants and
    stay plain: a node may hand them on as values.
    """
    for key, cell in session.cells.items():
        contents = cell.cell_contents
        if isinstance(contents, SharedDict):
            continue
        if json.dumps(contents, sort_keys=True) != session.initial.get(key):
            cell.cell_contents = SharedDict(key)


def _current_thread_id() -> str:
    from graphruntime.config import get_config

    try:
        return str(get_config()["configurable"]["thread_id"])
    except RuntimeError as exc:
        raise RuntimeError(
            "a corpus node touched the ledger or a shared cell outside a graph run"
        ) from exc


class SharedDict(MutableMapping[str, Any]):
    """A closure dict whose contents live in ``e2e_cells`` under the running thread's tag."""

    def __init__(self, key: str) -> None:
        self.key = key

    def _load(self) -> dict[str, Any]:
        tag = tag_of(_current_thread_id())
        with db() as d:
            rows = d.execute(
                "SELECT value FROM e2e_cells WHERE tag = %s AND key = %s", (tag, self.key)
            )
        if not rows:
            raise KeyError(f"shared cell {self.key!r} was not pushed for run {tag}")
        value: dict[str, Any] = rows[0][0]
        return value

    def _store(self, value: dict[str, Any]) -> None:
        tag = tag_of(_current_thread_id())
        with db() as d:
            d.execute(
                "INSERT INTO e2e_cells (tag, key, value) VALUES (%s, %s, %s) "
                "ON CONFLICT (tag, key) DO UPDATE SET value = EXCLUDED.value",
                (tag, self.key, json.dumps(value)),
            )

    def __getitem__(self, k: str) -> Any:
        return self._load()[k]

    def __setitem__(self, k: str, v: Any) -> None:
        value = self._load()
        value[k] = v
        self._store(value)

    def __delitem__(self, k: str) -> None:
        value = self._load()
        del value[k]
        self._store(value)

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def __repr__(self) -> str:
        return f"SharedDict({self.key!r})"


def push_cells(tag: str, cells: dict[str, CellType]) -> None:
    """Test side: publish the current contents of the run's dict cells."""
    if not cells:
        return
    with db() as d:
        for key, cell in cells.items():
            d.execute(
                "INSERT INTO e2e_cells (tag, key, value) VALUES (%s, %s, %s) "
                "ON CONFLICT (tag, key) DO UPDATE SET value = EXCLUDED.value",
                (tag, key, json.dumps(cell.cell_contents)),
            )


def pull_cells(tag: str, cells: dict[str, CellType]) -> None:
    """Test side: take back what nodes on the workers wrote into the cells."""
    if not cells:
        return
    with db() as d:
        rows = d.execute("SELECT key, value FROM e2e_cells WHERE tag = %s", (tag,))
    for key, value in rows:
        target = cells.get(key)
        if target is not None and isinstance(target.cell_contents, dict):
            target.cell_contents.clear()
            target.cell_contents.update(value)


# --- builders that report what they are given --------------------------------------------


def tracking_state_graph(
    base: type[Any],
    session: GraphSession,
    on_compile: Callable[[Any, dict[str, Any]], Any],
    unwrap: Callable[[Any], Any] = lambda x: x,
) -> type[Any]:
    """A ``StateGraph`` subclass that scans node functions and hands compiled graphs over."""

    class TrackingStateGraph(base):  # type: ignore[misc]
        def add_node(self, node: Any, action: Any = None, **kwargs: Any) -> Any:
            node, action = unwrap(node), unwrap(action)
            session.scan(node, action, kwargs.get("error_handler"))
            return super().add_node(node, action, **kwargs)

        def set_node_defaults(self, **kwargs: Any) -> Any:
            session.scan(kwargs.get("error_handler"))
            return super().set_node_defaults(**kwargs)

        def add_conditional_edges(self, source: str, path: Any, path_map: Any = None) -> Any:
            session.scan(path)
            return super().add_conditional_edges(source, path, path_map)

        def compile(self, *args: Any, **kwargs: Any) -> Any:
            compiled = super().compile(*args, **kwargs)
            return on_compile(compiled, {"args": args, **kwargs})

    TrackingStateGraph.__name__ = base.__name__
    TrackingStateGraph.__qualname__ = base.__qualname__
    return TrackingStateGraph


def tracking_functional(
    base_entrypoint: type[Any],
    base_task: Callable[..., Any],
    session: GraphSession,
    on_compile: Callable[[Any, dict[str, Any]], Any],
) -> tuple[type[Any], Callable[..., Any]]:
    """``entrypoint`` and ``task`` that scan their functions; an entrypoint's graph is
    handed over as ``StateGraph.compile`` hands its graph over."""

    class TrackingEntrypoint(base_entrypoint):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.tracked = {"args": args, **kwargs}

        def __call__(self, func: Any) -> Any:
            session.scan(func)
            return on_compile(super().__call__(func), self.tracked)

    TrackingEntrypoint.__name__ = base_entrypoint.__name__
    TrackingEntrypoint.__qualname__ = base_entrypoint.__qualname__

    def task(__func_or_none__: Any = None, **kwargs: Any) -> Any:
        def wrap(func: Any) -> Any:
            session.scan(func)
            return base_task(func, **kwargs)

        return wrap if __func_or_none__ is None else wrap(__func_or_none__)

    return TrackingEntrypoint, task


def graph_signature(graph: Any) -> tuple[Any, ...]:
    """What must match between the captured graph k and the test side's graph k."""
    return (graph.name, tuple(sorted(graph.nodes)), type(graph.checkpointer).__name__)
