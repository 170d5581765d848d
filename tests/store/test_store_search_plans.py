"""A filtered search across a large prefix walks ``ix_lgsa_store_items_updated_at`` newest
first and stops at its page, whatever the planner's statistics: the plan read from each
database's own ``EXPLAIN``, in the search's own transaction (the settings it made
there), at 10,000 items right after they are written (no ``ANALYZE``; PostgreSQL's
autovacuum kept off the table), and again after ``ANALYZE``.

Measured before: PostgreSQL 15 without statistics counted the prefix through a bitmap
of every entry of its range (9 ms at 100,000 items), and with them walked in a parallel
worker behind a Gather Merge (7 of 9 ms starting the worker); without the walk it
scanned the table and sorted it (37 ms). A later search of one small namespace in the
same batch must read that namespace's range, not walk every entry of the index.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langgraph.store.base import PutOp, SearchOp
from sqlalchemy import event

from langgraph.store.sqlalchemy import SQLAlchemyStore

from ..provision import drop_schema

USERS, PER_USER = 100, 100  # 10,000 items under ("memories",)
WALKED = "ix_lgsa_store_items_updated_at"
BIG = SearchOp(("memories",), {"score": {"$gt": 0.99}}, limit=10)
SMALL = SearchOp(("memories", "u7"), {"score": {"$gt": 0.5}}, limit=10)


def _score(i: int) -> float:
    """A spread of fractions (1 in 100 above 0.99), not in the order of writing."""
    return (i * 7919 % 10_000) / 10_000


def _fill(store: SQLAlchemyStore, analyzed: bool) -> None:
    """10,000 items under ``("memories", "u<n>")``; statistics only when ``analyzed``."""
    name = store.engine.dialect.name
    quote = store.engine.dialect.identifier_preparer.quote
    table = quote("lgsa_store_items")
    if store.schema:
        table = f"{quote(store.schema)}.{table}"
    if name == "postgresql":
        with store.engine.begin() as conn:
            conn.exec_driver_sql(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
    n = USERS * PER_USER
    for start in range(0, n, 1000):
        store.batch(
            [
                PutOp(("memories", f"u{i % USERS}"), f"m{i:05}", {"score": _score(i), "i": i})
                for i in range(start, start + 1000)
            ]
        )
    if analyzed:
        with store.engine.begin() as conn:
            if name == "postgresql":
                conn.exec_driver_sql(f"ANALYZE {table}")
            elif name == "sqlite":
                conn.exec_driver_sql("ANALYZE")
            else:
                conn.exec_driver_sql(f"ANALYZE TABLE {table}").fetchall()


def _explain(conn: Any, statement: str, params: Any) -> str:
    """The plan of ``statement`` in the connection's transaction, one node a line."""
    cur = conn.connection.driver_connection.cursor()
    name = conn.dialect.name
    if name == "postgresql":
        cur.execute("EXPLAIN (FORMAT JSON) " + statement, params)
        (plan,) = cur.fetchone()
        plan = plan if isinstance(plan, list) else json.loads(plan)
        lines: list[str] = []

        def walk(node: dict[str, Any]) -> None:
            lines.append(f"{node['Node Type']} {node.get('Index Name', '')}".strip())
            for child in node.get("Plans", []):
                walk(child)

        walk(plan[0]["Plan"])
        return "\n".join(lines)
    if name == "sqlite":
        cur.execute("EXPLAIN QUERY PLAN " + statement, params)
        return "\n".join(str(row[-1]) for row in cur.fetchall())
    cur.execute("EXPLAIN " + statement, params)
    columns = [d[0] for d in cur.description]
    rows = [dict(zip(columns, row, strict=True)) for row in cur.fetchall()]
    return "\n".join(f"key={r['key']} type={r['type']} extra={r['Extra']}" for r in rows)


def _plans(store: SQLAlchemyStore, ops: list[SearchOp]) -> tuple[list[str], list[Any]]:
    """The searches of ``ops`` run as one batch, and the plan of each one's statement,
    read just before it runs (the settings of the batch's transaction in force)."""
    plans: list[str] = []

    def explain(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if "ORDER BY" in statement and "updated_at DESC" in statement:
            plans.append(_explain(conn, statement, params))

    event.listen(store.engine, "before_cursor_execute", explain)
    try:
        results = store.batch(ops)
    finally:
        event.remove(store.engine, "before_cursor_execute", explain)
    return plans, results


def _walks(plan: str) -> bool:
    """Whether ``plan`` walks the whole ``updated_at`` index in order (stopping at the
    page) with nothing to sort, in each dialect's words."""
    walk = [f"Index Scan {WALKED}", f"SCAN lgsa_store_items USING INDEX {WALKED}"]
    walk += [f"key={WALKED} type=index"]
    bad = ["Sort", "Seq Scan", "Bitmap", "Gather", "TEMP B-TREE", "filesort"]
    return any(w in plan for w in walk) and not any(b in plan for b in bad)


def _check_walk(store: SQLAlchemyStore) -> None:
    plans, (big, small) = _plans(store, [BIG, SMALL])
    assert len(plans) == 2, plans
    assert _walks(plans[0]), plans[0]
    assert len(big) == 10 and all(item.value["score"] > 0.99 for item in big)
    assert [item.updated_at for item in big] == sorted(
        (item.updated_at for item in big), reverse=True
    )
    # One namespace of 100 items: not the walk the batch's first search set.
    assert not _walks(plans[1]), plans[1]
    assert small and all(item.namespace == ("memories", "u7") for item in small)


@pytest.mark.parametrize("analyzed", [False, True], ids=["no-statistics", "analyzed"])
def test_a_range_filter_across_a_large_prefix_walks_the_updated_at_index(
    store_factory: Callable[..., SQLAlchemyStore], analyzed: bool
) -> None:
    store = store_factory()
    _fill(store, analyzed)
    _check_walk(store)


#: Session settings that make PostgreSQL plan in parallel at 10,000 items as it did at
#: 100,000 (the test's own connections only).
PARALLEL_CHEAP = (
    "-c parallel_setup_cost=0 -c parallel_tuple_cost=0 "
    "-c min_parallel_table_scan_size=0 -c min_parallel_index_scan_size=0"
)


@pytest.mark.parametrize("analyzed", [False, True], ids=["no-statistics", "analyzed"])
def test_the_walk_runs_in_one_backend_where_a_parallel_plan_looks_cheap(
    store_factory: Callable[..., SQLAlchemyStore], backend: str, analyzed: bool
) -> None:
    if backend != "postgres":
        pytest.skip("PostgreSQL's parallel plans")
    store = store_factory(connect_args={"options": PARALLEL_CHEAP})
    _fill(store, analyzed)
    _check_walk(store)


@pytest.fixture
def pgvector_store(pgvector_url: str) -> Iterator[SQLAlchemyStore]:
    """A store in a schema of its own on the pgvector server (PostgreSQL 18)."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    store = SQLAlchemyStore.from_conn_string(pgvector_url, schema=schema)
    try:
        store.setup()
        yield store
    finally:
        store.close()
        drop_schema(pgvector_url, schema)


@pytest.mark.parametrize("analyzed", [False, True], ids=["no-statistics", "analyzed"])
def test_a_range_filter_across_a_large_prefix_walks_on_the_pgvector_server(
    pgvector_store: SQLAlchemyStore, analyzed: bool
) -> None:
    _fill(pgvector_store, analyzed)
    _check_walk(pgvector_store)


def test_a_prefix_remembered_as_large_runs_no_count_again(
    store_factory: Callable[..., SQLAlchemyStore],
) -> None:
    store = store_factory()
    _fill(store, analyzed=False)
    seen: list[str] = []

    def capture(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement)

    store.batch([BIG])
    event.listen(store.engine, "before_cursor_execute", capture)
    try:
        found = store.batch([BIG, BIG])
    finally:
        event.remove(store.engine, "before_cursor_execute", capture)
    assert found[0] == found[1] and isinstance(found[0], list) and len(found[0]) == 10
    assert not [s for s in seen if "count(" in s.lower()], seen
    # PostgreSQL: the walk's settings are made once a transaction.
    assert len([s for s in seen if "set_config" in s]) <= 1, seen
