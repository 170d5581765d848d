"""One page of ``list()``: the checkpoint rows of a listing, their values and writes.

Runs on a connection as the operations of :mod:`._ops.checkpoints` do (three statements a page,
inside one read transaction); the plan of ``list()`` (:class:`._plans.methods.Pages`) yields a
page once its connection went back to the pool.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.sqlalchemy._codec.canonical import scalar_as_stored
from langgraph.checkpoint.sqlalchemy._ops.checkpoints import (
    CHECKPOINT_COLUMNS,
    BlobKey,
    CheckpointKey,
    CheckpointRecord,
    Statements,
    chunks,
)
from langgraph.checkpoint.sqlalchemy.schema import checkpoints
from sqlalchemy import Connection, Select, literal, select
from sqlalchemy.sql.elements import ColumnElement

__all__ = ["ListQuery", "list_page"]


@dataclass(frozen=True)
class ListQuery:
    """What one ``list()`` call asks for, turned into SQL conditions once.

    Rows come newest first: ``checkpoint_id, thread_id, checkpoint_ns`` descending, or,
    when ``where`` fixes one thread and namespace, in the dialect's ``order`` for that
    (:meth:`.QueryBuilder.one_namespace`): the same rows in the same order, spelled so
    that a backward scan of the primary key serves the listing whatever the planner's
    statistics (with stale ones PostgreSQL walked the checkpoint-id index across every
    thread instead).

    Attributes:
        where: Conditions on the checkpoints table (thread, namespace, before).
        filters: Metadata equality filters ``(key, JSON value)``, checked already; made
            into SQL per connection, whose dialect decides (MariaDB behind ``mysql://``).
        order: ``ORDER BY`` columns (descending) when ``where`` holds one thread and one
            namespace, else empty (the default order).
        index_keys: The metadata keys the saver indexes (its ``metadata_index_keys``); a
            filter on one of them that the database lists as complete reads the index
            (:mod:`._ops.metaindex`).
        across_threads: No thread is fixed (``list(None, ...)``).
    """

    where: tuple[ColumnElement[bool], ...]
    filters: tuple[tuple[str, Any], ...] = ()
    order: tuple[Any, ...] = ()
    index_keys: frozenset[str] = frozenset()
    across_threads: bool = False


def _page_select(
    conn: Connection, st: Statements, query: ListQuery, cursor: CheckpointKey | None, size: int
) -> Select[Any]:
    c = checkpoints.c
    order = query.order or (c.checkpoint_id, c.thread_id, c.checkpoint_ns)
    stmt = select(*CHECKPOINT_COLUMNS).where(*query.where)
    indexed = query.index_keys & st.indexed_keys(conn) if query.filters else frozenset()
    if query.across_threads and not query.filters:
        # Conditions the checkpoint-id index's entries decide (step, source, before).
        stmt = st.qb.walk_newest_first(stmt, checkpoints)
    for key, value in query.filters:
        # metadata_equals, its check done once for both conditions.
        name, text = st.qb.check_filter(key, value)
        found = st.qb.metadata_index_filter(checkpoints, name, text, name in indexed)
        if found is not None:
            stmt = stmt.where(found)
        value = scalar_as_stored(value)  # NUL removed, as from stored metadata
        member = st.qb.json_member_equals(c.metadata, name, value, text, conn.dialect, literal)
        stmt = stmt.where(member)
    if cursor is not None and query.order:
        # Keyset pagination, thread and namespace fixed: older ids than the last row's.
        stmt = stmt.where(c.checkpoint_id < cursor[2])
    elif cursor is not None:
        # Keyset pagination: strictly after the last row of the previous page.
        stmt = stmt.where(st.qb.rows_before(order, (cursor[2], cursor[0], cursor[1])))
    return stmt.order_by(*(c.desc() for c in order)).limit(size)


def list_page(
    conn: Connection,
    st: Statements,
    query: ListQuery,
    cursor: CheckpointKey | None,
    size: int,
) -> list[CheckpointRecord]:
    """Fetch one page of ``list()``: up to ``size`` checkpoints after ``cursor``.

    Three round trips a page whatever its size: the checkpoint rows, the blobs of all
    their channel versions (deduplicated), the writes of all of them.

    Args:
        conn: A connection, released by the caller before the page is yielded.
        st: The saver's statements.
        query: The listing's conditions.
        cursor: ``(thread_id, checkpoint_ns, checkpoint_id)`` of the last checkpoint of
            the previous page, or None for the first page.
        size: Page size (rows).

    Returns:
        The page, newest first; fewer than ``size`` records means the listing is done.
    """
    rows = conn.execute(_page_select(conn, st, query, cursor, size)).all()
    records = [CheckpointRecord.of(row) for row in rows]
    if not records:
        return records
    by_key = {(r.row.thread_id, r.row.checkpoint_ns, r.row.checkpoint_id): r for r in records}
    blob_keys: dict[BlobKey, None] = {}
    for r in records:
        for ch, v in r.versions.items():  # checked; empty for a damaged row
            if ch not in r.values:
                blob_keys[(r.row.thread_id, r.row.checkpoint_ns, ch, v)] = None
    found: dict[BlobKey, tuple[str, bytes | None]] = {}
    for chunk in chunks(list(blob_keys), st.qb.in_list_chunk):
        for t, ns, ch, v, type_, blob in st.blobs_in(conn, chunk):
            found[(t, ns, ch, v)] = (type_, blob)
    for r in records:
        for ch, v in r.versions.items():
            if ch in r.values:
                continue
            hit = found.get((r.row.thread_id, r.row.checkpoint_ns, ch, v))
            if hit is not None:
                r.values[ch] = hit
    for chunk in chunks(list(by_key), st.qb.in_list_chunk):
        for w in st.writes_in(conn, chunk):
            owner = by_key.get((w.thread_id, w.checkpoint_ns, w.checkpoint_id))
            if owner is not None:
                owner.writes.append((w.task_id, w.task_path, w.idx, w.channel, w.type, w.blob))
    return records
