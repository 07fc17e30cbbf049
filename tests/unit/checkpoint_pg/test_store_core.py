"""The store's protocol without a database: index settings, and setup's pgvector checks
(driven with the rows a server would answer)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from checkpoint_pg import _store_queries as q
from checkpoint_pg._requests import Batch, Stmt
from checkpoint_pg._store_core import StoreCore
from checkpoint_pg._vector import VectorIndex
from graphruntime.store.base import InvalidStoreRequestError, PutOp, StoreBackendError


def _embed(texts: Sequence[str]) -> list[list[float]]:
    return [[float(len(t)), 1.0] for t in texts]


def _setup_until_pgvector(core: StoreCore, answer: dict[str, Any]) -> Any:
    """Run setup's statements, answering the pgvector probe with ``answer``."""
    op = core.setup()
    request = next(op)
    while True:
        result: Any = None
        if getattr(request, "query", None) == q.PGVECTOR_AVAILABLE:
            result = answer
        elif getattr(request, "fetch", None) == "one":
            result = {"version": 0}
        request = op.send(result)


def test_setup_names_pgvector_when_the_server_lacks_it() -> None:
    core = StoreCore(None, VectorIndex({"dims": 2, "embed": _embed}), None)
    with pytest.raises(StoreBackendError, match="pgvector"):
        _setup_until_pgvector(core, {"available": None, "installed": None})


def test_halfvec_needs_pgvector_0_7() -> None:
    index = VectorIndex(
        {"dims": 2, "embed": _embed, "ann_index_config": {"vector_type": "halfvec"}}
    )
    with pytest.raises(StoreBackendError, match=r"halfvec.*0\.7.*0\.6\.2"):
        _setup_until_pgvector(
            StoreCore(None, index, None), {"available": "0.6.2", "installed": None}
        )


def test_a_store_without_an_index_never_asks_for_pgvector() -> None:
    op = StoreCore(None, None, None).setup()
    queries = []
    result: Any = None
    try:
        while True:
            request = op.send(result)
            assert isinstance(request, Stmt)  # setup sends statements one by one
            queries.append(request.query)
            result = {"version": 0} if request.fetch == "one" else None
    except StopIteration:
        pass
    assert q.PGVECTOR_AVAILABLE not in queries


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"dims": 2, "embed": _embed, "distance_type": "hamming"}, "distance_type"),
        ({"dims": 2, "embed": _embed, "ann_index_config": {"kind": "diskann"}}, "kind"),
        ({"dims": 2, "embed": _embed, "ann_index_config": {"vector_type": "bit"}}, "vector_type"),
        ({"dims": 2, "embed": _embed, "ann_index_config": {"kind": "hnsw", "lists": 3}}, "lists"),
        ({"dims": 2, "embed": _embed, "ann_index_config": {"m": 0}}, "positive"),
        ({"dims": 0, "embed": _embed}, "dims"),
        ({"dims": 2}, "embed"),
    ],
)
def test_index_settings_are_checked(config: Any, message: str) -> None:
    with pytest.raises(InvalidStoreRequestError, match=message):
        VectorIndex(config)


def test_texts_to_embed_are_planned_per_field() -> None:
    index = VectorIndex({"dims": 2, "embed": _embed, "fields": ["title", "tags[*]"]})
    core = StoreCore(None, index, None)
    plan = core.plan(
        [
            PutOp(("docs",), "a", {"title": "A", "tags": ["x", "y"]}),
            PutOp(("docs",), "b", {"title": "B"}, index=False),
            PutOp(("docs",), "c", {"body": "C"}, index=["body"]),
        ]
    )
    assert plan.texts == ["A", "x", "y", "C"]


def test_naming_fields_to_embed_without_an_index_is_refused() -> None:
    with pytest.raises(InvalidStoreRequestError, match="no index"):
        StoreCore(None, None, None).plan([PutOp(("docs",), "a", {"t": "x"}, index=["t"])])


def _put_statements(ops: list[PutOp]) -> list[Stmt]:
    """The statements of one run of puts, as the core sends them (one Batch)."""
    core = StoreCore(None, None, None)
    request = next(core.batch(core.plan(ops), [], []))
    assert isinstance(request, Batch)
    return list(request.statements)


def test_a_run_of_puts_of_several_items_locks_them_all_before_writing() -> None:
    # a DELETE and an upsert each lock in their own order, and rows inserted or deleted by
    # other batches between them escape row locks: the items' locks are taken first
    ops = [
        PutOp(("ns", "b"), "k2", None),
        PutOp(("ns", "a"), "k9", {"v": 1}),
        PutOp(("ns", "b"), "k1", {"v": 2}),
        PutOp(("ns", "a"), "k0", None),
        PutOp(("ns", "b"), "k1", {"v": 3}),  # the last put of an item wins
    ]
    statements = _put_statements(ops)
    assert [s.query for s in statements] == [q.LOCK, q.DELETE, q.PUT]
    locked = list(zip(statements[0].params["prefixes"], statements[0].params["keys"], strict=True))
    assert locked == [("ns.a", "k0"), ("ns.a", "k9"), ("ns.b", "k1"), ("ns.b", "k2")]
    assert statements[1].params == {"prefixes": ["ns.a", "ns.b"], "keys": ["k0", "k2"]}
    assert statements[2].params["keys"] == ["k9", "k1"]
    upserts = [PutOp(("ns",), "b", {"v": 1}), PutOp(("ns",), "a", {"v": 2})]
    assert [s.query for s in _put_statements(upserts)] == [q.LOCK, q.PUT]


def test_a_put_of_one_item_takes_no_extra_lock() -> None:
    assert [s.query for s in _put_statements([PutOp(("ns",), "a", None)])] == [q.DELETE]
    assert [s.query for s in _put_statements([PutOp(("ns",), "a", {"v": 1})])] == [q.PUT]
