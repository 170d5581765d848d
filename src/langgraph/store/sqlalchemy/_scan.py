"""The candidates of a store search: their conditions, read a page at a time newest
first (each page after the last row of the one before), decoded; and the ranking of a
vector search.

A vector search scores in the database where the dialect can (``sqlite-vec``), else in
batches (:func:`.vectors.vector_scores`), by the index config's ``distance_type``. With a
filter decided in the database it scores every candidate and reads the best; with a
filter checked in Python it reads the candidates with vectors a page at a time, checks
each value, and scores only the matches, keeping the best ``offset + limit``: memory
holds a page and the results.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from heapq import nsmallest
from typing import Any

from langgraph.store.base import SearchItem

from langgraph.checkpoint.sqlalchemy._engine import cursor
from langgraph.checkpoint.sqlalchemy.dialects import QueryBuilder
from langgraph.checkpoint.sqlalchemy.errors import StoreDecodeError
from langgraph.checkpoint.sqlalchemy.schema import read_json
from langgraph.store.sqlalchemy import namespaces
from langgraph.store.sqlalchemy._shapes import PAGE, SearchPlan, alive, search_item_of
from langgraph.store.sqlalchemy.tables import items, vectors
from langgraph.store.sqlalchemy.vectors import Distance, vector_scores
from sqlalchemy import Connection, Select, and_, bindparam, exists, func, not_, select

__all__ = [
    "COLUMNS",
    "FEW_FOR",
    "MANY_FOR",
    "NEWEST",
    "VECTOR_PAGE",
    "Found",
    "Named",
    "best_scores",
    "candidates",
    "many_under",
    "matching",
    "readable",
    "vector_search",
]

log = logging.getLogger("langgraph.store.sqlalchemy")

#: The columns of a search's rows (an item and its TTL).
COLUMNS = (
    items.c.namespace,
    items.c.key,
    read_json(items.c.value),
    items.c.created_at,
    items.c.updated_at,
    items.c.ttl_minutes,
)
_ORDER = (items.c.updated_at, items.c.namespace, items.c.key)
#: Search order: newest first, ties by primary key (also descending: one index walk).
NEWEST = tuple(column.desc() for column in _ORDER)

Found = tuple[SearchItem, Any]
"""A search result and its row (whose ``ttl_minutes`` says whether a read refreshes it)."""


class Named:
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


def candidates(
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


_COUNT_UNDER = select(func.count()).select_from(
    select(items.c.namespace)
    .where(*namespaces.bound_range(items.c.namespace))
    .limit(bindparam("b_limit"))
    .subquery()
)


_COUNT_ALL = select(func.count()).select_from(
    select(items.c.namespace).limit(bindparam("b_limit")).subquery()
)

#: Seconds a prefix found to hold many items, or few, is believed to
#: (:func:`many_under`): a prefix grows or shrinks slowly, and either answer only picks
#: the plan, never what a search finds. The count stops at ``walk_from`` entries of the
#: prefix's range, except on PostgreSQL without statistics, which guesses a few rows
#: and reads the whole range through a bitmap (100,000 entries in 9 ms for
#: ``("memories",)``): once in ``MANY_FOR`` seconds, not at every search. (Counted
#: from the low bound only, in index order, the count stops there too, but reads
#: ``walk_from`` entries past a small prefix, or sorts a small table: 1.4 to 6.7 ms for
#: one user's 100 items, which are counted far more often.)
MANY_FOR = 300.0
FEW_FOR = 10.0


def many_under(conn: Connection, qb: QueryBuilder, plan: SearchPlan) -> bool:
    """Whether the namespaces under ``plan.prefix`` (empty: all) hold at least
    :attr:`.QueryBuilder.walk_from` items (False when the dialect's planner decides),
    remembered in ``plan.sizes`` for :data:`MANY_FOR` or :data:`FEW_FOR` seconds: a
    search of a known prefix runs no count."""
    if qb.walk_from is None:
        return False
    now = time.monotonic()
    known = plan.sizes.get(plan.prefix)
    if known is not None and now - known[1] < (MANY_FOR if known[0] else FEW_FOR):
        return known[0]
    params: dict[str, Any] = {"b_limit": qb.walk_from}
    stmt = _COUNT_ALL
    if plan.prefix:
        low, high = namespaces.bounds(plan.prefix)
        params.update(b_low=low, b_high=high)
        stmt = _COUNT_UNDER
    (count,) = cursor.rows(conn, stmt, params, qb.compile_key(conn.dialect))[0]
    many = int(count) >= qb.walk_from
    if len(plan.sizes) >= 4096:
        plan.sizes.clear()
    plan.sizes[plan.prefix] = (many, now)
    return many


def matching(
    conn: Connection, qb: QueryBuilder, stmt: Select[Any], plan: SearchPlan, wanted: int
) -> list[Found]:
    """The first ``wanted`` rows of ``stmt`` (newest first) that the filter's predicate
    keeps."""
    matched: list[Found] = []
    for rows in _pages(conn, qb, stmt):
        for row in rows:
            found = readable(row)
            if found is not None and plan.filter.matches(found[0].value):
                matched.append(found)
                if len(matched) == wanted:
                    return matched
    return matched


def _pages(conn: Connection, qb: QueryBuilder, stmt: Select[Any]) -> Iterable[list[Any]]:
    """The rows of ``stmt`` (of :data:`COLUMNS`, ordered by :data:`NEWEST`), read
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


def readable(row: Any, score: float | None = None) -> Found | None:
    """The search result of a row, or None (logged) when its value cannot be read."""
    try:
        return search_item_of(row, score), row
    except StoreDecodeError as e:
        log.warning("search skips an item: %s", e)
        return None


def vector_search(
    conn: Connection,
    qb: QueryBuilder,
    plan: SearchPlan,
    now: float,
    ranked: Callable[[Connection, QueryBuilder, SearchPlan, float, int], list[Found]] | None = None,
) -> list[Found]:
    """Items ranked by their best field's score against the query (by the index config's
    distance: :mod:`.vectors`), by ``ranked`` when given (the database's own vector
    search), else scored here; the items that match but have no vector follow
    (``InMemoryStore``'s order), up to ``limit``."""
    wanted = plan.offset + plan.limit
    if ranked is not None:
        out = ranked(conn, qb, plan, now, wanted)
    elif plan.filter.exact:
        out = _ranked(conn, qb, plan, now, wanted)
    else:
        out = _ranked_in_pages(conn, qb, plan, now, wanted)
    scored = len(out)  # every scored match when fewer than ``wanted``
    seen = {(found[0].namespace, found[0].key) for found in out}
    out = out[plan.offset :]
    if len(out) < plan.limit:
        # The items without vectors follow the scored ones, newest first; ``offset``
        # counts across both, so that pages join up.
        skip = max(0, plan.offset - scored)
        stmt3 = (
            select(*COLUMNS)
            .where(*candidates(conn, qb, plan, now), not_(exists().where(_JOINED)))
            .order_by(*NEWEST)
        )
        more = matching(conn, qb, stmt3, plan, skip + plan.limit - len(out) + len(seen))
        # Outside a transaction (a lone search by the database), an item whose vectors
        # a concurrent put removed since the first statement must not come twice.
        more = [found for found in more if (found[0].namespace, found[0].key) not in seen]
        out.extend(more[skip : skip + plan.limit - len(out)])
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
    similarity = qb.vector_similarity(conn, vectors.c.embedding, plan.query_blob, plan.distance)
    if similarity is not None:
        score = func.max(similarity).label("score")
        stmt = (
            select(vectors.c.namespace, vectors.c.key, score)
            .join(items, _JOINED)
            .where(*candidates(conn, qb, plan, now))
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
        _score_in_pages(conn, candidates(conn, qb, plan, now), plan.query, plan.distance, best)
    ranked = nsmallest(wanted, best.items(), _by_score)
    found = _fetch(conn, [k for k, _ in ranked])
    out: list[Found] = []
    for k, s in ranked:
        row = found.get(k)
        hit = None if row is None else readable(row, s)
        if hit is not None and plan.filter.matches(hit[0].value):
            out.append(hit)
    return out


def _ranked_in_pages(
    conn: Connection, qb: QueryBuilder, plan: SearchPlan, now: float, wanted: int
) -> list[Found]:
    """The ``wanted`` best scored items of a filter checked in Python: the candidates
    with vectors read :data:`PAGE` at a time (:func:`_pages`), each page's values checked
    first, then only the matches' vectors scored (:func:`best_scores`); the best
    ``wanted`` kept. Memory: a page and ``wanted`` rows, whatever the candidates."""
    walk = many_under(conn, qb, plan)
    qb.walking(conn, walk)
    stmt = (
        select(*COLUMNS)
        .where(*candidates(conn, qb, plan, now, walk), exists().where(_JOINED))
        .order_by(*NEWEST)
    )
    kept: list[tuple[tuple[str, str], float, Any]] = []
    for rows in _pages(conn, qb, stmt):
        matches = {}
        for row in rows:
            found = readable(row)
            if found is not None and plan.filter.matches(found[0].value):
                matches[(str(row[0]), str(row[1]))] = row
        if not matches:
            continue
        scores = best_scores(conn, qb, plan, list(matches))
        kept.extend((k, s, matches[k]) for k, s in scores.items())
        kept = nsmallest(wanted, kept, key=lambda e: _by_score((e[0], e[1])))
    # Read once already: readable.
    return [f for f in (readable(row, s) for _, s, row in kept) if f is not None]


def best_scores(
    conn: Connection, qb: QueryBuilder, plan: SearchPlan, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], float]:
    """The best score of each item of ``keys`` that has a vector of the query's size:
    in the database where the dialect can, else its vectors read and scored in a batch
    (:func:`.vectors.vector_scores`)."""
    best: dict[tuple[str, str], float] = {}
    size = len(plan.query_blob or b"")
    similarity = qb.vector_similarity(conn, vectors.c.embedding, plan.query_blob, plan.distance)
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
        scores = vector_scores(plan.query, [bytes(r[2]) for r in rows], plan.distance)
        for r, score in zip(rows, scores, strict=True):
            k = (str(r[0]), str(r[1]))
            if score > best.get(k, float("-inf")):
                best[k] = score
    return best


#: Vectors scored at once by the exact search (5,000 of 1,536 dimensions: 30 MB).
VECTOR_PAGE = 5000


def _score_in_pages(
    conn: Connection,
    conditions: list[Any],
    query: Sequence[float],
    distance: Distance,
    best: dict[Any, float],
) -> None:
    """Score every vector of the candidate items against ``query`` (by ``distance``),
    keeping each item's best score in ``best``: one statement (one round trip; a
    server-side cursor cost PostgreSQL a round trip a page), scored :data:`VECTOR_PAGE`
    vectors at a time (:func:`.vectors.vector_scores`)."""
    joined = and_(vectors.c.namespace == items.c.namespace, vectors.c.key == items.c.key)
    stmt = (
        select(vectors.c.namespace, vectors.c.key, vectors.c.embedding)
        .join(items, joined)
        .where(*conditions)
    )
    size = 4 * len(query)
    for rows in conn.execute(stmt).partitions(VECTOR_PAGE):
        usable = [r for r in rows if r[2] is not None and len(r[2]) == size]
        scores = vector_scores(query, [bytes(r[2]) for r in usable], distance)
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
            stmt = select(*COLUMNS).where(
                items.c.namespace == ns, items.c.key.in_(ks[start : start + PAGE])
            )
            for row in conn.execute(stmt):
                out[(str(row[0]), str(row[1]))] = row
    return out
