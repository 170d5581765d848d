"""The store's reads, and :func:`run_batch`, which runs a whole ``batch()`` in one
transaction: its reads first (they see the data as it was before the batch, as
``InMemoryStore``), then their TTL refreshes, then its writes (:func:`._items.put_rows`).

Search pages newest first in the database when the filter is decided there
(:attr:`.filters.Filter.exact`), else reads candidates :data:`._items.PAGE` at a time and
checks each with the filter's predicate. Vector search scores in the database where the
dialect can (``sqlite-vec``), else in batches (:func:`.vectors.cosine_scores`).
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

__all__ = ["GET_CHUNK", "BatchResult", "run_batch"]

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
#: Keys of one namespace read by one statement of a batch's gets: any number of gets
#: runs, in statements of at most this many bound keys (psycopg takes 65,535 parameters
#: a statement, SQLite 32,766).
GET_CHUNK = 500
_NEWEST = (items.c.updated_at.desc(), items.c.namespace.desc(), items.c.key.desc())

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
    put_rows(conn, qb, batch.puts, batch.now)
    return BatchResult(results)


# -- search ---------------------------------------------------------------------------


def _candidates(conn: Connection, qb: QueryBuilder, plan: SearchPlan, now: float) -> list[Any]:
    conditions = [alive(now), *plan.filter.conditions(qb, items.c.value, conn.dialect)]
    prefix = namespaces.under(items.c.namespace, plan.prefix)
    if prefix is not None:
        conditions.append(prefix)
    return conditions


#: Most search statements kept (:func:`_page_statement`); past it, a new filter's
#: statement is built for its call only.
MAX_STATEMENTS = 512
_STATEMENTS: dict[Any, Select[Any]] = {}


def _page_statement(
    conn: Connection, qb: QueryBuilder, plan: SearchPlan, walk: bool
) -> Select[Any] | None:
    """The statement of a search page decided in the database, built once per dialect,
    filter and presence of a prefix (bound parameters ``b_now``, ``b_low``, ``b_high``,
    ``b_limit``, ``b_offset``), so that a repeated search runs its compiled form on the
    driver's cursor (:func:`.._driver.rows`). None past :data:`MAX_STATEMENTS`."""
    equalities = tuple((k, type(v).__name__, v) for k, v in plan.filter.equalities)
    key = (type(qb), qb.compile_key(conn.dialect), equalities, bool(plan.prefix), walk)
    found = _STATEMENTS.get(key)
    if found is not None or len(_STATEMENTS) >= MAX_STATEMENTS:
        return found
    conditions = [_LIVE, *plan.filter.conditions(qb, items.c.value, conn.dialect)]
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
    return stmt


_COUNT_UNDER = select(func.count()).select_from(
    select(items.c.namespace)
    .where(items.c.namespace >= bindparam("b_low"), items.c.namespace < bindparam("b_high"))
    .limit(bindparam("b_limit"))
    .subquery()
)


def _many_under(conn: Connection, qb: QueryBuilder, low: str, high: str) -> bool:
    """Whether the namespaces ``[low, high)`` hold at least :attr:`.QueryBuilder.walk_from`
    items (False when the dialect's planner decides)."""
    if qb.walk_from is None:
        return False
    params = {"b_low": low, "b_high": high, "b_limit": qb.walk_from}
    (count,) = _driver.rows(conn, _COUNT_UNDER, params, qb.compile_key(conn.dialect))[0]
    return int(count) >= qb.walk_from


def _search(conn: Connection, qb: QueryBuilder, plan: SearchPlan, now: float) -> list[Found]:
    if plan.limit <= 0:
        return []
    if plan.query is not None:
        return _vector_search(conn, qb, plan, now)
    if plan.filter.exact:
        low, high = namespaces.bounds(plan.prefix)
        walk = bool(plan.prefix) and _many_under(conn, qb, low, high)
        cached = _page_statement(conn, qb, plan, walk)
        if cached is not None:
            params = {"b_now": now, "b_low": low, "b_high": high}
            params.update(b_limit=plan.limit, b_offset=plan.offset)
            if walk:
                qb.walking(conn, True)
            found = _driver.rows(conn, cached, params, qb.compile_key(conn.dialect))
            return [f for f in (_readable(row) for row in found) if f is not None]
    stmt = select(*_COLUMNS).where(*_candidates(conn, qb, plan, now)).order_by(*_NEWEST)
    if plan.filter.exact:
        rows = conn.execute(stmt.limit(plan.limit).offset(plan.offset)).all()
        return [f for f in (_readable(row) for row in rows) if f is not None]
    return _matching(conn, stmt, plan, plan.offset + plan.limit)[plan.offset :]


def _matching(conn: Connection, stmt: Select[Any], plan: SearchPlan, wanted: int) -> list[Found]:
    """The first ``wanted`` rows of ``stmt`` that the filter's predicate keeps."""
    matched: list[Found] = []
    for row in _pages(conn, stmt):
        found = _readable(row)
        if found is not None and plan.filter.matches(found[0].value):
            matched.append(found)
            if len(matched) == wanted:
                break
    return matched


def _pages(conn: Connection, stmt: Select[Any]) -> Iterable[Any]:
    """The rows of ``stmt`` (ordered), read :data:`PAGE` at a time with ``LIMIT`` and
    ``OFFSET`` in the caller's transaction, so that a caller that stops early reads
    little."""
    offset = 0
    while True:
        rows = conn.execute(stmt.limit(PAGE).offset(offset)).all()
        yield from rows
        if len(rows) < PAGE:
            return
        offset += PAGE


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
    joined = and_(vectors.c.namespace == items.c.namespace, vectors.c.key == items.c.key)
    wanted = plan.offset + plan.limit
    best: dict[tuple[str, str], float] = {}
    similarity = qb.vector_similarity(conn, vectors.c.embedding, plan.query_blob)
    residual = not plan.filter.exact
    if similarity is not None:
        score = func.max(similarity).label("score")
        stmt = (
            select(vectors.c.namespace, vectors.c.key, score)
            .join(items, joined)
            .where(*_candidates(conn, qb, plan, now))
            # Vectors of another size (the index config's dims changed) are skipped, as
            # the batch scorer skips them: sqlite-vec would fail the whole query.
            .where(func.length(vectors.c.embedding) == len(plan.query_blob or b""))
            .group_by(vectors.c.namespace, vectors.c.key)
            .order_by(score.desc(), vectors.c.namespace, vectors.c.key)
        )
        if not residual:
            stmt = stmt.limit(wanted)
        for ns, key, s in conn.execute(stmt):
            best[(str(ns), str(key))] = float(s)
    else:
        assert plan.query is not None
        _score_in_pages(conn, _candidates(conn, qb, plan, now), plan.query, best)
    order: Any = lambda kv: (-kv[1], kv[0])  # noqa: E731  (best score first, ties by key)
    ranked = sorted(best.items(), key=order) if residual else nsmallest(wanted, best.items(), order)
    found = _fetch(conn, [k for k, _ in ranked] if residual else [k for k, _ in ranked[:wanted]])
    out: list[Found] = []
    for k, s in ranked:
        row = found.get(k)
        if row is None:
            continue
        hit = _readable(row, s)
        if hit is not None and plan.filter.matches(hit[0].value):
            out.append(hit)
            if len(out) == wanted:
                break
    scored = len(out)  # every scored match when fewer than ``wanted``
    out = out[plan.offset :]
    if len(out) < plan.limit:
        # The items without vectors follow the scored ones, newest first; ``offset``
        # counts across both, so that pages join up.
        skip = max(0, plan.offset - scored)
        has_vector = exists().where(joined)
        stmt3 = (
            select(*_COLUMNS)
            .where(*_candidates(conn, qb, plan, now), not_(has_vector))
            .order_by(*_NEWEST)
        )
        out.extend(_matching(conn, stmt3, plan, skip + plan.limit - len(out))[skip:])
    return out


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
