"""``list()``: its conditions (:func:`list_query`) and one page of it, the checkpoint
rows of a listing, their values and writes (:func:`list_page`).

Runs on a connection as the operations of :mod:`._ops.checkpoints` do (three statements a page,
inside one read transaction); the plan of ``list()`` (:class:`._plans.methods.Pages`) yields a
page once its connection went back to the pool.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from langgraph.checkpoint.sqlalchemy._codec.canonical import (
    MAX_FILTER_KEYS,
    canonical_json,
    scalar_as_stored,
)
from langgraph.checkpoint.sqlalchemy._codec.configs import configurable, namespace, text_id
from langgraph.checkpoint.sqlalchemy._codec.metakeys import COLUMN_KEYS
from langgraph.checkpoint.sqlalchemy._codec.pieces import StoredValue
from langgraph.checkpoint.sqlalchemy._codec.records import BlobKey, CheckpointKey, CheckpointRecord
from langgraph.checkpoint.sqlalchemy._ops.checkpoints import CHECKPOINT_COLUMNS, Statements, chunks
from langgraph.checkpoint.sqlalchemy.dialects import QueryBuilder
from langgraph.checkpoint.sqlalchemy.errors import CheckpointMetadataError
from langgraph.checkpoint.sqlalchemy.schema import (
    ID_MAX_LENGTH,
    THREAD_ID_MAX_LENGTH,
    checkpoints,
    promoted_source,
    promoted_step,
    run_key,
    stored_full,
)
from sqlalchemy import Connection, Select, literal, select
from sqlalchemy.sql.elements import ColumnElement

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

__all__ = ["ListQuery", "list_page", "list_query"]

logger = logging.getLogger("langgraph.checkpoint.sqlalchemy")


@dataclass(frozen=True)
class ListQuery:
    """What one ``list()`` call asks for, turned into SQL conditions once.

    Rows come newest first: ``checkpoint_id, thread_id, checkpoint_ns`` descending, or,
    when ``where`` fixes one thread and namespace, in the dialect's ``order`` for that
    (:meth:`.QueryBuilder.one_namespace`): the same rows in the same order, spelled so
    that a backward scan of the primary key serves the listing whatever the planner's
    statistics (with stale ones PostgreSQL walked the checkpoint-id index across every
    thread instead). One thread in every namespace is the same order too, spelled for
    ``ix_lgsa_checkpoints_thread`` (:meth:`.QueryBuilder.one_thread`).

    Attributes:
        where: Conditions on the checkpoints table (thread, namespace, before).
        filters: Metadata equality filters ``(key, JSON value)``, checked already; made
            into SQL per connection, whose dialect decides (MariaDB behind ``mysql://``).
        order: ``ORDER BY`` columns (descending) when ``where`` holds one thread (and
            maybe one namespace), else empty (the default order).
        every_namespace: ``where`` holds one thread and no namespace: ``order`` is the
            dialect's for ``ix_lgsa_checkpoints_thread``, pages follow ``checkpoint_id,
            checkpoint_ns``.
        index_keys: The metadata keys the saver indexes (its ``metadata_index_keys``); a
            filter on one of them that the database lists as complete reads the index
            (:mod:`._ops.metaindex`).
        across_threads: No thread is fixed (``list(None, ...)``).
    """

    where: tuple[ColumnElement[bool], ...]
    filters: tuple[tuple[str, Any], ...] = ()
    order: tuple[Any, ...] = ()
    every_namespace: bool = False
    index_keys: frozenset[str] = frozenset()
    across_threads: bool = False


def list_query(
    qb: QueryBuilder,
    config: RunnableConfig | None,
    filter: dict[str, Any] | None,
    before: RunnableConfig | None,
    index_keys: Collection[str] = (),
) -> ListQuery:
    """The conditions of a ``list()`` call, checked before any query runs.

    Args:
        qb: The saver's query builder (its order for one namespace, its filter checks).
        config: ``list()``'s config: None for every thread.
        filter: Its metadata filter.
        before: Its ``before`` config.
        index_keys: The metadata keys the saver indexes (:attr:`ListQuery.index_keys`).

    Raises:
        CheckpointConfigError: A config without ``thread_id`` or with bad ids.
        CheckpointMetadataError: A filter that is not a dict of JSON values.
    """
    where, order, every = _thread_where(config, qb) if config is not None else ([], (), False)
    if before is not None:
        before_id = text_id(
            configurable(before).get("checkpoint_id"),
            "checkpoint_id",
            ID_MAX_LENGTH,
            required=True,
        )
        where.append(checkpoints.c.checkpoint_id < before_id)
    across = config is None
    if not filter:
        return ListQuery(tuple(where), order=order, every_namespace=every, across_threads=across)
    filters = _filtered(qb, where, filter)
    keys = frozenset(index_keys)
    return ListQuery(tuple(where), filters, order, every, keys, across)


def _filtered(
    qb: QueryBuilder, where: list[ColumnElement[bool]], filter: dict[str, Any]
) -> tuple[tuple[str, Any], ...]:
    """The JSON filters of ``filter``, checked; the conditions the promoted columns
    answer go into ``where``."""
    if not isinstance(filter, dict):
        raise CheckpointMetadataError(
            f"filter must be a dict of metadata keys to JSON values, got {type(filter).__name__}."
        )
    if len(filter) > MAX_FILTER_KEYS:
        raise CheckpointMetadataError(
            f"a metadata filter has {len(filter)} keys; the limit is {MAX_FILTER_KEYS} "
            "(each key is one condition of the query, and SQLite refuses about 1,000). "
            "Filter on fewer keys and check the rest in Python on the listed tuples."
        )
    json_filters = []
    for key, value in filter.items():
        try:
            # Refuse a bad filter before any query runs.
            qb.check_filter(key, value)
        except (TypeError, ValueError) as e:
            raise CheckpointMetadataError(f"invalid metadata filter {key!r}: {e}") from e
        # The promoted columns answer LangGraph's own keys exactly (same JSON
        # semantics); other keys and values query the JSON document.
        if key == "source" and (source := promoted_source(value)) is not None:
            where.append(checkpoints.c.source == canonical_json(source))
        elif key == "step" and (step := promoted_step(value)) is not None:
            where.append(checkpoints.c.step == step)
        else:
            if key == "run_id" and isinstance(value, str):
                # The indexed run_id column holds every string run id (rechecked:
                # a long one is a digest).
                where.append(checkpoints.c.run_id == run_key(value.replace("\x00", "")))
            json_filters.append((key, value))
    return tuple(json_filters)


def _thread_where(
    config: RunnableConfig, qb: QueryBuilder
) -> tuple[list[ColumnElement[bool]], tuple[Any, ...], bool]:
    """Conditions of a ``list()`` config (its thread, namespace and checkpoint), the
    order the dialect lists one namespace, or one thread's namespaces, in, and whether
    it is every namespace (:attr:`ListQuery.every_namespace`)."""
    c = configurable(config)
    thread_id = cast(
        str, text_id(c.get("thread_id"), "thread_id", THREAD_ID_MAX_LENGTH, required=True)
    )
    if c.get("checkpoint_ns") is not None:
        ns = namespace(c["checkpoint_ns"])
        where, order = qb.one_namespace(checkpoints, thread_id, ns)
        if stored_full(ns) is not None:
            where.append(checkpoints.c.checkpoint_ns_full == ns)
    else:
        where, order = qb.one_thread(checkpoints, thread_id)
    if stored_full(thread_id) is not None:
        # A digest key is never trusted alone: the text must match too.
        where.append(checkpoints.c.thread_id_full == thread_id)
    checkpoint_id = text_id(c.get("checkpoint_id"), "checkpoint_id", ID_MAX_LENGTH, required=False)
    if checkpoint_id:
        where.append(checkpoints.c.checkpoint_id == checkpoint_id)
    return where, order, c.get("checkpoint_ns") is None


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
    elif query.every_namespace and not query.filters:
        stmt = st.qb.walk_thread(conn, stmt, checkpoints)
    served, unserved = False, []
    for key, value in query.filters:
        # metadata_equals, its check done once for both conditions.
        name, text = st.qb.check_filter(key, value)
        found = st.qb.metadata_index_filter(checkpoints, name, text, name in indexed)
        if found is not None:
            stmt = stmt.where(found)
        served = served or found is not None or (name == "run_id" and isinstance(value, str))
        if found is None and name not in COLUMN_KEYS:
            unserved.append(name)
        value = scalar_as_stored(value)  # NUL removed, as from stored metadata
        member = st.qb.json_member_equals(c.metadata, name, value, text, conn.dialect, literal)
        stmt = stmt.where(member)
    if query.across_threads and cursor is None and not served:
        _warn_scan(st, unserved, query.index_keys)
    if cursor is not None and query.every_namespace:
        # Keyset pagination, thread fixed: before the last row by id, then namespace.
        after = (c.checkpoint_id, c.checkpoint_ns)
        stmt = stmt.where(st.qb.rows_before(after, (cursor[2], cursor[1])))
    elif cursor is not None and query.order:
        # Keyset pagination, thread and namespace fixed: older ids than the last row's.
        stmt = stmt.where(c.checkpoint_id < cursor[2])
    elif cursor is not None:
        # Keyset pagination: strictly after the last row of the previous page.
        stmt = stmt.where(st.qb.rows_before(order, (cursor[2], cursor[0], cursor[1])))
    return stmt.order_by(*(c.desc() for c in order)).limit(size)


def _warn_scan(st: Statements, keys: list[str], configured: frozenset[str]) -> None:
    """Log, once per key and saver, a filter across threads that no index serves: it
    reads the checkpoints newest first until its page is full, every checkpoint when
    few match (SQLite, MySQL/MariaDB: keys outside ``metadata_index_keys``)."""
    for key in keys:
        if not st.first_scan(key):
            continue
        fix = (
            "run reindex_metadata() (or the reindex-metadata command) once to index "
            "the stored checkpoints"
            if key in configured
            else "add it to the saver's metadata_index_keys on every writer, then run "
            "reindex_metadata() once"
        )
        logger.warning(
            "list() filters on metadata key %r across threads, which no index serves on "
            "this database: it reads the checkpoints newest first until its page is full "
            "(all of them when few match), slower as the store grows. To have it indexed, "
            "%s. Logged once per key and saver.",
            key,
            fix,
        )


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
    found: dict[BlobKey, StoredValue] = {}
    for chunk in chunks(list(blob_keys), st.qb.in_list_chunk):
        found.update(st.values_in(conn, chunk))
    for r in records:
        for ch, v in r.versions.items():
            if ch in r.values:
                continue
            hit = found.get((r.row.thread_id, r.row.checkpoint_ns, ch, v))
            if hit is not None:
                r.take(ch, hit)
    for chunk in chunks(list(by_key), st.qb.in_list_chunk):
        for w in st.writes_in(conn, chunk):
            owner = by_key.get((w.thread_id, w.checkpoint_ns, w.checkpoint_id))
            if owner is not None:
                owner.writes.append((w.task_id, w.task_path, w.idx, w.channel, w.type, w.blob))
    return records
