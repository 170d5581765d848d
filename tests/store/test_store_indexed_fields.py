"""``indexed_fields``: setup() creates an expression index a range or an equality filter
on the field uses (``EXPLAIN`` on every backend), searches still match as without it,
and a field name that is not an identifier is refused before anything is opened."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langgraph.store.base import PutOp
from sqlalchemy import event

from langgraph.checkpoint.sqlalchemy.dialects._json_filters import field_index_name
from langgraph.store.sqlalchemy import SQLAlchemyStore
from langgraph.store.sqlalchemy.config import indexed_fields_from_env

N = 1500


def _filled(store: SQLAlchemyStore) -> SQLAlchemyStore:
    for ns in ("big", "other"):
        for start in range(0, N, 500):
            store.batch(
                [
                    PutOp((ns,), f"k{i}", {"score": i / N, "name": f"n{i:05}"})
                    for i in range(start, start + 500)
                ]
            )
    # Statistics, as a server's autovacuum (PostgreSQL) or InnoDB's sampling keep them.
    name = store.engine.dialect.name
    if name != "sqlite":
        with store.engine.begin() as conn:
            quote = conn.dialect.identifier_preparer.quote
            table = quote("lgsa_store_items")
            if store.schema:
                table = f"{quote(store.schema)}.{table}"
            conn.exec_driver_sql(
                f"ANALYZE {table}" if name == "postgresql" else f"ANALYZE TABLE {table}"
            )
    return store


def _plan(store: SQLAlchemyStore, spec: dict[str, Any]) -> str:
    """The search's result checked, and the database's plan of its statement."""
    seen: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if "lgsa_store_items" in statement and "score" in statement:
            seen.append((statement, params))

    event.listen(store.engine, "before_cursor_execute", capture)
    try:
        found = store.search(("big",), filter={"score": spec}, limit=10)
    finally:
        event.remove(store.engine, "before_cursor_execute", capture)
    assert found and all(i.namespace == ("big",) for i in found)
    statement, params = seen[-1]
    name = store.engine.dialect.name
    prefix = "EXPLAIN QUERY PLAN " if name == "sqlite" else "EXPLAIN "
    with store.engine.connect() as conn:
        cur = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        cur.execute(prefix + statement, params)
        return "\n".join(str(row) for row in cur.fetchall())


@pytest.mark.parametrize("spec", [{"$gt": 0.99}, {"$lte": 0.001}, {"$eq": 0.5}])
def test_a_filter_on_an_indexed_field_uses_its_index(
    store_factory: Callable[..., SQLAlchemyStore], spec: dict[str, Any]
) -> None:
    store = _filled(store_factory(indexed_fields=["score"]))
    plan = _plan(store, spec)
    assert field_index_name("score", "n") in plan, plan


def test_indexed_fields_do_not_change_what_a_search_finds(
    store_factory: Callable[..., SQLAlchemyStore],
) -> None:
    plain = _filled(store_factory())
    indexed = _filled(store_factory(indexed_fields=["score", "name"]))
    specs: list[dict[str, Any]] = [
        {"score": {"$gt": 0.5, "$lt": 0.52}},
        {"score": {"$gte": 0.999}},
        {"score": 0.5},
        {"name": {"$gte": "n01490"}},
        {"name": "n00007"},
        {"name": {"$lt": "n00003"}, "score": {"$ne": 0}},
    ]
    for spec in specs:
        want = [(i.key, i.value) for i in plain.search(("big",), filter=spec, limit=50)]
        got = [(i.key, i.value) for i in indexed.search(("big",), filter=spec, limit=50)]
        assert got == want, spec
        assert want


@pytest.mark.parametrize("bad", ["a-b", "1a", "", "a b", "x" * 64, 5, "'; DROP"])
def test_a_field_name_that_is_not_an_identifier_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="indexed_fields"):
        SQLAlchemyStore.from_conn_string(":memory:", indexed_fields=[bad])


def test_langgraph_store_config_names_indexed_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGGRAPH_STORE", '{"indexed_fields": ["score", "status"]}')
    assert indexed_fields_from_env() == ["score", "status"]
    monkeypatch.setenv("LANGGRAPH_STORE", '{"ttl": {"default_ttl": 5}}')
    assert indexed_fields_from_env() is None
    for bad in ('{"indexed_fields": "score"}', '{"indexed_fields": ["a.b"]}'):
        monkeypatch.setenv("LANGGRAPH_STORE", bad)
        with pytest.raises(ValueError, match="indexed_fields"):
            indexed_fields_from_env()
