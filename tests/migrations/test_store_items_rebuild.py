"""Revision 0014 rebuilds SQLite's store items table as a rowid table (a no-op elsewhere)
and 0015 adds the expiry to the namespace index: every item, with its times, TTL and text
as stored, survives both ways, and the store reads them afterwards."""

from __future__ import annotations

from typing import Any

import alembic.op
import pytest
import sqlalchemy as sa
from langgraph.store.base import PutOp

from langgraph.store.sqlalchemy import SQLAlchemyStore

from .test_migrations import Target, _current, _migrate, target

__all__ = ["target"]

BEFORE = "0013_store_expiry_partial_index"
REBUILT = "0014_store_items_rowid"


def _rows(t: Target) -> list[tuple[Any, ...]]:
    table = sa.table(
        "lgsa_store_items",
        *(sa.column(c) for c in ("namespace", "key", "value", "created_at", "updated_at")),
        sa.column("expires_at"),
        sa.column("ttl_minutes"),
        schema=t.schema,
    )
    with t.connect() as conn:
        query = sa.select(*table.c).order_by(table.c.namespace, table.c.key)
        return [tuple(r) for r in conn.execute(query)]


def _without_rowid(t: Target) -> bool | None:
    """SQLite: whether the items table is ``WITHOUT ROWID``; None elsewhere."""
    if not t.kind.startswith("sqlite"):
        return None
    with t.connect() as conn:
        sql = conn.execute(
            sa.text("SELECT sql FROM sqlite_master WHERE name = 'lgsa_store_items'")
        ).scalar_one()
    return "WITHOUT ROWID" in sql.upper()


def test_the_items_table_rebuild_keeps_every_item_both_ways(target: Target) -> None:
    _migrate(target, "up", "head")
    store = SQLAlchemyStore.from_conn_string(target.url, schema=target.schema)
    try:
        store.batch(
            [PutOp(("users", f"u{i % 7}"), f"k{i:03d}", {"n": i, "t": "é✓"}) for i in range(200)]
        )
        store.put(("users", "ttl"), "soon", {"n": -1}, ttl=30)
        store.put(("a", "b"), "x", {"nested": {"list": [1, 2.5, None]}})
    finally:
        store.close()
    stored = _rows(target)
    assert len(stored) == 202
    assert _without_rowid(target) in (False, None)

    _migrate(target, "down", BEFORE)
    assert _current(target) == BEFORE
    assert _without_rowid(target) in (True, None)
    assert _rows(target) == stored

    _migrate(target, "up", "head")
    assert _without_rowid(target) in (False, None)
    assert _rows(target) == stored
    store = SQLAlchemyStore.from_conn_string(target.url, schema=target.schema)
    try:
        store.setup()  # at head: nothing to do
        item = store.get(("users", "u3"), "k003")
        assert item is not None and item.value == {"n": 3, "t": "é✓"}
        soon = store.get(("users", "ttl"), "soon", refresh_ttl=False)
        assert soon is not None and soon.value == {"n": -1}
        found = store.search(("users",), filter={"n": {"$gte": 195}}, limit=10)
        assert sorted(it.key for it in found) == [f"k{i:03d}" for i in range(195, 200)]
        assert store.list_namespaces(prefix=("users",), limit=100) == [
            ("users", "ttl"),
            *(("users", f"u{i}") for i in range(7)),
        ]
        store.put(("users", "u3"), "k003", {"n": 33})  # an update in place
        again = store.get(("users", "u3"), "k003")
        assert again is not None and again.value == {"n": 33}
        assert again.created_at == item.created_at
    finally:
        store.close()


def test_an_interrupted_rebuild_leaves_the_table_as_it_was(
    target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not target.kind.startswith("sqlite"):
        pytest.skip("the rebuild runs on SQLite only")
    _migrate(target, "up", BEFORE)
    with target.connect(begin=True) as conn:
        conn.execute(
            sa.text(
                "INSERT INTO lgsa_store_items VALUES "
                "('users\x01u1', 'k', '{\"n\": 1}', 1.0, 2.0, NULL, NULL)"
            )
        )
    stored = _rows(target)
    indexes = _indexes(target)

    def interrupted(*_args: Any, **_kwargs: Any) -> None:
        raise KeyboardInterrupt  # Ctrl-C after the copy, the drop and the rename

    monkeypatch.setattr(alembic.op, "create_index", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _migrate(target, "up", REBUILT)
    monkeypatch.undo()
    assert _current(target) == BEFORE
    assert _without_rowid(target) is True
    assert _rows(target) == stored
    assert _indexes(target) == indexes
    _migrate(target, "up", REBUILT)
    assert _without_rowid(target) is False
    assert _rows(target) == stored
    assert _indexes(target) == indexes


def _indexes(t: Target) -> list[tuple[Any, ...]]:
    with t.connect() as conn:
        return sorted(
            tuple(r)
            for r in conn.execute(
                sa.text(
                    "SELECT name, sql FROM sqlite_master WHERE type = 'index' "
                    "AND tbl_name = 'lgsa_store_items' AND sql IS NOT NULL"
                )
            )
        )
