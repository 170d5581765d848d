"""The store's reads, and :func:`run_batch`, which runs a whole ``batch()`` in one
transaction: its reads first (they see the data as it was before the batch, as
``InMemoryStore``), then their TTL refreshes, then its writes (:func:`._items.put_rows`).

Search pages newest first in the database when the filter is decided there
(:attr:`.filters.Filter.exact`; one cached statement a filter shape, the values bound),
else reads candidates :data:`._shapes.PAGE` at a time, each page after the last row of
the one before, and checks each with the filter's predicate (:mod:`._scan`, which also
ranks vector searches).
``list_namespaces`` pages distinct namespaces in the database; with ``max_depth`` it
jumps over the range below each truncated namespace.
"""

from __future__ import annotations

import os
import threading
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import Item

from langgraph.checkpoint.sqlalchemy._engine import cursor
from langgraph.checkpoint.sqlalchemy._engine.lane import capable
from langgraph.checkpoint.sqlalchemy.dialects import QueryBuilder
from langgraph.store.sqlalchemy import namespaces
from langgraph.store.sqlalchemy._items import put_rows, refresh_ttl
from langgraph.store.sqlalchemy._nearest import nearest
from langgraph.store.sqlalchemy._scan import (
    COLUMNS,
    NEWEST,
    Found,
    Named,
    candidates,
    many_under,
    matching,
    readable,
    vector_search,
)
from langgraph.store.sqlalchemy._shapes import (
    PAGE,
    Batch,
    GetPlan,
    ListPlan,
    SearchPlan,
    alive,
    item_of,
)
from langgraph.store.sqlalchemy.tables import SEPARATOR, items
from sqlalchemy import Connection, Select, bindparam, select

__all__ = ["GET_CHUNK", "BatchResult", "get_one", "run_batch"]

_LIVE = alive(bindparam("b_now"))
#: One item (a ``get``), built once: its compiled form is cached.
_GET = select(*COLUMNS).where(
    items.c.namespace == bindparam("b_ns"), items.c.key == bindparam("b_key"), _LIVE
)
_GET_MANY = select(*COLUMNS).where(
    items.c.namespace == bindparam("b_ns"),
    items.c.key.in_(bindparam("b_keys", expanding=True)),
    _LIVE,
)
#: Keys of one namespace read by one statement of a batch's gets: any number of gets
#: runs, in statements of at most this many bound keys (psycopg takes 65,535 parameters
#: a statement, SQLite 32,766).
GET_CHUNK = 500


@dataclass
class BatchResult:
    """What :func:`run_batch` returns.

    Attributes:
        results: One result per operation of the batch (None for puts).
        refresh: ``(namespace, key)`` of the items read whose TTL the read refreshes,
            when the batch ran in a read transaction (else refreshed already).
    """

    results: list[Any]
    refresh: list[tuple[str, str]] = field(default_factory=list)


@capable
def get_one(
    conn: Connection, qb: QueryBuilder, plan: GetPlan, now: float
) -> tuple[Item | None, bool]:
    """A lone ``get``: one statement, so that it may take the short door
    (:func:`~langgraph.checkpoint.sqlalchemy._engine.lane.capable`).

    Returns:
        The item or None, and whether its TTL is to be refreshed (the caller does it in
        a write of its own, as :func:`run_batch` leaves it to a batch run in a read).
    """
    params = {"b_ns": plan.namespace, "b_key": plan.key, "b_now": now}
    rows = cursor.rows(conn, _GET, params, qb.compile_key(conn.dialect))
    if not rows:
        return None, False
    row = rows[0]
    return item_of(row), plan.refresh and row[5] is not None


def run_batch(conn: Connection, qb: QueryBuilder, batch: Batch) -> BatchResult:
    """Run a prepared batch in the caller's transaction: its reads, then (when it writes)
    the TTL refreshes of what it read and its puts and deletes.

    Returns:
        The :class:`BatchResult`.
    """
    results: list[Any] = [None] * batch.count
    refresh: list[tuple[str, str]] = []
    gets: dict[str, list[tuple[int, GetPlan]]] = defaultdict(list)
    for i, plan in batch.reads:
        if isinstance(plan, GetPlan):
            gets[plan.namespace].append((i, plan))
        elif isinstance(plan, SearchPlan):
            found = _search(conn, qb, plan, batch.now)
            results[i] = [item for item, _ in found]
            if plan.refresh:
                refresh.extend((str(r[0]), str(r[1])) for _, r in found if r[5] is not None)
        else:
            results[i] = _list_namespaces(conn, qb, plan, batch.now)
    for ns, wanted in gets.items():
        rows: Sequence[Any]
        if len(wanted) == 1:
            params: dict[str, Any] = {"b_ns": ns, "b_key": wanted[0][1].key, "b_now": batch.now}
            rows = cursor.rows(conn, _GET, params, qb.compile_key(conn.dialect))
        else:
            keys = sorted({plan.key for _, plan in wanted})
            many: list[Any] = []
            for start in range(0, len(keys), GET_CHUNK):
                chunk = keys[start : start + GET_CHUNK]
                many += conn.execute(_GET_MANY, {"b_ns": ns, "b_keys": chunk, "b_now": batch.now})
            rows = many
        by_key = {str(row[1]): row for row in rows}
        for i, plan in wanted:
            row = by_key.get(plan.key)
            results[i] = item_of(row) if row is not None else None
            if row is not None and plan.refresh and row[5] is not None:
                refresh.append((ns, plan.key))
    if not batch.puts:
        return BatchResult(results, refresh)
    refresh_ttl(conn, refresh, batch.now)
    put_rows(conn, qb, batch.puts, batch.now, batch.native)
    return BatchResult(results)


# -- search ---------------------------------------------------------------------------


#: Most search statements kept (:func:`_page_statement`), one per dialect, filter shape
#: (keys and types of their values), prefix presence and walk; past it, a new shape's
#: statement is built for its call only.
MAX_STATEMENTS = 512
_STATEMENTS: dict[Any, Select[Any]] = {}
#: Most filter values whose parameters are kept (a search repeated with the same values
#: skips building its conditions: 170 microseconds on SQLite), and the most text they
#: may hold; the oldest go first.
MAX_PARAMS = 1024
MAX_PARAMS_TEXT = 256
_PARAMS: dict[Any, dict[str, Any]] = {}
_PARAMS_LOCK = threading.Lock()


def _after_fork_in_child() -> None:
    """In a child process after ``fork()``: another thread of the parent may have held
    :data:`_PARAMS_LOCK` at the moment of the fork, and nothing would release it here.
    The kept parameters stay (plain values)."""
    global _PARAMS_LOCK
    _PARAMS_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _page_statement(
    conn: Connection, qb: QueryBuilder, plan: SearchPlan, walk: bool
) -> tuple[Select[Any] | None, dict[str, Any]]:
    """The statement of a search page decided in the database, built once per dialect,
    filter shape (:attr:`.filters.Filter.shape`) and presence of a prefix (bound
    parameters ``b_now``, ``b_low``, ``b_high``, ``b_limit``, ``b_offset`` and the filter
    values' ``b_f0``, ``b_f1``, ...), so that a repeated search runs its compiled form on
    the driver's cursor (:func:`~langgraph.checkpoint.sqlalchemy._engine.cursor.rows`); and
    the filter values' parameters.
    None past :data:`MAX_STATEMENTS`."""
    key = (
        type(qb),
        qb.compile_key(conn.dialect),
        qb.indexed_fields,
        plan.filter.shape,
        bool(plan.prefix),
        walk,
    )
    found = _STATEMENTS.get(key)
    # The values as keys (repr: 1, 1.0 and True apart, -0.0 and 0.0 apart).
    values = (key, repr(plan.filter.items))
    known = _PARAMS.get(values)
    if found is not None and known is not None:
        return found, dict(known)
    named = Named()
    conditions = [_LIVE, *plan.filter.conditions(qb, items.c.value, conn.dialect, named)]
    if sum(len(v) for v in named.params.values() if isinstance(v, str)) <= MAX_PARAMS_TEXT:
        with _PARAMS_LOCK:
            _PARAMS[values] = dict(named.params)
            while len(_PARAMS) > MAX_PARAMS:
                del _PARAMS[next(iter(_PARAMS))]
    if found is not None or len(_STATEMENTS) >= MAX_STATEMENTS:
        return found, named.params
    if plan.prefix:
        # Walking the updated_at index: the namespace is checked in each entry, not
        # used to pick the primary key's range (an expression no index serves).
        column: Any = qb.walk_column(items.c.namespace) if walk else items.c.namespace
        conditions += namespaces.bound_range(column)
    stmt = (
        select(*COLUMNS)
        .where(*conditions)
        .order_by(*NEWEST)
        .limit(bindparam("b_limit"))
        .offset(bindparam("b_offset"))
    )
    _STATEMENTS[key] = stmt
    return stmt, named.params


def _walk(conn: Connection, qb: QueryBuilder, plan: SearchPlan) -> bool:
    """Whether the search walks the ``updated_at`` index (:func:`._scan.many_under`):
    not when the filter reads an indexed field, whose index the planner may pick. The
    dialect is told (:meth:`.QueryBuilder.walking`) either way: an earlier search of the
    batch may have made its planner walk."""
    walk = not plan.filter.uses_index(qb.indexed_fields) and many_under(conn, qb, plan)
    qb.walking(conn, walk)
    return walk


def _search(conn: Connection, qb: QueryBuilder, plan: SearchPlan, now: float) -> list[Found]:
    if plan.limit <= 0:
        return []
    if plan.query is not None:
        return vector_search(conn, qb, plan, now, None if plan.native is None else nearest)
    # A filter on an indexed field: the namespace is checked in each entry (as in a
    # walk), so that the planner may pick the field's index over the prefix's range.
    indexed = plan.filter.uses_index(qb.indexed_fields)
    # A large prefix (or the whole store) is walked newest first whatever the filter:
    # the page's first matches end the walk. (A filter decided in Python reads every
    # candidate a page at a time, :func:`_pages`: the walk from each page's last entry
    # reads each once, where a scan of the prefix's range was sorted again a page.)
    walk = _walk(conn, qb, plan)
    if plan.filter.exact:
        low, high = namespaces.bounds(plan.prefix)
        cached, params = _page_statement(conn, qb, plan, walk or indexed)
        if cached is not None:
            params.update(b_now=now, b_low=low, b_high=high)
            params.update(b_limit=plan.limit, b_offset=plan.offset)
            found = cursor.rows(conn, cached, params, qb.compile_key(conn.dialect))
            return [f for f in (readable(row) for row in found) if f is not None]
    stmt = select(*COLUMNS).where(*candidates(conn, qb, plan, now, walk or indexed))
    stmt = stmt.order_by(*NEWEST)
    if plan.filter.exact:
        rows = conn.execute(stmt.limit(plan.limit).offset(plan.offset)).all()
        return [f for f in (readable(row) for row in rows) if f is not None]
    return matching(conn, qb, stmt, plan, plan.offset + plan.limit)[plan.offset :]


# -- namespaces -----------------------------------------------------------------------


def _list_namespaces(
    conn: Connection, qb: QueryBuilder, plan: ListPlan, now: float
) -> list[tuple[str, ...]]:
    """The distinct namespaces matching every condition, in tuple order, truncated to
    ``max_depth`` labels (deduplicated), paged by ``offset``/``limit``."""
    if plan.limit <= 0:
        return []
    column = items.c.namespace
    conditions: list[Any] = [alive(now)]
    for cond in plan.conditions:
        head = namespaces.literal_head(cond)
        if head:
            narrowed = namespaces.under(column, namespaces.encode(head, prefix=True))
            if narrowed is not None:
                conditions.append(narrowed)
        pattern = namespaces.match_pattern(cond, qb.regexp_end)
        if pattern is not None and tuple(cond.path) != head:
            conditions.append(qb.regexp_match(column, pattern))
    base = select(column).distinct().where(*conditions).order_by(column)
    if plan.max_depth is None:
        rows = conn.execute(base.limit(plan.limit).offset(plan.offset)).scalars()
        return [namespaces.decode(ns) for ns in rows]
    return _truncated(conn, base, column, plan)


def _truncated(
    conn: Connection, base: Select[Any], column: Any, plan: ListPlan
) -> list[tuple[str, ...]]:
    """``list_namespaces`` with ``max_depth``: reads the namespaces in order and skips the
    whole range below each truncated one (one more query per truncated namespace at
    most), so that a million namespaces under ``("users",)`` cost one row at depth 1."""
    assert plan.max_depth is not None
    depth = max(plan.max_depth, 0)
    if depth == 0:  # every namespace truncates to (): one row tells whether any exists
        first = conn.execute(base.limit(1)).first()
        return [()] if first is not None and plan.offset == 0 else []
    out: list[tuple[str, ...]] = []
    last: tuple[str, ...] | None = None
    skipped = 0
    after: tuple[str, bool] | None = None  # (bound, inclusive)
    while len(out) < plan.limit:
        stmt = base
        if after is not None:
            stmt = stmt.where(column >= after[0] if after[1] else column > after[0])
        rows = list(conn.execute(stmt.limit(PAGE)).scalars())
        if not rows:
            break
        jumped = False
        for text in rows:
            ns = namespaces.decode(text)
            short = ns[:depth]
            if short != last:
                last = short
                if skipped < plan.offset:
                    skipped += 1
                else:
                    out.append(short)
                    if len(out) == plan.limit:
                        return out
            if len(ns) > depth:
                # Jump past every namespace below ``short``: they truncate to it too.
                after = (SEPARATOR.join(short) + chr(ord(SEPARATOR) + 1), True)
                jumped = True
                break
            after = (str(text), False)
        if not jumped and len(rows) < PAGE:
            break
    return out
