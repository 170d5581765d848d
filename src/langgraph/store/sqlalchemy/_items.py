"""The store's writes, its sweep and its totals, each operation a sync function on a
SQLAlchemy ``Connection`` (the reads are in :mod:`._reads`, the shapes both share in
:mod:`._shapes`).

The store's sync methods run them on its sync engine, its async methods through the
async door (``AsyncConnection.run_sync``, or a worker thread on SQLite): one
implementation, two doors (:class:`~langgraph.checkpoint.sqlalchemy._engine.runner.Runner`).
:func:`._reads.run_batch` runs a whole ``batch()`` in one transaction.

Every statement is a SQLAlchemy construct with bound parameters; no SQL text is built
from a namespace, key, value or filter. Nothing here embeds text: the store computes
embeddings before it opens a connection, so that no connection waits on a model.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import groupby
from operator import itemgetter
from typing import Any

import orjson

from langgraph.checkpoint.sqlalchemy._codec.batching import by_bytes
from langgraph.checkpoint.sqlalchemy._engine import cursor
from langgraph.checkpoint.sqlalchemy.dialects import QueryBuilder
from langgraph.checkpoint.sqlalchemy.schema import read_json
from langgraph.store.sqlalchemy._shapes import PAGE, PutRow, StoreStats, alive
from langgraph.store.sqlalchemy._sizes import value_sizes
from langgraph.store.sqlalchemy.tables import items, vectors
from sqlalchemy import (
    JSON,
    Connection,
    Double,
    Text,
    bindparam,
    delete,
    func,
    select,
    update,
)

__all__ = [
    "MAX_TTL_MINUTES",
    "delete_expired",
    "held",
    "one_statement",
    "put_rows",
    "refresh_ttl",
    "stats",
]

log = logging.getLogger("langgraph.store.sqlalchemy")

#: Largest TTL an item keeps, in minutes (about 7,600 years; PostgresStore's largest,
#: 2**31 - 1, fits): its expiry, pushed back by every read, stays a finite time inside a
#: datetime's range (a TTL of 1e308 made the refresh ``now + ttl * 60`` overflow).
MAX_TTL_MINUTES = 4_000_000_000

_DELETE_VECTORS = delete(vectors).where(
    vectors.c.namespace == bindparam("b_ns"), vectors.c.key == bindparam("b_key")
)
_ANY_VECTOR = select(vectors.c.key).limit(1)
_DELETE_ITEM = delete(items).where(
    items.c.namespace == bindparam("b_ns"), items.c.key == bindparam("b_key")
)


@dataclass
class _Upserts:
    """A dialect's upserts of the two tables, built once (the driver caches their
    compiled multi-row forms in ``forms``), and the bind types of their multi-row forms
    (``types``: the value as the JSON text written already)."""

    items: Any
    vectors: Any
    copies: Any
    types: dict[str, Any]
    native: Any = None
    forms: dict[Any, Any] = field(default_factory=dict)
    combined: dict[tuple[str, ...], Any] = field(default_factory=dict)
    deletes: dict[int, Any] = field(default_factory=dict)
    arrays: dict[int, Any] | None = None


_UPSERTS: dict[type[QueryBuilder], _Upserts] = {}
_ITEM_UPDATE = ("value", "updated_at", "expires_at", "ttl_minutes")
#: load_items: an item copied over one the target has takes its creation time.
_COPY_UPDATE = ("value", "created_at", "updated_at", "expires_at", "ttl_minutes")
_ITEM_COLUMNS = (
    "namespace",
    "key",
    "value",
    "created_at",
    "updated_at",
    "expires_at",
    "ttl_minutes",
)
_NO_TTL = _ITEM_COLUMNS[:5]  # expires_at and ttl_minutes left NULL
_VECTOR_COLUMNS = ("namespace", "key", "field", "embedding")


def _upserts(qb: QueryBuilder) -> _Upserts:
    found = _UPSERTS.get(type(qb))
    if found is None:
        found = _UPSERTS[type(qb)] = _Upserts(
            qb.upsert(items, _ITEM_UPDATE),
            qb.upsert(vectors, ["embedding"]),
            qb.upsert(items, _COPY_UPDATE),
            {"value": qb.json_text_type()},
        )
    return found


def one_statement(qb: QueryBuilder, rows: Sequence[PutRow]) -> bool:
    """Whether :func:`put_rows` writes ``rows`` in one statement, atomic on its own (no
    transaction needed): one item without vectors, where the dialect runs the vectors'
    delete in the upsert's ``WITH`` clause (PostgreSQL: one round trip a put)."""
    if not qb.dml_in_cte or len(rows) != 1:
        return False
    row = rows[0]
    return row.value is not None and not row.vectors and row.created_at is None


def _native_upsert(qb: QueryBuilder, up: _Upserts) -> Any:
    """The vectors' upsert that also fills the dialect's native vector column."""
    if up.native is None:
        vi = qb.vector_index()
        assert vi is not None
        up.native = qb.upsert(vi.with_column(vectors), ["embedding", vi.column_name])
    return up.native


def put_rows(
    conn: Connection, qb: QueryBuilder, rows: Sequence[PutRow], now: float, native: bool = False
) -> None:
    """Write items: upsert the values (``created_at`` kept on an update), delete the
    items whose value is None, and replace the vectors of every item written.

    The statements run on the driver's cursor, compiled once per dialect
    (:mod:`~langgraph.checkpoint.sqlalchemy._engine.cursor`), as the saver's puts do;
    each value is bound as the JSON text made when it was checked
    (:meth:`.QueryBuilder.json_text_type`), never serialised again.

    Args:
        conn: A connection in a write transaction.
        qb: The dialect's query builder (its upsert).
        rows: The items, at most one per ``(namespace, key)``.
        now: The write's clock, seconds since the epoch.
        native: Whether the vectors table has the dialect's native vector column
            (:meth:`.QueryBuilder.vector_index`), which the vectors' rows then fill
            from the same packed bytes.
    """
    key = qb.compile_key(conn.dialect)
    up = _upserts(qb)
    if one_statement(qb, rows):
        _, texts, _ = value_sizes(conn, qb, rows)
        row = rows[0]
        values = (row.namespace, row.key, texts[0], now, now, row.expires_at, row.ttl_minutes)
        stmt = up.combined.get(_ITEM_COLUMNS)
        if stmt is None:
            form = cursor.many_form(up.items, _ITEM_COLUMNS, 1, up.forms, up.types)
            stmt = up.combined[_ITEM_COLUMNS] = qb.combine_writes(form, _DELETE_VECTORS)
        params = dict(zip(_ONE_ROW, values, strict=True))
        params.update(b_ns=row.namespace, b_key=row.key)
        cursor.execute(conn, stmt, params, key)
        return
    # Items first, every row lock in one key order, deletes and upserts interleaved:
    # two batches touching the same keys then wait for each other instead of
    # deadlocking (all deletes first locked [delete k5, put k0..k4] against
    # [put k0..k5] in opposite orders), and a TTL sweep, which locks the expired items
    # before deleting their vectors, orders a re-put racing it. Consecutive rows of
    # one kind go as one statement: as many statements as runs of deletes or puts.
    rows = sorted(rows, key=_BY_KEY)
    sizes, texts, budget = value_sizes(conn, qb, rows)  # checked before any write
    upsert = up.copies if any(row.created_at is not None for row in rows) else up.items
    n = 0
    for deleting, grouped in groupby(rows, key=_deleting):
        run = list(grouped)
        count = len(run)
        if deleting:
            keys = [{"b_ns": r.namespace, "b_key": r.key} for r in run]
            cursor.execute_many(conn, _DELETE_ITEM, keys, key)
        else:
            kept = [
                (
                    (
                        r.namespace,
                        r.key,
                        texts[i],
                        now if r.created_at is None else r.created_at,
                        now if r.updated_at is None else r.updated_at,
                        r.expires_at,
                        r.ttl_minutes,
                    ),
                    sizes[i],
                )
                for i, r in enumerate(run, n)
            ]
            _insert_items(conn, qb, up, upsert, kept, budget, key)
        n += count
    _delete_vectors(conn, qb, up, rows, key)
    new_vectors: list[tuple[tuple[Any, ...], int]] = [
        ((row.namespace, row.key, name, blob), len(blob))
        for row in rows
        if row.value is not None
        for name, blob in row.vectors
    ]
    if not new_vectors:
        return
    upsert = up.vectors
    columns: tuple[str, ...] = _VECTOR_COLUMNS
    if native:
        upsert = _native_upsert(qb, up)
        vi = qb.vector_index()
        assert vi is not None
        columns = (*_VECTOR_COLUMNS, vi.column_name)  # the same bytes, as the native text
        new_vectors = [((*p, p[3]), 12 * size) for p, size in new_vectors]
    for part in by_bytes(new_vectors, budget):
        cursor.insert_values(conn, upsert, columns, part, key, up.forms)


#: The bound names of the one-row upsert's values (:func:`.cursor.many_form`).
_ONE_ROW = tuple(f"{c}_0" for c in _ITEM_COLUMNS)
_BY_KEY = itemgetter(0, 1)  # (namespace, key)


def _deleting(row: PutRow) -> bool:
    return row.value is None


def _insert_items(
    conn: Connection,
    qb: QueryBuilder,
    up: _Upserts,
    upsert: Any,
    rows: list[tuple[tuple[Any, ...], int]],
    budget: int,
    key: Any,
) -> None:
    """Item rows (values in :data:`_ITEM_COLUMNS` order, size) with ``upsert``, as
    statements of at most ``budget`` bytes each: one JSON document of rows where the
    dialect has that form (:meth:`.QueryBuilder.upsert_rows`), else multi-row
    ``VALUES``."""
    arrays = _arrays(qb, up)
    form = None if arrays is None else arrays.get(id(upsert))
    for part in by_bytes(rows, budget):
        if form is None:
            columns: tuple[str, ...] = _ITEM_COLUMNS
            if all(r[5] is None and r[6] is None for r in part):
                # No TTL: the columns left out, NULL (bound NULLs cost the driver most).
                columns, part = _NO_TTL, [r[:5] for r in part]
            cursor.insert_values(conn, upsert, columns, part, key, up.forms, up.types)
        else:
            # Each value's text goes in as it is, a JSON element (not a string of it).
            doc = _dumps([(*r[:2], _Fragment(r[2]), *r[3:]) for r in part])
            cursor.execute(conn, form, {"rows": doc.decode()}, key)


#: The type of each item column's JSON element (:meth:`.QueryBuilder.upsert_rows`): the
#: value as its JSON document itself.
_ELEMENTS = {
    **dict.fromkeys(("namespace", "key"), Text()),
    "value": JSON(),
    **dict.fromkeys(("created_at", "updated_at", "expires_at", "ttl_minutes"), Double()),
}


_dumps = orjson.dumps
_Fragment = orjson.Fragment


def _arrays(qb: QueryBuilder, up: _Upserts) -> dict[int, Any] | None:
    """The dialect's JSON-rows forms of the item upserts (by the id of each), or None."""
    if up.arrays is None:
        found = {}
        for upsert, update in ((up.items, _ITEM_UPDATE), (up.copies, _COPY_UPDATE)):
            form = qb.upsert_rows(items, _ITEM_COLUMNS, update, _ELEMENTS)
            if form is not None:
                found[id(upsert)] = form
        up.arrays = found
    return up.arrays or None


def _delete_vectors(
    conn: Connection,
    qb: QueryBuilder,
    up: _Upserts,
    rows: Sequence[PutRow],
    key: Any,
) -> None:
    """Delete the vectors of ``rows``: one statement a :attr:`.QueryBuilder.in_list_chunk`
    of keys (the driver's executemany for one). Where writers take turns
    (:attr:`.QueryBuilder.serial_writes`), none when the vectors table is empty: read
    after the items were written, nothing can add a vector before the commit (a store
    without an index config never has one)."""
    if len(rows) == 1:
        keys = [{"b_ns": rows[0].namespace, "b_key": rows[0].key}]
        cursor.execute_many(conn, _DELETE_VECTORS, keys, key)
        return
    if qb.serial_writes and not cursor.rows(conn, _ANY_VECTOR, {}, key):
        return
    step = max(1, qb.in_list_chunk)
    columns = (vectors.c.namespace, vectors.c.key)
    for start in range(0, len(rows), step):
        chunk = [(r.namespace, r.key) for r in rows[start : start + step]]
        stmt = up.deletes.get(len(chunk))
        if stmt is None:
            stmt = up.deletes[len(chunk)] = delete(vectors).where(qb.keys_in(columns, len(chunk)))
        params = partial(qb.keys_params, chunk)
        cursor.execute_rows(conn, stmt, qb.key_labels(2), chunk, key, params)


# -- TTL and statistics ---------------------------------------------------------------


def refresh_ttl(conn: Connection, keys: Sequence[tuple[str, str]], now: float) -> None:
    """Push back the expiry of the items ``keys`` (``(namespace, key)``) that have a TTL
    and have not expired: ``expires_at = now + ttl_minutes`` (LangGraph's
    ``refresh_ttl`` on reads)."""
    if keys:
        conn.execute(
            _REFRESH, [{"b_ns": ns, "b_key": key, "b_now": now} for ns, key in sorted(set(keys))]
        )


_REFRESH = (
    update(items)
    .where(
        items.c.namespace == bindparam("b_ns"),
        items.c.key == bindparam("b_key"),
        items.c.ttl_minutes.is_not(None),
        # A forged TTL above the maximum is not refreshed: its refresh would overflow
        # (PostgreSQL: DataError) and fail every refreshing read of the namespace.
        items.c.ttl_minutes <= MAX_TTL_MINUTES,
        items.c.expires_at > bindparam("b_now"),
    )
    .values(expires_at=bindparam("b_now") + items.c.ttl_minutes * 60.0)
)


def held(
    conn: Connection, keys: Sequence[tuple[str, str]], with_vectors: bool
) -> tuple[dict[tuple[str, str], Any], set[tuple[str, str]]]:
    """The stored rows of ``keys`` (``(namespace text, key)``), expired ones included and
    no TTL refreshed, and which of them have vectors (read only ``with_vectors``): what a
    copy compares its source with.

    Returns:
        ``(rows, embedded)``: the rows (``namespace, key, value, created_at, updated_at,
        expires_at, ttl_minutes``) by key, and the keys that have vectors.
    """
    by_ns: dict[str, list[str]] = defaultdict(list)
    for ns, key in keys:
        by_ns[ns].append(key)
    c, v = items.c, vectors.c
    rows: dict[tuple[str, str], Any] = {}
    embedded: set[tuple[str, str]] = set()
    for ns, ks in by_ns.items():
        for start in range(0, len(ks), PAGE):
            chunk = ks[start : start + PAGE]
            stmt = select(
                c.namespace,
                c.key,
                read_json(c.value),
                c.created_at,
                c.updated_at,
                c.expires_at,
                c.ttl_minutes,
            ).where(c.namespace == ns, c.key.in_(chunk))
            for row in conn.execute(stmt):
                rows[(str(row[0]), str(row[1]))] = row
            if with_vectors:
                found = select(v.namespace, v.key).where(v.namespace == ns, v.key.in_(chunk))
                embedded.update((str(a), str(b)) for a, b in conn.execute(found.distinct()))
    return rows, embedded


def delete_expired(conn: Connection, now: float) -> int:
    """Delete the items whose ``expires_at`` has passed, and their vectors.

    The expired items are locked first (``SELECT ... FOR UPDATE``; SQLite's write
    transaction locks the database), so that a put of one of them waits for the sweep
    and then writes the item and its vectors anew.

    Returns:
        The number of items deleted.
    """
    expired = (
        select(items.c.namespace, items.c.key)
        .where(items.c.expires_at <= now)
        .order_by(items.c.namespace, items.c.key)
        .with_for_update()
    )
    keys = [(str(ns), str(key)) for ns, key in conn.execute(expired)]
    for ns, ks in _by_namespace(keys).items():
        for start in range(0, len(ks), PAGE):
            chunk = ks[start : start + PAGE]
            conn.execute(delete(vectors).where(vectors.c.namespace == ns, vectors.c.key.in_(chunk)))
            conn.execute(
                delete(items).where(
                    items.c.namespace == ns, items.c.key.in_(chunk), items.c.expires_at <= now
                )
            )
    return len(keys)


def _by_namespace(keys: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for ns, key in keys:
        out[ns].append(key)
    return out


def stats(conn: Connection, now: float) -> StoreStats:
    """Count the items, namespaces, vectors and expired items (one statement each)."""
    live = alive(now)
    count = func.count()
    return StoreStats(
        items=int(conn.execute(select(count).select_from(items).where(live)).scalar_one()),
        namespaces=int(
            conn.execute(select(func.count(items.c.namespace.distinct())).where(live)).scalar_one()
        ),
        vectors=int(conn.execute(select(count).select_from(vectors)).scalar_one()),
        expired=int(
            conn.execute(
                select(count).select_from(items).where(items.c.expires_at <= now)
            ).scalar_one()
        ),
    )
