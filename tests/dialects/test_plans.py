"""Plans that do not depend on luck: a per-thread listing is served by the primary key,
read from the database's own ``EXPLAIN`` right after a bulk load, before any ``ANALYZE``.

PostgreSQL with stale statistics was measured walking ``ix_lgsa_checkpoints_
checkpoint_id`` backwards across every thread (925 buffers against 5) for
``list(thread, limit=10)``. The listing of one thread and namespace is now ordered by
the primary key's own columns, which a backward scan of the key serves whatever the
statistics; these tests fail if the plan reads another index, scans the table or sorts.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, insert

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy._ops.browse import walk_select
from langgraph.checkpoint.sqlalchemy._ops.listing import _page_select, list_query
from langgraph.checkpoint.sqlalchemy.schema import checkpoints

from ..security.test_forged import raw
from ..security.test_hostile import cfg

#: The plans read are the built-in families' (tests/dialects/conftest.py).
BUILT_IN_FAMILIES_ONLY = True
THREADS, PER_THREAD = 400, 25  # 10,000 checkpoints: small enough for CI


def bulk_load(saver: SQLAlchemySaver) -> None:
    """10,000 checkpoint rows in 400 threads, inserted behind the saver's back (no
    ANALYZE: the statistics are whatever a fresh table has)."""
    rows = [
        {
            "thread_id": f"t{t:04}",
            "checkpoint_ns": "",
            "checkpoint_id": f"1f000000-0000-6000-8000-{t * PER_THREAD + i:012}",
            "parent_checkpoint_id": None,
            "type": "msgpack",
            "checkpoint": b"\x80",
            "metadata": {"step": i, "source": "loop"},
            "value_versions": {},
            "source": "loop",
            "step": i,
        }
        for t in range(THREADS)
        for i in range(PER_THREAD)
    ]
    with raw(saver) as conn:
        for start in range(0, len(rows), 1000):
            conn.execute(insert(checkpoints), rows[start : start + 1000])


def explain(conn: Connection, saver: SQLAlchemySaver, stmt: Any) -> list[str]:
    """The plan of ``stmt`` as lines of text, from the dialect's own EXPLAIN."""
    compiled = stmt.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
    params: Any = compiled.params
    if compiled.positional:
        params = tuple(compiled.params[k] for k in compiled.positiontup or ())
    sql = str(compiled)
    name = conn.dialect.name
    if name == "postgresql":
        if saver.schema:
            conn.exec_driver_sql(f'SET LOCAL search_path TO "{saver.schema}"')
        (plan,) = conn.exec_driver_sql("EXPLAIN (FORMAT JSON) " + sql, params).one()
        plan = plan if isinstance(plan, list) else json.loads(plan)
        lines: list[str] = []

        def walk(node: dict[str, Any]) -> None:
            index, relation = node.get("Index Name", ""), node.get("Relation Name", "")
            lines.append(f"{node['Node Type']} {index} {relation}")
            for child in node.get("Plans", []):
                walk(child)

        walk(plan[0]["Plan"])
        return lines
    if name == "sqlite":
        return [str(r[-1]) for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, params)]
    if saver.schema:  # the test's own database, named through schema translation
        conn.exec_driver_sql(f"USE `{saver.schema}`")
    result = conn.exec_driver_sql("EXPLAIN " + sql, params).mappings().all()
    return [f"{r['table']} key={r['key']} type={r['type']} extra={r['Extra']}" for r in result]


def query_of(saver: SQLAlchemySaver, config: Any, filter: Any) -> Any:
    """The conditions the saver's ``list(config, filter=filter)`` runs with."""
    return list_query(saver._qb, config, filter, None, saver._codec.index_keys)


def test_list_of_one_thread_is_served_by_the_primary_key(saver: SQLAlchemySaver) -> None:
    bulk_load(saver)
    query = query_of(saver, cfg("t0123"), None)
    assert query.order  # one thread and namespace: the dialect's key order
    with raw(saver) as conn:
        plan = explain(conn, saver, _page_select(conn, saver._st, query, None, 10))
        listed = list(saver.list(cfg("t0123"), limit=10))
    text = "\n".join(plan)
    assert "ix_lgsa_checkpoints_checkpoint_id" not in text, text
    assert "Seq Scan" not in text and "Sort" not in text, text  # PostgreSQL
    assert "TEMP B-TREE" not in text and "SCAN lgsa_checkpoints\n" not in text + "\n", text
    assert "filesort" not in text, text  # MySQL/MariaDB
    assert any(k in text for k in ("pk_lgsa_checkpoints", "PRIMARY", "sqlite_autoindex")), text
    ids = [t.config["configurable"]["checkpoint_id"] for t in listed]
    assert ids == sorted(ids, reverse=True) and len(ids) == 10
    assert all(t.config["configurable"]["thread_id"] == "t0123" for t in listed)


def plan_problems(text: str) -> list[str]:
    """What a plan of one thread's listing must not hold: another index, a table scan, a
    sort (each dialect's own words for them)."""
    bad = ["ix_lgsa_checkpoints_checkpoint_id", "Seq Scan", "Sort"]  # PostgreSQL
    bad += ["TEMP B-TREE", "SCAN lgsa_checkpoints\n"]  # SQLite
    bad += ["filesort", "lgsa_checkpoints key=None"]  # MySQL/MariaDB
    return [b for b in bad if b in text + "\n"]


def test_list_of_one_thread_in_every_namespace_reads_the_thread_index(
    saver: SQLAlchemySaver,
) -> None:
    """``list({"thread_id": t})`` without a namespace: ``ix_lgsa_checkpoints_thread``
    read backwards over the thread, first page and keyset pages alike; newest first
    across the thread's namespaces (``checkpoint_id``, then ``checkpoint_ns``,
    descending). PostgreSQL with stale statistics walked the checkpoint-id index
    across every newer thread (587 buffers at 100,000 checkpoints, 8 at 10,000)."""
    bulk_load(saver)
    child = [  # a subgraph's namespace, its ids between the root's, one id in both
        {
            "thread_id": "t0123",
            "checkpoint_ns": "child:1",
            "checkpoint_id": f"1f000000-0000-6000-8000-{123 * PER_THREAD + i:012}"
            + ("" if i == 4 else "5"),
            "parent_checkpoint_id": None,
            "type": "msgpack",
            "checkpoint": b"\x80",
            "metadata": {"step": i, "source": "loop"},
            "value_versions": {},
            "source": "loop",
            "step": i,
        }
        for i in range(0, PER_THREAD, 2)
    ]
    with raw(saver) as conn:
        conn.execute(insert(checkpoints), child)
    config: Any = {"configurable": {"thread_id": "t0123"}}
    query = query_of(saver, config, None)
    assert query.order  # one thread: the dialect's order for the thread index
    middle = ("t0123", "child:1", child[4]["checkpoint_id"])
    with raw(saver) as conn:
        for cursor in (None, middle):
            stmt = _page_select(conn, saver._st, query, cursor, 10)
            text = "\n".join(explain(conn, saver, stmt))
            assert "ix_lgsa_checkpoints_thread" in text and not plan_problems(text), text
    listed = [
        (t.config["configurable"]["checkpoint_id"], t.config["configurable"]["checkpoint_ns"])
        for t in saver.list(config)
    ]
    assert len(listed) == PER_THREAD + len(child)
    assert listed == sorted(listed, reverse=True)
    assert listed[:3] == sorted(listed, reverse=True)[:3]
    from langgraph.checkpoint.sqlalchemy import saver as saver_module

    old = saver_module.LIST_PAGE_SIZE
    saver_module.LIST_PAGE_SIZE = 4  # keyset pages, one of them between the twin ids
    try:
        paged = [
            (t.config["configurable"]["checkpoint_id"], t.config["configurable"]["checkpoint_ns"])
            for t in saver.list(config)
        ]
    finally:
        saver_module.LIST_PAGE_SIZE = old
    assert paged == listed


def test_pages_of_one_thread_follow_the_key(saver: SQLAlchemySaver) -> None:
    """Keyset pages in key order give every checkpoint of the thread once, newest first."""
    bulk_load(saver)
    from langgraph.checkpoint.sqlalchemy import saver as saver_module

    old = saver_module.LIST_PAGE_SIZE
    saver_module.LIST_PAGE_SIZE = 7  # several pages for 25 checkpoints
    try:
        listed = list(saver.list(cfg("t0007")))
    finally:
        saver_module.LIST_PAGE_SIZE = old
    ids = [t.config["configurable"]["checkpoint_id"] for t in listed]
    assert len(ids) == PER_THREAD and ids == sorted(set(ids), reverse=True)


def test_filter_on_an_indexed_key_reads_the_index(saver: SQLAlchemySaver) -> None:
    """``list(None, filter={"user_id": X})``: PostgreSQL reads its GIN index, SQLite and
    MariaDB the metadata index's key range; neither scans the checkpoints."""
    bulk_load(saver)
    query = query_of(saver, None, {"user_id": "u7"})
    with raw(saver) as conn:
        if conn.dialect.name == "postgresql":
            # 10,000 small rows: a scan is cheaper, and PostgreSQL rightly takes it (at
            # 200,000 it reads the GIN index, with or without ANALYZE); here: usable.
            conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
        plan = explain(conn, saver, _page_select(conn, saver._st, query, None, 10))
    text = "\n".join(plan)
    if conn.dialect.name == "postgresql":
        assert "ix_lgsa_checkpoints_metadata" in text and "Seq Scan" not in text, text
    elif conn.dialect.name == "sqlite":
        assert "lgsa_metadata_index" in text, text
        assert "SCAN lgsa_checkpoints" not in text, text
    else:
        assert "lgsa_metadata_index key=PRIMARY" in text, text
        assert "lgsa_checkpoints key=None" not in text, text


def test_filter_on_step_reads_an_index(saver: SQLAlchemySaver) -> None:
    """``list(None, filter={"step": n})`` reads an index, never the table: PostgreSQL
    seeks ``ix_lgsa_checkpoints_step_source``; SQLite and MariaDB (no such index since
    0008, whose deletes would pay for it) walk ``ix_lgsa_checkpoints_checkpoint_id``
    newest first, whose entries hold ``step`` and ``source`` (MariaDB, without
    statistics, scanned the table and sorted unless told to)."""
    bulk_load(saver)
    rare = {
        "thread_id": "t-rare",
        "checkpoint_ns": "",
        "checkpoint_id": "1f000000-0000-6000-9000-000000000000",
    }
    with raw(saver) as conn:  # one checkpoint at step 10,000
        row = {**rare, "parent_checkpoint_id": None, "type": "msgpack", "checkpoint": b"\x80"}
        row |= {"metadata": {"step": 10_000, "source": "loop"}, "value_versions": {}}
        conn.execute(insert(checkpoints), [{**row, "source": "loop", "step": 10_000}])
    for flt in ({"step": 10_000}, {"step": 3, "source": "loop"}, {"source": "input"}):
        query = query_of(saver, None, flt)
        with raw(saver) as conn:
            if conn.dialect.name == "postgresql":
                conn.exec_driver_sql("SET LOCAL enable_seqscan = off")  # 10,000 small rows
            text = "\n".join(explain(conn, saver, _page_select(conn, saver._st, query, None, 10)))
        if conn.dialect.name == "postgresql":
            if "step" in flt:
                assert "ix_lgsa_checkpoints_step_source" in text, text
            assert "Seq Scan" not in text, text
        else:
            assert "ix_lgsa_checkpoints_checkpoint_id" in text, text
            assert "SCAN lgsa_checkpoints\n" not in text + "\n", text  # SQLite
            assert "TEMP B-TREE" not in text and "filesort" not in text, text
            assert "lgsa_checkpoints key=None" not in text, text  # MariaDB
    found = list(saver.list(None, filter={"step": 10_000}, limit=10))
    assert [t.config["configurable"]["thread_id"] for t in found] == ["t-rare"]
    assert len(list(saver.list(None, filter={"step": 24}, limit=500))) == THREADS
    found = list(saver.list(None, filter={"step": 10_000, "source": "loop"}, limit=10))
    assert [t.config["configurable"]["thread_id"] for t in found] == ["t-rare"]


def test_newest_threads_walk_the_checkpoint_id_index(saver: SQLAlchemySaver) -> None:
    """``list_threads``' walk reads ``ix_lgsa_checkpoints_checkpoint_id`` backwards, index
    only, with or without its keyset cursor and the ``idle_for``/``after`` bounds: no
    table scan, no sort.

    Batches of 64 (the first batch of a page of up to 32 threads). On this small
    table, before VACUUM and ANALYZE, PostgreSQL prefers a scan and top-N sort for a
    batch of 128 under a cursor (it guesses 820 rows of 10,000, a third of them below
    the cursor); on a large table a batch is a small part of the estimate.
    """
    bulk_load(saver)
    newest = f"1f000000-0000-6000-8000-{THREADS * PER_THREAD - 1:012}"
    middle = f"1f000000-0000-6000-8000-{THREADS * PER_THREAD // 2:012}"
    c = checkpoints.c
    walks = [
        walk_select([], None, 64),
        walk_select([], middle, 64),
        walk_select([c.checkpoint_id < newest, c.checkpoint_id <= middle], middle, 64),
    ]
    with raw(saver) as conn:
        for stmt in walks:
            text = "\n".join(explain(conn, saver, stmt))
            assert "ix_lgsa_checkpoints_checkpoint_id" in text, text
            assert "Seq Scan" not in text and "Sort" not in text, text  # PostgreSQL
            assert "Index Only Scan" in text or conn.dialect.name != "postgresql", text
            assert ("TEMP B-TREE" not in text and "COVERING INDEX" in text) or (
                conn.dialect.name != "sqlite"
            ), text
            assert ("filesort" not in text and "Using index" in text) or (
                conn.dialect.name not in ("mysql", "mariadb")
            ), text
    listed = saver.list_threads(limit=20)
    assert [t.thread_id for t in listed] == [
        f"t{t:04}" for t in range(THREADS - 1, THREADS - 21, -1)
    ]
