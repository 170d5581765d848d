"""The store's writes and the shapes its operations share, each operation a sync function
on a SQLAlchemy ``Connection`` (the reads are in :mod:`._reads`).

The store's sync methods run them on its sync engine, its async methods through the
async door (``AsyncConnection.run_sync``, or a worker thread on SQLite): one
implementation, two doors (:class:`~langgraph.checkpoint.sqlalchemy._loops.Runner`).
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
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import Item, MatchCondition, SearchItem

from sqlalchemy import Connection, delete, func, or_, select

from ..dialects import QueryBuilder
from ..errors import StoreDecodeError
from . import namespaces
from .filters import Filter
from .tables import items, vectors

__all__ = [
    "PAGE",
    "Batch",
    "GetPlan",
    "ListPlan",
    "PutRow",
    "SearchPlan",
    "StoreStats",
    "alive",
    "delete_expired",
    "item_of",
    "put_rows",
    "search_item_of",
    "stats",
]

log = logging.getLogger("langgraph.store.sqlalchemy")

#: Rows read a round trip while a filter the database cannot decide alone, or a
#: vector search, goes through the candidates.
PAGE = 500


@dataclass(frozen=True)
class PutRow:
    """One item to write (``value`` None: delete it).

    Attributes:
        namespace: Stored namespace text.
        key: The key.
        value: The canonical JSON value, or None to delete.
        expires_at: Seconds since the epoch, or None.
        ttl_minutes: The item's TTL, or None.
        vectors: ``(field, packed embedding)`` pairs that replace the item's vectors.
        created_at: For copies: the creation time to keep (else the write's clock).
        updated_at: For copies: the update time to keep.
    """

    namespace: str
    key: str
    value: dict[str, Any] | None
    expires_at: float | None = None
    ttl_minutes: float | None = None
    vectors: Sequence[tuple[str, bytes]] = ()
    created_at: float | None = None
    updated_at: float | None = None


@dataclass(frozen=True)
class GetPlan:
    """A ``GetOp``: namespace text, key, whether to refresh its TTL."""

    namespace: str
    key: str
    refresh: bool


@dataclass(frozen=True)
class SearchPlan:
    """A ``SearchOp`` checked: prefix text, filter, paging, the query's embedding."""

    prefix: str
    filter: Filter
    limit: int
    offset: int
    refresh: bool
    text: str | None = None
    query: Sequence[float] | None = None
    query_blob: bytes | None = None


@dataclass(frozen=True)
class ListPlan:
    """A ``ListNamespacesOp`` checked: its conditions and paging."""

    conditions: tuple[MatchCondition, ...]
    max_depth: int | None
    limit: int
    offset: int


@dataclass
class Batch:
    """A ``batch()`` ready for the database: ``reads`` as ``(result index, plan)``."""

    now: float
    reads: list[tuple[int, GetPlan | SearchPlan | ListPlan]] = field(default_factory=list)
    puts: list[PutRow] = field(default_factory=list)

    @property
    def writes(self) -> bool:
        """Whether the batch writes (puts, deletes or TTL refreshes)."""
        return bool(self.puts) or any(getattr(plan, "refresh", False) for _, plan in self.reads)


@dataclass(frozen=True)
class StoreStats:
    """What a store holds.

    Attributes:
        items: Items not expired.
        namespaces: Distinct namespaces of those items.
        vectors: Stored embeddings (one per embedded field of an item).
        expired: Expired items a sweep would delete.
    """

    items: int
    namespaces: int
    vectors: int
    expired: int


def _when(seconds: float) -> datetime:
    return datetime.fromtimestamp(float(seconds), tz=timezone.utc)


def alive(now: float) -> Any:
    return or_(items.c.expires_at.is_(None), items.c.expires_at > now)


def _value(row: Any) -> dict[str, Any]:
    value = row[2]
    ns = namespaces.decode(row[0])
    if not isinstance(value, dict):
        cause = getattr(value, "error", None) or f"a JSON {type(value).__name__}, not an object"
        raise StoreDecodeError(ns, str(row[1]), cause)
    return value


def item_of(row: Any) -> Item:
    return Item(
        value=_value(row),
        key=str(row[1]),
        namespace=namespaces.decode(row[0]),
        created_at=_when(row[3]),
        updated_at=_when(row[4]),
    )


def search_item_of(row: Any, score: float | None = None) -> SearchItem:
    return SearchItem(
        namespace=namespaces.decode(row[0]),
        key=str(row[1]),
        value=_value(row),
        created_at=_when(row[3]),
        updated_at=_when(row[4]),
        score=score,
    )


def put_rows(conn: Connection, qb: QueryBuilder, rows: Sequence[PutRow], now: float) -> None:
    """Write items: upsert the values (``created_at`` kept on an update), delete the
    items whose value is None, and replace the vectors of every item written.

    Args:
        conn: A connection in a write transaction.
        qb: The dialect's query builder (its upsert).
        rows: The items, at most one per ``(namespace, key)``.
        now: The write's clock, seconds since the epoch.
    """
    by_ns: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        by_ns[row.namespace].append(row.key)
    for ns, keys in by_ns.items():
        conn.execute(delete(vectors).where(vectors.c.namespace == ns, vectors.c.key.in_(keys)))
    gone = [row for row in rows if row.value is None]
    kept = [row for row in rows if row.value is not None]
    for ns, keys in _grouped(gone).items():
        conn.execute(delete(items).where(items.c.namespace == ns, items.c.key.in_(keys)))
    if kept:
        stmt = qb.upsert(items, ["value", "updated_at", "expires_at", "ttl_minutes"])
        conn.execute(
            stmt,
            [
                {
                    "namespace": row.namespace,
                    "key": row.key,
                    "value": row.value,
                    "created_at": now if row.created_at is None else row.created_at,
                    "updated_at": now if row.updated_at is None else row.updated_at,
                    "expires_at": row.expires_at,
                    "ttl_minutes": row.ttl_minutes,
                }
                for row in kept
            ],
        )
    new_vectors = [
        {"namespace": row.namespace, "key": row.key, "field": name, "embedding": blob}
        for row in kept
        for name, blob in row.vectors
    ]
    if new_vectors:
        conn.execute(qb.upsert(vectors, ["embedding"]), new_vectors)


def _grouped(rows: Iterable[PutRow]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        out[row.namespace].append(row.key)
    return out


# -- TTL and statistics ---------------------------------------------------------------


def delete_expired(conn: Connection, now: float) -> int:
    """Delete the items whose ``expires_at`` has passed, and their vectors.

    Returns:
        The number of items deleted.
    """
    expired = select(items.c.namespace, items.c.key).where(items.c.expires_at <= now)
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
