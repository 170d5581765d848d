"""The store's reads, and :func:`run_batch`, which runs a whole ``batch()`` in one
transaction: its reads first (they see the data as it was before the batch, as
``InMemoryStore``), then their TTL refreshes, then its writes (:func:`._items.put_rows`).

Search pages newest first in the database when the filter is decided there
(:attr:`.filters.Filter.exact`; one cached statement a filter shape, the values bound),
else reads candidates :data:`._items.PAGE` at a time, each page after the last row of
the one before, and checks each with the filter's predicate. Vector search scores in
the database where the dialect can (``sqlite-vec``), else in batches
(:func:`.vectors.cosine_scores`); with a filter checked in Python it reads the
candidates a page at a time and scores only the matches.
``list_namespaces`` pages distinct namespaces in the database; with ``max_depth`` it
jumps over the range below each truncated namespace.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from heapq import nsmallest
from typing import Any

from langgraph.store.base import SearchItem

from sqlalchemy import Connection, Select, and_, bindparam, exists, func, not_, select

from .. import _driver
from ..dialects import QueryBuilder
from ..errors import StoreDecodeError
from ..schema import read_json
from . import namespaces
from ._items import (
    PAGE,
    Batch,
    GetPlan,
    ListPlan,
    SearchPlan,
    alive,
    item_of,
    put_rows,
    refresh_ttl,
    search_item_of,
)
from .tables import SEPARATOR, items, vectors
from .vectors import cosine_scores

__all__ = ["BatchResult", "run_batch"]

log = logging.getLogger("langgraph.store.sqlalchemy")

_COLUMNS = (
    items.c.namespace,
    items.c.key,
    read_json(items.c.value),
    items.c.created_at,
    items.c.updated_at,
    items.c.ttl_minutes,
)
_LIVE = alive(bindparam("b_now"))
#: One item (a ``get``), built once: its compiled form is cached.
_GET = select(*_COLUMNS).where(
    items.c.namespace == bindparam("b_ns"), items.c.key == bindparam("b_key"), _LIVE
)
_GET_MANY = select(*_COLUMNS).where(
    items.c.namespace == bindparam("b_ns"),
    items.c.key.in_(bindparam("b_keys", expanding=True)),
    _LIVE,
)
_ORDER = (items.c.updated_at, items.c.namespace, items.c.key)
#: Search order: newest first, ties by primary key (also descending: one index walk).
_NEWEST = tuple(column.desc() for column in _ORDER)

Found = tuple[SearchItem, Any]
"""A search result and its row (whose ``ttl_minutes`` says whether a read refreshes it)."""


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
            rows = _driver.rows(conn, _GET, params, qb.compile_key(conn.dialect))
        else:
            keys = sorted({plan.key for _, plan in wanted})
            rows = conn.execute(_GET_MANY, {"b_ns": ns, "b_keys": keys, "b_now": batch.now}).all()
        by_key = {str(row[1]): row for row in rows}
        for i, plan in wanted:
            row = by_key.get(plan.key)
            results[i] = item_of(row) if row is not None else None
            if row is not None and plan.refresh and row[5] is not None:
                refresh.append((ns, plan.key))
    if not batch.puts:
        return BatchResult(results, refresh)
    refresh_ttl(conn, refresh, batch.now)
    put_rows(conn, qb, batch.puts, batch.now)
    return BatchResult(results)


# -- search ---------------------------------------------------------------------------


def _candidates(
    conn: Connection, qb: QueryBuilder, plan: SearchPlan, now: float, walk: bool = False
) -> list[Any]:
    """The conditions of the items a search considers: alive, the filter's SQL part, under
    the prefix (checked in each entry of the ``updated_at`` index when ``walk``)."""
    conditions = [alive(now), *plan.filter.conditions(qb, items.c.value, conn.dialect)]
    column: Any = qb.walk_column(items.c.namespace) if walk else items.c.namespace
    prefix = namespaces.under(column, plan.prefix)
    if prefix is not None:
        conditions.append(prefix)
    return conditions


#: Most search statements kept (:func:`_page_statement`), one per dialect, filter shape
#: (keys and types of their values), prefix presence and walk; past it, a new shape's
#: statement is built for its call only.
MAX_STATEMENTS = 512
_STATEMENTS: dict[Any, Select[Any]] = {}


class _Named:
    """The :data:`..dialects.Binder` of a cached search statement: the filter values'
    parameters named by position (``b_f0``, ``b_f1``, ...), their values kept in
    :attr:`params`. The same filter shape makes the same names, so one statement serves
    every value."""

    def __init__(self) -> None:
        self.params: dict[str, Any] = {}

    def __call__(self, value: Any, type_: Any) -> Any:
        name = f"b_f{len(self.params)}"
        self.params[name] = value
        return bindparam(name, value, type_=type_)


def _page_statement(
    conn: Connection, qb: QueryBuilder, plan: SearchPlan, walk: bool
) -> tuple[Select[Any] | None, dict[str, Any]]:
    """The statement of a search page decided in the database, built once per dialect,
    filter shape (:attr:`.filters.Filter.shape`) and presence of a prefix (bound
    parameters ``b_now``, ``b_low``, ``b_high``, ``b_limit``, ``b_offset`` and the filter
    values' ``b_f0``, ``b_f1``, ...), so that a repeated search runs its compiled form on
    the driver's cursor (:func:`.._driver.rows`); and the filter values' parameters.
    None past :data:`MAX_STATEMENTS`."""
    named = _Named()
    # Built for every call (a few constructs), for the values' parameters.
    conditions = [_LIVE, *plan.filter.conditions(qb, items.c.value, conn.dialect, named)]
    key = (type(qb), qb.compile_key(conn.dialect), plan.filter.shape, bool(plan.prefix), walk)
    found = _STATEMENTS.get(key)
    if found is not None or len(_STATEMENTS) >= MAX_STATEMENTS:
        return found, named.params
    if plan.prefix:
        # Walking the updated_at index: the namespace is checked in each entry, not
        # used to pick the primary key's range (an expression no index serves).
        column: Any = qb.walk_column(items.c.namespace) if walk else items.c.namespace
        conditions += [column >= bindparam("b_low"), column < bindparam("b_high")]
    stmt = (
        select(*_COLUMNS)
        .where(*conditions)
        .order_by(*_NEWEST)
        .limit(bindparam("b_limit"))
        .offset(bindparam("b_offset"))
    )
    _STATEMENTS[key] = stmt
    return stmt, named.params


_COUNT_UNDER = select(func.count()).select_from(
    select(items.c.namespace)
    .where(items.c.namespace >= bindparam("b_low"), items.c.namespace < bindparam("b_high"))
    .limit(bindparam("b_limit"))
    .subquery()
)


_COUNT_ALL = select(func.count()).select_from(
    select(items.c.namespace).limit(bindparam("b_limit")).subquery()
)


def _many_under(conn: Connection, qb: QueryBuilder, prefix: str) -> bool:
    """Whether the namespaces under ``prefix`` (stored text; empty: all) hold at least
    :attr:`.QueryBuilder.walk_from` items (False when the dialect's planner decides)."""
    if qb.walk_from is None:
        return False
    params: dict[str, Any] = {"b_limit": qb.walk_from}
    stmt = _COUNT_ALL
    if prefix:
        low, high = namespaces.bounds(prefix)
        params.update(b_low=low, b_high=high)
        stmt = _COUNT_UNDER
    (count,) = _driver.rows(conn, stmt, params, qb.compile_key(conn.dialect))[0]
    return int(count) >= qb.walk_from


def _search(conn: Connection, qb: QueryBuilder, plan: SearchPlan, now: float) -> list[Found]:
    if plan.limit <= 0:
        return []
    if plan.query is not None:
        return _vector_search(conn, qb, plan, now)
    if plan.filter.exact:
        low, high = namespaces.bounds(plan.prefix)
        walk = bool(plan.prefix) and _many_under(conn, qb, plan.prefix)
        cached, params = _page_statement(conn, qb, plan, walk)
        if cached is not None:
            params.update(b_now=now, b_low=low, b_high=high)
            params.update(b_limit=plan.limit, b_offset=plan.offset)
            if walk:
                qb.walking(conn, True)
            found = _driver.rows(conn, cached, params, qb.compile_key(conn.dialect))
            return [f for f in (_readable(row) for row in found) if f is not None]
    walk = False
    if not plan.filter.exact:
        # Every candidate may be read, a page at a time (:func:`_pages`): walking the
        # updated_at index from each page's last entry reads each once, where a scan of
        # the candidates (the prefix's range of the primary key) was sorted again a page.
        walk = _many_under(conn, qb, plan.prefix)
        if walk:
            qb.walking(conn, True)
    stmt = select(*_COLUMNS).where(*_candidates(conn, qb, plan, now, walk)).order_by(*_NEWEST)
    if plan.filter.exact:
        rows = conn.execute(stmt.limit(plan.limit).offset(plan.offset)).all()
        return [f for f in (_readable(row) for row in rows) if f is not None]
    return _matching(conn, qb, stmt, plan, plan.offset + plan.limit)[plan.offset :]


def _matching(
    conn: Connection, qb: QueryBuilder, stmt: Select[Any], plan: SearchPlan, wanted: int
) -> list[Found]:
    """The first ``wanted`` rows of ``stmt`` (newest first) that the filter's predicate
    keeps."""
    matched: list[Found] = []
    for rows in _pages(conn, qb, stmt):
        for row in rows:
            found = _readable(row)
            if found is not None and plan.filter.matches(found[0].value):
                matched.append(found)
                if len(matched) == wanted:
                    return matched
    return matched


def _pages(conn: Connection, qb: QueryBuilder, stmt: Select[Any]) -> Iterable[list[Any]]:
    """The rows of ``stmt`` (of :data:`_COLUMNS`, ordered by :data:`_NEWEST`), read
    :data:`PAGE` at a time in the caller's transaction, so that a caller that stops
    early reads little. A page starts after the last row of the one before
    (:meth:`.QueryBuilder.rows_before` on the order's columns, which end with the
    primary key: no row twice or missed when many share an ``updated_at``): a range
    seek, where ``OFFSET`` read and dropped every row before it again."""
    page = stmt
    while True:
        rows = list(conn.execute(page.limit(PAGE)).all())
        if rows:
            yield rows
        if len(rows) < PAGE:
            return
        last = rows[-1]
        page = stmt.where(qb.rows_before(_ORDER, (last[4], last[0], last[1])))


def _readable(row: Any, score: float | None = None) -> Found | None:
    """The search result of a row, or None (logged) when its value cannot be read."""
    try:
        return search_item_of(row, score), row
    except StoreDecodeError as e:
        log.warning("search skips an item: %s", e)
        return None


def _vector_search(conn: Connection, qb: QueryBuilder, plan: SearchPlan, now: float) -> list[Found]:
    """Items ranked by their best field's cosine similarity with the query; the items
    that match but have no vector follow (``InMemoryStore``'s order), up to ``limit``."""
    wanted = plan.offset + plan.limit
    if plan.filter.exact:
        out = _ranked(conn, qb, plan, now, wanted)
    else:
        out = _ranked_in_pages(conn, qb, plan, now, wanted)
    scored = len(out)  # every scored match when fewer than ``wanted``
    out = out[plan.offset :]
    if len(out) < plan.limit:
        # The items without vectors follow the scored ones, newest first; ``offset``
        # counts across both, so that pages join up.
        skip = max(0, plan.offset - scored)
        stmt3 = (
            select(*_COLUMNS)
            .where(*_candidates(conn, qb, plan, now), not_(exists().where(_JOINED)))
            .order_by(*_NEWEST)
        )
        out.extend(_matching(conn, qb, stmt3, plan, skip + plan.limit - len(out))[skip:])
    return out


_JOINED = and_(vectors.c.namespace == items.c.namespace, vectors.c.key == items.c.key)


def _by_score(entry: tuple[tuple[str, str], float]) -> tuple[float, tuple[str, str]]:
    """Rank of a ``((namespace, key), score)``: best score first, ties by key."""
    return -entry[1], entry[0]


def _ranked(
    conn: Connection, qb: QueryBuilder, plan: SearchPlan, now: float, wanted: int
) -> list[Found]:
    """The ``wanted`` best scored items of a filter decided in the database: scores of
    every candidate's vectors (in the database, or in batches), then those items read."""
    best: dict[tuple[str, str], float] = {}
    similarity = qb.vector_similarity(conn, vectors.c.embedding, plan.query_blob)
    if similarity is not None:
        score = func.max(similarity).label("score")
        stmt = (
            select(vectors.c.namespace, vectors.c.key, score)
            .join(items, _JOINED)
            .where(*_candidates(conn, qb, plan, now))
            # Vectors of another size (the index config's dims changed) are skipped, as
            # the batch scorer skips them: sqlite-vec would fail the whole query.
            .where(func.length(vectors.c.embedding) == len(plan.query_blob or b""))
            .group_by(vectors.c.namespace, vectors.c.key)
            .order_by(score.desc(), vectors.c.namespace, vectors.c.key)
            .limit(wanted)
        )
        for ns, key, s in conn.execute(stmt):
            best[(str(ns), str(key))] = float(s)
    else:
        assert plan.query is not None
        _score_in_pages(conn, _candidates(conn, qb, plan, now), plan.query, best)
    ranked = nsmallest(wanted, best.items(), _by_score)
    found = _fetch(conn, [k for k, _ in ranked])
    out: list[Found] = []
    for k, s in ranked:
        row = found.get(k)
        hit = None if row is None else _readable(row, s)
        if hit is not None and plan.filter.matches(hit[0].value):
            out.append(hit)
    return out


def _ranked_in_pages(
    conn: Connection, qb: QueryBuilder, plan: SearchPlan, now: float, wanted: int
) -> list[Found]:
    """The ``wanted`` best scored items of a filter checked in Python: the candidates
    with vectors read :data:`PAGE` at a time (:func:`_pages`), each page's values checked
    first, then only the matches' vectors scored (:func:`_best_scores`); the best
    ``wanted`` kept. Memory: a page and ``wanted`` rows, whatever the candidates."""
    walk = _many_under(conn, qb, plan.prefix)
    if walk:
        qb.walking(conn, True)
    stmt = (
        select(*_COLUMNS)
        .where(*_candidates(conn, qb, plan, now, walk), exists().where(_JOINED))
        .order_by(*_NEWEST)
    )
    kept: list[tuple[tuple[str, str], float, Any]] = []
    for rows in _pages(conn, qb, stmt):
        matches = {}
        for row in rows:
            found = _readable(row)
            if found is not None and plan.filter.matches(found[0].value):
                matches[(str(row[0]), str(row[1]))] = row
        if not matches:
            continue
        scores = _best_scores(conn, qb, plan, list(matches))
        kept.extend((k, s, matches[k]) for k, s in scores.items())
        kept = nsmallest(wanted, kept, key=lambda e: _by_score((e[0], e[1])))
    # Read once already: readable.
    return [f for f in (_readable(row, s) for _, s, row in kept) if f is not None]


def _best_scores(
    conn: Connection, qb: QueryBuilder, plan: SearchPlan, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], float]:
    """The best score of each item of ``keys`` that has a vector of the query's size:
    in the database where the dialect can, else its vectors read and scored in a batch
    (:func:`.vectors.cosine_scores`)."""
    best: dict[tuple[str, str], float] = {}
    size = len(plan.query_blob or b"")
    similarity = qb.vector_similarity(conn, vectors.c.embedding, plan.query_blob)
    step = max(1, qb.in_list_chunk)
    for start in range(0, len(keys), step):
        chunk = keys[start : start + step]
        among = qb.keys_in((vectors.c.namespace, vectors.c.key), len(chunk))
        params = qb.keys_params(chunk)
        if similarity is not None:
            stmt = (
                select(vectors.c.namespace, vectors.c.key, func.max(similarity))
                .where(among, func.length(vectors.c.embedding) == size)
                .group_by(vectors.c.namespace, vectors.c.key)
            )
            for ns, key, s in conn.execute(stmt, params):
                best[(str(ns), str(key))] = float(s)
            continue
        assert plan.query is not None
        stmt = select(vectors.c.namespace, vectors.c.key, vectors.c.embedding).where(among)
        width = 4 * len(plan.query)  # float32 values, as the batch scorer reads them
        rows = [r for r in conn.execute(stmt, params) if r[2] is not None and len(r[2]) == width]
        scores = cosine_scores(plan.query, [bytes(r[2]) for r in rows])
        for r, score in zip(rows, scores, strict=True):
            k = (str(r[0]), str(r[1]))
            if score > best.get(k, float("-inf")):
                best[k] = score
    return best


#: Vectors scored at once by the exact search (5,000 of 1,536 dimensions: 30 MB).
VECTOR_PAGE = 5000


def _score_in_pages(
    conn: Connection, conditions: list[Any], query: Sequence[float], best: dict[Any, float]
) -> None:
    """Score every vector of the candidate items against ``query`` (cosine), keeping each
    item's best score in ``best``: one statement (one round trip; a server-side cursor
    cost PostgreSQL a round trip a page), scored :data:`VECTOR_PAGE` vectors at a time
    (:func:`.vectors.cosine_scores`)."""
    joined = and_(vectors.c.namespace == items.c.namespace, vectors.c.key == items.c.key)
    stmt = (
        select(vectors.c.namespace, vectors.c.key, vectors.c.embedding)
        .join(items, joined)
        .where(*conditions)
    )
    size = 4 * len(query)
    for rows in conn.execute(stmt).partitions(VECTOR_PAGE):
        usable = [r for r in rows if r[2] is not None and len(r[2]) == size]
        scores = cosine_scores(query, [bytes(r[2]) for r in usable])
        for r, score in zip(usable, scores, strict=True):
            k = (str(r[0]), str(r[1]))
            if score > best.get(k, float("-inf")):
                best[k] = score


def _fetch(conn: Connection, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Any]:
    """The item rows of ``keys``, by key."""
    by_ns: dict[str, list[str]] = defaultdict(list)
    for ns, key in keys:
        by_ns[ns].append(key)
    out: dict[tuple[str, str], Any] = {}
    for ns, ks in by_ns.items():
        for start in range(0, len(ks), PAGE):
            stmt = select(*_COLUMNS).where(
                items.c.namespace == ns, items.c.key.in_(ks[start : start + PAGE])
            )
            for row in conn.execute(stmt):
                out[(str(row[0]), str(row[1]))] = row
    return out


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
