"""A batch of puts writes what a put alone writes, on every backend, through the batch
write's shortcuts: an item put again without a TTL loses its expiry (the TTL columns are
left out of the statement, not bound as NULL), and its vectors go even when the store
that puts it has no index config (the vectors' delete is skipped on SQLite only when the
vectors table is empty).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langgraph.store.base import InvalidNamespaceError, PutOp

from langgraph.store.sqlalchemy import SQLAlchemyStore

from ..conftest import HashEmbeddings


def test_a_batch_without_ttl_clears_the_expiry_of_items_put_with_one(
    store_factory: Callable[..., SQLAlchemyStore],
) -> None:
    store = store_factory()
    keys = [f"k{i}" for i in range(5)]
    store.batch([PutOp(("ns",), k, {"v": 1}, ttl=60.0) for k in keys])
    held, _ = store.held([("ns", k) for k in keys])
    assert all(row[5] is not None and row[6] == 60.0 for row in held.values())

    store.batch([PutOp(("ns",), k, {"v": 2}, ttl=None) for k in keys])
    held, _ = store.held([("ns", k) for k in keys])
    assert all(row[5] is None and row[6] is None for row in held.values())
    assert [store.get(("ns",), k).value for k in keys] == [{"v": 2}] * 5  # type: ignore[union-attr]


def test_a_batch_mixing_ttls_writes_each_items_own(
    store_factory: Callable[..., SQLAlchemyStore],
) -> None:
    store = store_factory()
    ops = [PutOp(("ns",), f"k{i}", {"v": i}, ttl=60.0 if i % 2 else None) for i in range(6)]
    store.batch(ops)
    held, _ = store.held([("ns", f"k{i}") for i in range(6)])
    for i in range(6):
        row = held[("ns", f"k{i}")]
        assert (row[6] == 60.0) if i % 2 else (row[5] is None and row[6] is None)


def test_a_store_without_index_removes_the_vectors_of_the_items_it_puts(
    store_factory: Callable[..., SQLAlchemyStore],
) -> None:
    index: Any = {"dims": 8, "embed": HashEmbeddings(8), "fields": ["text"]}
    indexed = store_factory(index=index)
    keys = [f"k{i}" for i in range(4)]
    indexed.batch([PutOp(("ns",), k, {"text": f"hello {k}"}) for k in keys])
    assert indexed.stats().vectors == 4

    plain = SQLAlchemyStore(indexed.engine, indexed.async_engine, schema=indexed.schema)
    try:
        plain.batch([PutOp(("ns",), k, {"text": "no vector"}) for k in keys[:3]])
        assert plain.stats().vectors == 1
        _, embedded = plain.held([("ns", k) for k in keys], with_vectors=True)
        assert embedded == {("ns", "k3")}
    finally:
        plain.close()


def test_a_put_alone_writes_what_a_batch_of_one_writes(
    store_factory: Callable[..., SQLAlchemyStore],
) -> None:
    """``put`` takes its own short path when it has nothing to embed: the same default
    TTL, the same vectors removed, the same namespace rules as ``batch``."""
    index: Any = {"dims": 8, "embed": HashEmbeddings(8), "fields": ["text"]}
    store = store_factory(index=index, ttl={"default_ttl": 30.0})
    store.put(("ns",), "a", {"text": "hello"})  # embeds: the batch's plan
    store.batch([PutOp(("ns",), "b", {"text": "hello"}, ttl=30.0)])
    assert store.stats().vectors == 2
    store.put(("ns",), "a", {"text": "bye"}, index=False)  # nothing to embed
    store.batch([PutOp(("ns",), "b", {"text": "bye"}, index=False, ttl=30.0)])
    held, embedded = store.held([("ns", "a"), ("ns", "b")], with_vectors=True)
    assert held[("ns", "a")][6] == held[("ns", "b")][6] == 30.0
    assert held[("ns", "a")][5] is not None and not embedded
    assert store.stats().vectors == 0
    store.put(("ns",), "a", {"v": 1}, index=False, ttl=None)
    held, _ = store.held([("ns", "a")])
    assert held[("ns", "a")][5] is None and held[("ns", "a")][6] is None
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "x"), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"v": 1})
