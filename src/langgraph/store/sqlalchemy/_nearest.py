"""Vector search by the database, through its ANN index where it has one (pgvector's HNSW
on PostgreSQL: :meth:`.QueryBuilder.vector_index`).

Where the vectors table has the dialect's native vector column, every write fills it
(:func:`.put_rows` with ``native``), and a vector search is one statement: the items'
rows joined to their vectors, the filter, the namespace prefix and the expiry applied in
the same ``WHERE``, ordered by the distance the index serves, ``LIMIT n``. An item with
several embedded fields may come back once a field: its best field scores it; when the
rows held fewer than ``offset + limit`` items (or fewer that pass a filter checked in
Python), the statement runs again with a larger ``n`` (at most :data:`MAX_ROWS`), as
pgvector's iterative scan goes on past ``ef_search`` to meet the ``LIMIT``.

Without an index (``ann_index_config={"kind": "flat"}``, or more dimensions than the
index takes) the same statement scores every candidate vector in the database: exact.
"""

from __future__ import annotations

import logging
from typing import Any

from langgraph.checkpoint.sqlalchemy._engine import cursor
from langgraph.checkpoint.sqlalchemy.dialects import QueryBuilder
from langgraph.store.sqlalchemy import namespaces
from langgraph.store.sqlalchemy._scan import COLUMNS, Found, Named, many_under, readable
from langgraph.store.sqlalchemy._shapes import Native, SearchPlan, alive
from langgraph.store.sqlalchemy.tables import items, vectors
from langgraph.store.sqlalchemy.vectors import IndexSpec
from sqlalchemy import Connection, Select, and_, bindparam, select, true

__all__ = ["MAX_ROWS", "MAX_STATEMENTS", "build_index", "enable", "nearest", "probe"]

log = logging.getLogger("langgraph.store.sqlalchemy")

#: Most vector rows one search reads (pgvector's ``hnsw.max_scan_tuples`` is 20,000):
#: past it, the search returns what it found.
MAX_ROWS = 20_000


def probe(conn: Connection, qb: QueryBuilder, spec: IndexSpec) -> Native | None:
    """The store's :class:`Native` state here, or None (no native column: exact search,
    scored by the store)."""
    vi = qb.vector_index()
    if vi is None or not vi.enabled(conn, vectors):
        return None
    name = None
    if spec.ann.kind == "hnsw":  # the config's index, or the one it replaces until built
        name = vi.serving_index(conn, vectors, spec.dims, spec.distance, spec.ann)
    return Native(name, spec.dims, spec.distance, len(spec.fields), spec.ann)


def enable(conn: Connection, qb: QueryBuilder) -> bool:
    """Add (where the server can) the native vector column and fill it: setup()'s part
    after the migrations, for a server that gained the capability since."""
    vi = qb.vector_index()
    return vi is not None and vi.enable(conn, vectors)


def build_index(conn: Connection, qb: QueryBuilder, spec: IndexSpec) -> str | None:
    """Create the ANN index of ``spec`` (in autocommit: built concurrently) where the
    column is there and the config asks for one; its name, or None."""
    vi = qb.vector_index()
    if vi is None or spec.ann.kind != "hnsw" or not vi.enabled(conn, vectors):
        return None
    try:
        return vi.create_index(conn, vectors, spec.dims, spec.distance, spec.ann)
    except ValueError as e:  # too many dimensions for the index
        log.warning("no ANN index: %s", e)
        return None


def _statement(
    qb: QueryBuilder, spec: Native, indexed: bool, prefix: bool, filtered: list[Any]
) -> Select[Any]:
    """The search statement: bound parameters ``b_query`` (:attr:`.VectorIndex.QUERY`),
    ``b_now``, ``b_low``/``b_high`` (the prefix's range, when ``prefix``) and ``b_rows``;
    ``filtered`` are the filter's SQL conditions (their values bound by
    :class:`.Named`)."""
    vi = qb.vector_index()
    assert vi is not None
    t = vi.with_column(vectors)
    distance, held = vi.distance(vectors, spec.dims, spec.distance, indexed, spec.ann.vector_type)
    # The vectors drive, in the index's order; each one's item is looked up by its
    # primary key (a LATERAL subquery with LIMIT 1, which the planner keeps as such):
    # so the LIMIT stops the index scan, whatever the planner's estimates (a hash join
    # would read every vector of the prefix first). With the index, the prefix is a
    # condition of that lookup, not of the vectors: the driver prepares a statement run
    # often, and PostgreSQL's generic plan, blind to the bounds' values, takes a
    # range of the primary key for selective and sorts it (every vector of a large
    # prefix, 30 ms at 10,000) rather than walk the index.
    now = alive(bindparam("b_now"))
    if indexed:
        bounded = namespaces.bound_range(items.c.namespace) if prefix else []
        item = (
            select(*COLUMNS)
            .where(items.c.namespace == t.c.namespace, items.c.key == t.c.key, now)
            .where(*filtered, *bounded)
            .limit(1)
            .lateral("lgsa_item")
        )
        source = t.join(item, true())
        columns: list[Any] = [*item.c]
        conditions = [held]
    else:  # every vector of a (small) prefix scored: the planner joins as it likes
        source = t.join(items, and_(t.c.namespace == items.c.namespace, t.c.key == items.c.key))
        columns = [*COLUMNS]
        conditions = [held, now, *filtered]
        if prefix:
            conditions += namespaces.bound_range(t.c.namespace)
    inner = (
        select(*columns, distance.label("distance"))
        .select_from(source)
        .where(*conditions)
        .order_by(distance)
        .limit(bindparam("b_rows"))
    )
    return vi.searched(inner, spec.ann, bindparam("b_rows")) if indexed else inner


#: Search statements built once per dialect, native state, filter shape, use of the
#: index and presence of a prefix (as :func:`._reads._page_statement`'s); past
#: :data:`MAX_STATEMENTS`, a new one is built for its call only.
MAX_STATEMENTS = 256
_STATEMENTS: dict[Any, Select[Any]] = {}


def nearest(
    conn: Connection, qb: QueryBuilder, plan: SearchPlan, now: float, wanted: int
) -> list[Found]:
    """The ``wanted`` items closest to the query, best first, in the database.

    Args:
        conn: A connection: in a read transaction, or in autocommit for a lone search
            (every statement stands alone: the index's options are set within it).
        qb: The dialect's query builder (its :meth:`~.QueryBuilder.vector_index`).
        plan: The search, with its packed query and :class:`.Native` state.
        now: The read's clock (expired items are not found).
        wanted: ``offset + limit``.
    """
    vi, spec = qb.vector_index(), plan.native
    assert vi is not None and spec is not None and plan.query_blob is not None
    # Under a prefix of few items, scoring them all is exact and quicker than an index
    # walk that drops the other namespaces' vectors.
    indexed = spec.index is not None and not (plan.prefix and not many_under(conn, qb, plan))
    named = Named()
    filtered = plan.filter.conditions(qb, items.c.value, conn.dialect, named)
    key = (
        type(qb),
        qb.compile_key(conn.dialect),
        qb.indexed_fields,
        plan.filter.shape,
        spec,
        indexed,
        bool(plan.prefix),
    )
    stmt = _STATEMENTS.get(key)
    if stmt is None:
        stmt = _statement(qb, spec, indexed, bool(plan.prefix), filtered)
        if len(_STATEMENTS) < MAX_STATEMENTS:
            _STATEMENTS[key] = stmt
    params: dict[str, Any] = {**named.params, vi.QUERY: plan.query_blob, "b_now": now}
    if plan.prefix:
        params["b_low"], params["b_high"] = namespaces.bounds(plan.prefix)
    # An item has a row a field it embeds; a filter the SQL only narrows drops some.
    rows_wanted = wanted * max(1, spec.fields) * (1 if plan.filter.exact else 2)
    compile_key = qb.compile_key(conn.dialect)
    while True:
        params["b_rows"] = rows_wanted
        rows = cursor.rows(conn, stmt, params, compile_key)
        best: dict[tuple[str, str], tuple[float, Any]] = {}
        for row in rows:
            k = (str(row[0]), str(row[1]))
            score = vi.score(spec.distance, row[-1])
            if k not in best or score > best[k][0]:
                best[k] = (score, row)
        ranked = sorted(best.items(), key=lambda e: (-e[1][0], e[0]))
        out: list[Found] = []
        for _, (score, row) in ranked:
            hit = readable(row, score)
            if hit is not None and plan.filter.matches(hit[0].value):
                out.append(hit)
                if len(out) == wanted:
                    break
        if len(out) >= wanted or len(rows) < rows_wanted or rows_wanted >= MAX_ROWS:
            return out[:wanted]
        rows_wanted = min(MAX_ROWS, rows_wanted * 4)
